"""``python -m hallumeasure.cli``: the same commands as the ``hallumeasure`` script."""

from hallumeasure.cli import app

app()
