"""The one error type users see: a short, actionable message, never a traceback."""


class FninError(Exception):
    """An input or usage problem with a one-line explanation of what to try.

    ``path`` names the offending file when there is one; the CLI prints
    ``error: <path>: <message>`` and exits non-zero.
    """

    def __init__(self, message: str, path=None):
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
        warnings.warn(message, FninWarning, stacklevel=stacklevel + 1)
