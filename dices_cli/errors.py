"""Exceptions raised by the core. The CLI turns each into `Error: ...` and an exit code."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from dices_cli.problems import Report


@dataclass(frozen=True)
class Option:
    """An option of the caller that a message names, by its parameter's name (`min_quality`).

    The core knows which of its parameters a failure is about, not how a command line
    spells it: the core's message says the name, the command line its option.
    """

    name: str

    def __str__(self) -> str:
        return self.name


class DicesError(Exception):
    """A failure the user can act on; the message says what happened and what to do.

    The message is given in parts, text and `Option`s: `str(error)` says each option by its
    name, `worded` as the caller says it (the command line: `--min-quality`).
    """

    exit_code = 1

    def __init__(self, *message: str | Option) -> None:
        super().__init__("".join(map(str, message)))
        self.message = message

    def worded(self, option: Callable[[Option], str]) -> str:
        """The message with each option said by `option`."""
        return "".join(option(part) if isinstance(part, Option) else part for part in self.message)


class UsageError(DicesError):
    """The command line asks for something that cannot be done as asked."""

    exit_code = 2


class NotIngestedError(DicesError):
    """A command needs a dataset that the data directory does not hold. With the directory
    as `root`, the command line adds how to ingest one there."""

    def __init__(self, *message: str | Option, root: Path | None = None) -> None:
        super().__init__(*message)
        self.root = root


class DatasetExistsError(DicesError):
    """Ingest would replace a dataset and `force` was not given."""


class DamagedDataError(DicesError):
    """A file of the data directory is missing, unreadable or not what its manifest records
    (the command line adds how to repair it: ingest the dataset again)."""


class LockedError(DicesError):
    """Another dices process is writing to the same data directory."""


class InvalidInputError(DicesError):
    """A CSV file failed validation; `report` holds every problem found."""

    def __init__(self, message: str, report: Report) -> None:
        super().__init__(message)
        self.report = report


def system_reason(error: Exception) -> str:
    """Why a read or write failed, in the system's words ("No space left on device").

    Polars reports an I/O error as e.g. ComputeError("...: underlying IO error: No space
    left on device (os error 28)"), or a bare OSError of that text, without an errno.
    """
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    match = re.search(r"\(os error (\d+)\)", str(error))
    return os.strerror(int(match[1])) if match else str(error)
