"""A stored run's results written where other tools read them: one registered exporter per target.

Each target is a part of kind ``exporter`` in the registry (``registry/builtin.py`` names the built-in ones by
``"module:attribute"``; third parties add theirs through the entry-point group ``hallumeasure.exporters``, the
same path). Its factory, called with no argument, returns an ``Exporter``: a ``name``, the pydantic model of its
``options`` (``out``, where to, among them) and ``export(run, options) -> ExportOutcome``.

Built in, one module each: ``otlp-json`` and ``otlp-http`` (OpenTelemetry ``gen_ai.evaluation.result``
events), ``phoenix`` (span annotations), ``mlflow`` (feedback assessments), all four from
``evaluations.py``; ``lettucedetect`` and ``ragtruth`` (the unsupported spans in those tools' layouts).
``hallumeasure export RUN --to <target> --out <where>`` calls ``export_run``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from hallumeasure.core.errors import ConfigError
from hallumeasure.export.exporter import Exporter, ExportOptions, ExportOutcome, OptionsT
from hallumeasure.registry import PartKind, registry
from hallumeasure.runs.run import Run

__all__ = ["ExportOptions", "ExportOutcome", "Exporter", "export_run", "exporter", "targets"]


def targets() -> list[str]:
    """The names ``--to`` takes: the built-in exporters in their order, then plugins'."""
    return registry().names(PartKind.EXPORTER)


def exporter(name: str) -> Exporter[Any]:
    """The exporter registered as ``name``; a ``ConfigError`` naming the closest target and listing all otherwise."""
    part = registry().part(PartKind.EXPORTER, name)
    built = part.load()()
    if not isinstance(built, Exporter):
        raise ConfigError(f"exporter {name!r} from {part.origin} has no name, options and export(run, options)")
    return built


def read_options(target: Exporter[OptionsT], options: Mapping[str, Any]) -> OptionsT:
    """``options`` read into ``target``'s options model; a ``ConfigError`` naming the option and what it takes."""
    try:
        return target.options.model_validate(dict(options))
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            field = ".".join(str(x) for x in error.get("loc", ())) or "options"
            if error["type"] == "missing":
                info = target.options.model_fields.get(field)
                what = f": {info.description}" if info is not None and info.description else ""
                problems.append(f"needs {field}{what}")
            elif error["type"] == "extra_forbidden":
                known = ", ".join(target.options.model_fields) or "none"
                problems.append(f"takes no option {field} (its options: {known})")
            else:
                problems.append(f"option {field}: {error['msg']}")
        raise ConfigError(f"exporter {target.name!r} " + "; ".join(problems)) from None


def export_run(run: Run, to: str, **options: Any) -> ExportOutcome:
    """Export ``run`` to the target ``to`` (``"lettucedetect"``, ``"otlp-json"`` ...) with its ``options``
    (``out=`` and the target's own): ``export_run(run, "ragtruth", out="rt")``."""
    target = exporter(to)
    return target.export(run, read_options(target, options))
