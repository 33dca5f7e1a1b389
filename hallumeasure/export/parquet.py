"""The ``parquet`` target: the run itself in Parquet form (``runs/parquet_run.py``), in a folder or object storage,
for runs too large for one file; ``Run.load``, ``audit``, ``show`` and ``view`` read it as they read the run.

It converts from the run's store table by table, a part of ``part_rows`` samples at a time, so the run is not
held in memory (``hallumeasure.runs.parquet_run.export_parquet`` does the same from Python, given the folder).
"""

from __future__ import annotations

from pydantic import Field

from hallumeasure.core.errors import InputError
from hallumeasure.export.exporter import ExportOptions, ExportOutcome
from hallumeasure.runs.parquet_run import EXPORT_PART_ROWS, export_parquet, is_parquet_run
from hallumeasure.runs.run import Run


class ParquetOptions(ExportOptions):
    out: str = Field(description="the folder, or an object-storage URI such as s3://bucket/runs/name, to write to")
    part_rows: int = Field(EXPORT_PART_ROWS, ge=1, description="samples per part file")
    overwrite: bool = Field(False, description="replace a run already there (else it is refused)")


class ParquetExporter:
    """The run as a Parquet dataset: its tables as part files and its manifest."""

    name = "parquet"
    options = ParquetOptions

    def export(self, run: Run, options: ParquetOptions) -> ExportOutcome:
        """Write ``run`` (a run in SQLite form) to ``options.out`` in Parquet form."""
        if is_parquet_run(run.path):
            raise InputError(f"{run.path} is in Parquet form already")
        dataset = export_parquet(run.path, options.out, overwrite=options.overwrite, part_rows=options.part_rows)
        parts = len(dataset.keys("results"))
        return ExportOutcome(self.name, delivered=parts, unit="parts", verb="wrote", destination=options.out)
