"""Errors the command line turns into exit codes and one line on stderr."""


class InputError(ValueError):
    """Bad input or usage (exit 2): the message names the file, the object and the problem."""


class InputProblems(InputError):
    """Several problems of one input (exit 2), each its own line: one per misspelt field, say."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = list(lines)


class PolicyError(RuntimeError):
    """The plan is refused by policy (exit 3), e.g. destructive steps without permission."""


class RunError(RuntimeError):
    """The run cannot go on with this configuration (exit 1): the message says what to change."""


class PublishError(RuntimeError):
    """A table could not be written (exit 1): the message names it; the run is recorded as failed and what
    the previous runs published stands."""


def first_line(error: BaseException, limit: int = 300) -> str:
    """The line of an error worth showing: a JVM error's own exception line rather than py4j's preamble."""
    lines = [" ".join(line.split()) for line in str(error).splitlines() if line.strip()]
    meaningful = [line for line in lines if not line.startswith(("An error occurred while calling", "at "))]
    line = (meaningful or lines or [type(error).__name__])[0].lstrip(": ")
    return line[:limit]


def summarize(problems: list[str], what: str, shown: int = 5, total: int | None = None) -> str:
    """All problems of one kind in one line: the first few, then how many more (of ``total``, if given)."""
    head = "; ".join(problems[:shown])
    more = (len(problems) if total is None else total) - min(shown, len(problems))
    return f"{what}: {head}" + (f" (and {more} more)" if more > 0 else "")
