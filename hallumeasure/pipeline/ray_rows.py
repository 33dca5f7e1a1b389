"""What a Ray worker sends back for each input row: its kind, shared by the engine and the Parquet parts writer."""

from __future__ import annotations

from enum import IntEnum


class RowKind(IntEnum):
    """What became of one input row in a worker."""

    BLANK = 0  # an empty line: counted, as a local run counts it, and nothing else
    PROBLEM = 1  # a row that is not a sample (its RowProblem)
    MEASURED = 2  # a sample with its result
    STORED = 3  # a sample a resumed run already holds: not measured again
    UNREACHABLE = 4  # the provider cannot be reached at all: the run stops, as a local one does
    SAMPLED_OUT = 5  # a sample that sample_rate leaves out: counted, not stored


#: The kinds of rows a worker sends a value with (a problem, a sample, a sample with its result).
WITH_VALUE = (RowKind.PROBLEM, RowKind.MEASURED, RowKind.STORED)
