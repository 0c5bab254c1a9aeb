"""``python -m fnin_cli``: the same as the ``fnin`` console script."""

from .cli import main

main()
