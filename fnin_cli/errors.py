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
