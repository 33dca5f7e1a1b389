"""Packages whose public names are imported on first use (PEP 562), so that importing the package stays cheap.

A package lists its names once per module in a table, ``{module: (name, ...)}``, and repeats them in an
``if TYPE_CHECKING:`` block of ``from module import name as name`` lines, which is what type checkers read
(``tests/api/test_namespace.py`` checks that the two agree).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_exports(
    package: dict[str, Any], exports: Mapping[str, tuple[str, ...]], *, own: tuple[str, ...] = ()
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of a package whose globals are ``package`` and whose public names
    are ``exports`` and the names ``own`` it defines itself; sets ``package["__all__"]`` to them all."""
    where = {name: module for module, names in exports.items() for name in names}
    package["__all__"] = sorted({*where, *own})

    def attribute(name: str) -> Any:
        try:
            module = where[name]
        except KeyError:
            raise AttributeError(f"module {package['__name__']!r} has no attribute {name!r}") from None
        value = getattr(import_module(module), name)
        package[name] = value  # the next look-up is a plain attribute
        return value

    def names() -> list[str]:
        return list(package["__all__"])

    return attribute, names
