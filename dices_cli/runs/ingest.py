"""`dices ingest`: files validated and stored in a data directory, all or nothing."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from dices_cli.runs.common import checked_files, max_size_named, size_of

if TYPE_CHECKING:
    from dices_cli.formats.ingest import IngestResult
    from dices_cli.formats.validate import Progress
    from dices_cli.store.datasets import Store

DEFAULT_MAX_SIZE = "2G"  # dices_cli.read.source.DEFAULT_MAX_SIZE, as a caller spells it


def run_ingest(
    store: Store,
    files: Sequence[str | os.PathLike[str]],
    dataset: str = "auto",
    *,
    force: bool = False,
    rejects: str | os.PathLike[str] | None = None,
    declaration: str | os.PathLike[str] | None = None,
    max_size: int | str = DEFAULT_MAX_SIZE,
    progress: Progress | None = None,
    split: str | None = None,
) -> list[IngestResult]:
    """Validate `files` ("-": stdin) as `dataset` (auto: by their content) and store them
    in `store`, all or nothing unless `rejects` names a file for the rejected rows; `force`
    replaces a dataset already there. `declaration` is a TOML file declaring the files'
    dataset; a compressed or piped input holds at most `max_size` bytes of text. `split`
    names the split the files hold when their names do not say it (ProsocialDialog's)."""
    from dices_cli.read import checksum

    paths = checked_files(files, store=True)
    limit = size_of(max_size)
    # Hashes and counts on a spare core while Polars is imported.
    checksum.prefetch(paths)
    from dices_cli.formats.ingest import ingest
    from dices_cli.formats.validate import no_progress

    with max_size_named():
        return ingest(
            paths,
            store,
            dataset,
            force,
            None if rejects is None else Path(rejects),
            progress or no_progress,
            limit,
            None if declaration is None else Path(declaration),
            split,
        )
