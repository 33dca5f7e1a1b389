"""The ``plugins`` command: every registered part (built-in and from installed packages), with versions."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Annotated

import typer

from hallumeasure.cli.common import EXIT_FAILURE, app, console, out

if TYPE_CHECKING:
    from hallumeasure.registry import PartInfo


@app.command()
def plugins(
    check: Annotated[
        bool, typer.Option("--check", help="Import each part's code to see that it loads (slower: imports SDKs).")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the listing as JSON.")] = False,
) -> None:
    """List the providers, judges, extractors, detectors, rewriters and input formats that are installed.

    Third-party packages add parts through entry points (groups hallumeasure.providers, hallumeasure.judges,
    hallumeasure.extractors, hallumeasure.detectors, hallumeasure.rewriters, hallumeasure.input_formats).
    With --check, a part whose extra is not installed is shown as optional. Exit 1 when a plugin could not be
    registered or (with --check) a part is broken: it does not load although its extra is installed.
    """
    from hallumeasure.registry import listing

    found = listing(check=check)
    if as_json:
        out.print(found.model_dump_json(indent=2), markup=False, highlight=False, soft_wrap=True)
    else:
        for kind in dict.fromkeys(p.kind for p in found.parts):
            out.print(f"{kind}s:", markup=False, highlight=False)
            for part in (p for p in found.parts if p.kind == kind):
                flags = [flag for flag, on in (("keyless", part.keyless), (_state(part), part.loads is False)) if on]
                extra = f" [extra: {part.extra}]" if part.extra else ""
                note = f" ({', '.join(flags)})" if flags else ""
                # name and origin on one line, what it is below, wrapped to the terminal (80 columns when piped)
                out.print(f"  {part.name:<12} {part.origin}{note}", markup=False, highlight=False, soft_wrap=True)
                options = ", ".join(f"{name} ({o.type}, default {o.default})" for name, o in part.options.items())
                for text in (f"{part.summary}{extra}", options and f"options: {options}", part.problem):
                    if text:
                        indent = " " * 4
                        wrapped = textwrap.fill(
                            text, width=max(out.size.width, 40), initial_indent=indent, subsequent_indent=indent
                        )
                        out.print(wrapped, markup=False, highlight=False, soft_wrap=True)
        optional = sum(p.extra_missing for p in found.parts)
        if optional:
            out.print(
                f"optional: {optional} part{'s need' if optional > 1 else ' needs'} an extra that is not installed "
                "(pip install 'hallumeasure[<extra>]'); not a fault.",
                markup=False,
                highlight=False,
            )
        for problem in found.problems:
            console.print(
                f"plugin {problem.name} in {problem.kind} ({problem.origin}) was not registered: {problem.problem}",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
    if found.problems or any(p.loads is False and not p.extra_missing for p in found.parts):
        raise typer.Exit(EXIT_FAILURE)


def _state(part: PartInfo) -> str:
    """What a part that does not load is: optional (its extra is not installed) or broken."""
    return f"optional, needs the {part.extra} extra" if part.extra_missing else "does not load"
