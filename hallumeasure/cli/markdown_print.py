"""Markdown reports on the terminal (``bench``, ``bench-compare``): prose wraps between words, and a table
too wide for the terminal turns into one block per row, so that no table row wraps in the middle.

The files the commands write keep their Markdown; only what is printed changes shape.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from rich.cells import cell_len

from hallumeasure.cli.common import out, say

#: A cell boundary of a Markdown row: a bar that is not escaped.
_CELL_BAR = re.compile(r"(?<!\\)\|")


def _cells(line: str) -> list[str]:
    """The cells of one Markdown table row, with escaped bars restored."""
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return [cell.strip().replace("\\|", "|") for cell in _CELL_BAR.split(inner)]


def _blocks(text: str) -> Iterator[str | list[str]]:
    """The lines of ``text``: prose lines one by one, each table's lines together."""
    table: list[str] = []
    for line in text.splitlines():
        if line.startswith("|"):
            table.append(line)
            continue
        if table:
            yield table
            table = []
        yield line
    if table:
        yield table


def _row_blocks(lines: list[str]) -> Iterator[str]:
    """A table's rows as blocks: the first cell as a heading, then one "header  value" line per other cell."""
    header = _cells(lines[0])
    rows = [_cells(line) for line in lines[2:]]  # lines[1] is the |---| rule
    wide = max((len(name) for name in header[1:]), default=0)
    for i, row in enumerate(rows):
        if i:
            yield ""
        yield f"{header[0]}: {row[0]}" if header[0] else row[0]
        for name, value in zip(header[1:], row[1:], strict=False):
            yield f"  {name:<{wide}}  {value}"


def print_markdown(text: str, *, width: int | None = None) -> None:
    """Print a Markdown report to stdout so that it fits ``width`` (the terminal's, 80 columns when piped)."""
    room = width if width is not None else out.size.width
    for block in _blocks(text):
        if isinstance(block, str):
            say(block)
        elif max(cell_len(line) for line in block) <= room or len(block) < 2:
            for line in block:
                say(line)
        else:
            for line in _row_blocks(block):
                say(line)
