"""The one error type users see: a short, actionable message, never a traceback.

Messages are written with the command line's options (``--force``); a Python caller
gets the Python arguments instead (``force=True``): :func:`for_caller` rewrites them
unless the command line is running (:func:`cli_messages`).
"""

import contextlib
import contextvars
import re

_CALLER = contextvars.ContextVar("fnin_caller", default="python")

# option -> (Python argument, the values it takes, as a regex; None: a yes/no flag)
_OPTIONS = {
    "force": ("force", None), "allow-invalid": ("allow_invalid", None), "ortho": ("ortho", None),
    "convention": ("convention", r"auto|ps|opencv|directx|opengl|green-up|green-down|cv"),
    "channels": ("channels", r"rgb|bgr|" + ",".join([r"[A-Za-z_](?:[\w.]*\w)?"] * 3)),
    "float-encoding": ("float_encoding", r"raw|half"), "flip": ("flip", r"none|[xyz]{1,3}"),
    "device": ("device", r"auto|cpu|cuda|mps"),
    "method": ("method", r"[a-z][\w-]*"), "mask": ("mask", None), "K": ("K", None),
    "mean-depth": ("mean_depth", None), "depth-at": ("depth_at", None), "refine": ("refine", None),
    "depth-prior": ("depth_prior", None),
    "mesh-axes": ("axes", r"opencv|opengl"),
}
_OPTION_RE = re.compile(r"--(" + "|".join(sorted(map(re.escape, _OPTIONS), key=len, reverse=True)) + r")\b(?!-)"
                        r"(?: (\S+))?")


def python_names(text: str) -> str:
    """``text`` with the command line's options as Python arguments: ``--force`` ->
    ``force=True``, ``--convention directx`` -> ``convention="directx"``, ``--mask`` -> ``mask``."""

    def sub(m):
        name, values = _OPTIONS[m.group(1)]
        value = m.group(2)
        if values is None:
            flag = m.group(1) in ("force", "allow-invalid", "ortho")
            return (f"{name}=True" if flag else name) + ("" if value is None else f" {value}")
        word = re.match(rf"({values})(.*)$", value or "")
        if word is None:
            return name + ("" if value is None else f" {value}")
        return f'{name}="{word.group(1)}"{word.group(2)}'

    # two arguments in a row read as a call's: convention="directx", channels="bgr"
    return re.sub(r'(\w+="[^"]*") (?=\w+=)', r"\1, ", _OPTION_RE.sub(sub, text))


def for_caller(text: str) -> str:
    """``text`` as the caller should read it: as is on the command line, else with
    Python arguments (:func:`python_names`)."""
    return text if _CALLER.get() == "cli" else python_names(text)


@contextlib.contextmanager
def cli_messages():
    """Within the block (the command line at work), messages name the command's options."""
    token = _CALLER.set("cli")
    try:
        yield
    finally:
        _CALLER.reset(token)


def use_cli_messages() -> None:
    """For the rest of this process (a ``--jobs`` worker), messages name the command's options."""
    _CALLER.set("cli")


class FninError(Exception):
    """An input or usage problem with a one-line explanation of what to try.

    ``path`` names the offending file when there is one; the CLI prints
    ``error: <path>: <message>`` and exits non-zero. The message names the command
    line's options there, the Python arguments elsewhere (:func:`for_caller`).
    """

    def __init__(self, message: str, path=None):
        message = for_caller(message)
        super().__init__(message)
        self.message = message
        self.path = None if path is None else str(path)

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class FninWarning(UserWarning):
    """A warning about an input or a result (a decoding change, dropped pixels, 8-bit
    quantisation, a result that is mostly jumps). Python callers get it through
    :mod:`warnings`; the command line reports the same text in its own ``warning:``
    lines and ``--json`` records, and ignores this category."""


def warn(messages, stacklevel: int = 2) -> None:
    """``warnings.warn`` each message as a :class:`FninWarning`, attributed to the caller
    of the function that calls this one (``stacklevel`` counts from that function)."""
    import warnings

    for message in messages:
        warnings.warn(for_caller(message), FninWarning, stacklevel=stacklevel + 1)
