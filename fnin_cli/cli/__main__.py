"""``python -m fnin_cli.cli``: the same as the ``fnin`` console script."""

from . import main

main()
