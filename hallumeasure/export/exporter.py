"""What every exporter is: a name, its declared options, and ``export(run, options) -> ExportOutcome``."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from hallumeasure.core.errors import InputError
from hallumeasure.runs.run import Run


class ExportOptions(BaseModel):
    """What the built-in targets' option models start from: no unknown option, no change after reading.

    Each target declares ``out`` (where the results go, what ``--out`` fills: a path for a target that writes
    files, a URL or URI for one that sends them) with its own type, default and description.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)


class FileOptions(ExportOptions):
    """What the targets that write files share: an existing file is refused unless ``overwrite``, as
    ``measure`` refuses a run already in ``--out``."""

    overwrite: bool = Field(False, description="replace files already there (else an existing file is refused)")


def refuse_existing(paths: Iterable[Path], options: FileOptions) -> None:
    """An ``InputError`` naming the first of ``paths`` that exists, unless ``options.overwrite``."""
    if options.overwrite:
        return
    for path in paths:
        if path.exists():
            raise InputError(f"{path} exists; pass --overwrite (overwrite=True) to replace it")


@dataclass(frozen=True)
class ExportOutcome:
    """What one export did: the files it wrote, or how many records it delivered, and where."""

    target: str
    files: tuple[Path, ...] = ()
    #: Records handed to a service (events, annotations, assessments); None for a target that writes files.
    delivered: int | None = None
    #: What the delivered records are, in the plural (``events``, ``span annotations``).
    unit: str = "records"
    #: What happened to them (``sent``, ``logged``).
    verb: str = "sent"
    destination: str = ""

    def lines(self) -> list[str]:
        """The outcome as the command line prints it: ``wrote <file>`` per file, ``sent 3 events to <url>``."""
        written = [f"wrote {path}" for path in self.files]
        if self.delivered is None:
            return written
        return [*written, f"{self.verb} {self.delivered} {self.unit} to {self.destination}"]


OptionsT = TypeVar("OptionsT", bound=BaseModel)


@runtime_checkable
class Exporter(Protocol[OptionsT]):
    """One export target. Registered as a part of kind ``exporter``: its factory, called with no argument,
    returns an object with these three members."""

    @property
    def name(self) -> str:
        """The target's name, as ``--to`` spells it."""
        ...

    @property
    def options(self) -> type[OptionsT]:
        """The pydantic model of the target's options (``out`` among them when it writes somewhere)."""
        ...

    def export(self, run: Run, options: OptionsT) -> ExportOutcome:
        """Write or send ``run``'s results as the target lays them out."""
        ...


def write_jsonl(path: Path, records: Iterable[dict[str, Any]]) -> None:
    """Write ``records`` to ``path``, one JSON object per line (UTF-8, not ASCII-escaped)."""
    with path.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
