"""Whether a part that does not load is optional (the extra it needs is not installed) or broken.

A core install lacks the extras (``openai``, ``nli``, ``otel`` ...), so their parts cannot load there; that is
expected, not a fault. A part is broken when it fails although its extra is installed, when it names no extra,
or when what is missing is its own code.
"""

from __future__ import annotations

import re
from importlib import metadata
from typing import Any

from hallumeasure.registry.parts import Part

#: The distribution whose extras the parts name (``pip install 'hallumeasure[<extra>]'``).
DISTRIBUTION = "hallumeasure"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def extra_installed(extra: str) -> bool | None:
    """Whether every package the extra requires is installed; None when the extra is not declared (or the
    distribution's metadata cannot be read)."""
    try:
        requirements = metadata.requires(DISTRIBUTION) or []
    except metadata.PackageNotFoundError:
        return None
    wanted = _normal(extra)
    names = []
    for requirement in requirements:
        _, _, marker = requirement.partition(";")
        extras = re.findall(r"""extra\s*==\s*["']([^"']+)["']""", marker)
        found = _NAME.match(requirement.strip())
        if found and any(_normal(e) == wanted for e in extras):
            names.append(found.group(0))
    if not names:
        return None
    return all(_installed(name) for name in names)


def _installed(name: str) -> bool:
    try:
        metadata.version(name)
    except metadata.PackageNotFoundError:
        return False
    return True


def _missing_module(error: BaseException) -> str | None:
    """The module whose absence ``error`` (or the error it was raised from) reports."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, ModuleNotFoundError):
            return seen.name
        seen = seen.__cause__ or seen.__context__
    return None


def needs_missing_extra(part: Part[Any], error: BaseException) -> bool:
    """True when ``part`` failed to load with ``error`` only because its extra is not installed: a package
    outside the part's own code is missing, and the extra is not (fully) installed."""
    if part.extra is None or not isinstance(part.target, str) or extra_installed(part.extra) is True:
        return False
    missing = _missing_module(error)
    if not missing:
        return False
    own = part.target.partition(":")[0]
    return missing.split(".")[0] != own.split(".")[0]
