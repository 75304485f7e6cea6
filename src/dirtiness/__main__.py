"""``python -m dirtiness``: the ``dirtiness`` command, for a caller that knows only the Python (a scheduler)."""

from .cli import entry

entry()
