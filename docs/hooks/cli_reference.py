"""mkdocs hook: fill the CLI reference page from the command line itself.

A page that holds the line ``<!-- cli-reference -->`` gets, in its place, one section per
``hallumeasure`` command with that command's ``--help`` text, produced in process by typer's test
runner at a fixed width of 80 columns. Nothing is copied by hand, so the page cannot drift from
the options the code defines; a new command appears on the next build.
"""

from __future__ import annotations

from typing import Any

MARKER = "<!-- cli-reference -->"


def _help(args: list[str]) -> str:
    from typer.testing import CliRunner

    from hallumeasure.cli import app

    result = CliRunner().invoke(app, [*args, "--help"], prog_name="hallumeasure", terminal_width=80)
    if result.exit_code != 0:
        raise RuntimeError(f"hallumeasure {' '.join(args)} --help exited {result.exit_code}: {result.output}")
    return result.output.rstrip()


def cli_reference() -> str:
    """The Markdown of the whole reference: the top-level help, then each command's."""
    import typer

    from hallumeasure.cli import app

    group: Any = typer.main.get_command(app)  # a click group (typer may carry its own copy of click)
    context = group.context_class(group, info_name="hallumeasure")
    parts = ["## hallumeasure", "", "```text", _help([]), "```", ""]
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        if command is None or command.hidden:
            continue
        parts += [f"## hallumeasure {name}", "", "```text", _help([name]), "```", ""]
    return "\n".join(parts)


def on_page_markdown(markdown: str, **_: Any) -> str:
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, cli_reference())
