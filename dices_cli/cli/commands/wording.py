"""Our exceptions as the command line says them: the core gives the facts and the
parameters a failure is about; only the command line names its options and commands."""

from __future__ import annotations

from dices_cli.errors import DamagedDataError, DicesError, NotIngestedError, Option

# How to repair a damaged dataset: replace it with a fresh copy.
REINGEST = "ingest the dataset again (`dices ingest FILE --force`)"


# Options that every message says by their short name.
SHORT = {"output": "-o"}


def flag(option: Option) -> str:
    """The command-line option for a parameter: `min_quality` is `--min-quality`, `output`
    is `-o`."""
    return SHORT.get(option.name) or "--" + option.name.replace("_", "-")


def worded(error: DicesError) -> str:
    """`error`'s message with its options as flags, and the command that helps, if any."""
    message = error.worded(flag)
    if isinstance(error, NotIngestedError) and error.root is not None:
        return f"{message}; run `dices ingest FILE --data {error.root}` first"
    if isinstance(error, DamagedDataError):
        return f"{message}; {REINGEST}"
    return message
