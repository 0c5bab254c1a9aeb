"""The Typer app and the helpers every command shares.
"""

from __future__ import annotations

import difflib
import os
import shlex
import warnings

import typer
from typer.core import TyperCommand

from ..errors import FninWarning, cli_messages

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  # click's plain help: flags shown as --flag / --no-flag, never with a <bool> value
                  rich_markup_mode=None,
                  help="Integrate surface-normal maps into depth maps and meshes (FNIN, BiNI, WLS).")


class FninCommand(TyperCommand):
    """A typer command with fnin's usage line and option suggestions.

    An argument whose metavar says its own repetition ("INPUT...") is shown as written:
    typer made it "[INPUT...]...". An unknown option suggests only close option names
    (:func:`close_options`), or none: the names' shared "--" made any short option look
    close ("--deph" would suggest "--jobs, --out").
    """

    def collect_usage_pieces(self, ctx) -> list:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            metavar = getattr(param, "metavar", None)
            if param.param_type_name == "argument" and metavar and metavar.endswith("..."):
                pieces.append(metavar)
            else:
                pieces.extend(param.get_usage_pieces(ctx))
        return pieces

    def parse_args(self, ctx, args):
        try:
            return super().parse_args(ctx, args)
        except Exception as exc:
            # click's NoSuchOption (typer's own copy of click, or click): its class by name
            if type(exc).__name__ == "NoSuchOption" and hasattr(exc, "possibilities"):
                names = [o for p in self.get_params(ctx) for o in (*p.opts, *p.secondary_opts)]
                exc.possibilities = close_options(exc.option_name, names)
            raise


def close_options(name: str, options) -> list:
    """The long options close to an unknown ``name``: difflib's close matches (ratio 0.6 or
    more) on the names without their dashes, at most three, closest first.

    Examples
    --------
    >>> close_options("--deph", ["--depth", "--depth-at", "--jobs", "--out"])
    ['--depth', '--depth-at']
    >>> close_options("--zzz", ["--depth", "--jobs"])
    []
    """
    long = {o[2:]: o for o in options if o.startswith("--")}
    if not str(name).startswith("--"):
        return []
    return [long[m] for m in difflib.get_close_matches(str(name)[2:], list(long), n=3, cutoff=0.6)]


def _version(value: bool):
    if value:
        from .. import __version__

        typer.echo(f"fnin {__version__}")
        raise typer.Exit()


@app.callback()
def _root(ctx: typer.Context,
          version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="print the version and exit")):
    """fnin: normal integration from the shell."""
    ctx.with_resource(cli_messages())   # messages name the options (--force), not Python's force=True
    # the commands report warnings in their own lines and --json records; the Python
    # API's FninWarning would say each one twice
    warnings.simplefilter("ignore", FninWarning)


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


def stdout_console():
    """Rich console for results on stdout (``fnin bench synthetic > res.txt``); 160
    columns when stdout is not a terminal, as :func:`stderr_console`."""
    from rich.console import Console

    console = Console()
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(width=160)
    return console


def stderr_console():
    """Rich console on stderr; when stderr is not a terminal (logs, CI), 160 columns
    instead of rich's 80, so the bench and summary tables are not truncated."""
    from rich.console import Console

    console = Console(stderr=True)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(stderr=True, width=160)
    return console
