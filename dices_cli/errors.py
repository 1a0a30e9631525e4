"""Exceptions raised by the core. The CLI turns each into `Error: ...` and an exit code."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dices_cli.problems import Report


class DicesError(Exception):
    """A failure the user can act on; the message says what happened and what to do."""

    exit_code = 1


class UsageError(DicesError):
    """The command line asks for something that cannot be done as asked."""

    exit_code = 2


class NotIngestedError(DicesError):
    """A command needs a dataset that the data directory does not hold."""


class DatasetExistsError(DicesError):
    """Ingest would replace a dataset and --force was not given."""


class DamagedDataError(DicesError):
    """A file of the data directory is missing, unreadable or not what its manifest records."""


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
