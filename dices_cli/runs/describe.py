"""`dices describe`: a draft declaration for files dices does not know."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from dices_cli.runs.common import size_of
from dices_cli.runs.ingest import DEFAULT_MAX_SIZE

if TYPE_CHECKING:
    from dices_cli.formats.declared.describe import Draft


def run_describe(
    files: Sequence[str | os.PathLike[str]],
    name: str | None = None,
    *,
    max_size: int | str = DEFAULT_MAX_SIZE,
) -> Draft:
    """The draft declaration (TOML) of the dataset `files` hold, named `name` (else after
    the first file): what was guessed, and what could not be decided."""
    from dices_cli.formats.declared.describe import describe

    return describe([Path(given) for given in files], name, size_of(max_size))
