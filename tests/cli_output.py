"""Reading what the command line printed."""

import re

PROGRESS = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ dirtiness ")


def error_lines(err: str) -> list[str]:
    """What a run said on stderr besides its timestamped progress lines (one per round)."""
    return [line for line in err.strip().splitlines() if not PROGRESS.match(line)]
