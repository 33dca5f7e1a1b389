"""An exporter of the tests, registered as a plugin would be: one line of text per response."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from hallumeasure.export import ExportOutcome
from hallumeasure.runs.run import Run


class ToyOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    out: Path
    greeting: str = "hello"
    shout: bool = False


class ToyExporter:
    """Writes '<greeting> <sample id>' per response (a toy)."""

    name = "toy"
    options = ToyOptions

    def export(self, run: Run, options: ToyOptions) -> ExportOutcome:
        greeting = options.greeting.upper() if options.shout else options.greeting
        options.out.write_text("".join(f"{greeting} {s.id}\n" for s in run.samples), encoding="utf-8")
        return ExportOutcome(self.name, files=(options.out,))
