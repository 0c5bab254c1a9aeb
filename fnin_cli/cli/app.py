"""The Typer app and the helpers every command shares.
"""

from __future__ import annotations

import os
import shlex

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Integrate surface-normal maps into depth maps and meshes (FNIN, BiNI, WLS).")


@app.callback()
def _root():
    """fnin: normal integration from the shell."""


def die(message: str, code: int = 2):
    """Print "error: message" on stderr and exit with ``code`` (2: usage)."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def command_line(ctx) -> str:
    """The running command as a shell line, rebuilt from its parsed options (what the
    model card records; also right when the CLI is invoked in-process)."""
    words = [ctx.command_path if ctx.command_path.startswith("fnin") else f"fnin {ctx.info_name}"]
    for param in ctx.command.params:
        value = ctx.params.get(param.name)
        if value is None or value is False or value == param.default or not getattr(param, "opts", None):
            continue
        words.append(param.opts[0])
        if value is not True:
            words.append(shlex.quote(str(value)))
    return " ".join(words)


def stderr_console():
    """Rich console on stderr; when stderr is not a terminal (logs, CI), 160 columns
    instead of rich's 80, so the bench and summary tables are not truncated."""
    from rich.console import Console

    console = Console(stderr=True)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(stderr=True, width=160)
    return console
