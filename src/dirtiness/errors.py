"""Errors the command line turns into exit codes and one line on stderr."""


class InputError(ValueError):
    """Bad input or usage (exit 2): the message names the file, the object and the problem."""


class PolicyError(RuntimeError):
    """The plan is refused by policy (exit 3), e.g. destructive steps without permission."""


def summarize(problems: list[str], what: str, shown: int = 5, total: int | None = None) -> str:
    """All problems of one kind in one line: the first few, then how many more (of ``total``, if given)."""
    head = "; ".join(problems[:shown])
    more = (len(problems) if total is None else total) - min(shown, len(problems))
    return f"{what}: {head}" + (f" (and {more} more)" if more > 0 else "")
