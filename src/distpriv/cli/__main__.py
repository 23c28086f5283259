"""``python -m distpriv.cli``: the ``distpriv`` console script."""

from . import main

main()
