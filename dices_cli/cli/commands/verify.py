"""`dices verify`: check every stored file against the checksums its manifest records."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from dices_cli.cli.commands.options import DataDir
from dices_cli.cli.commands.wording import worded
from dices_cli.cli.render import say

if TYPE_CHECKING:
    from dices_cli.store.datasets import Store


def verify(data: DataDir = None) -> None:
    """Check that every stored file is intact: its size and SHA-256 as recorded at ingest.

    One line per dataset on stderr; each damaged, missing or unreadable file is an error
    naming it. Exit status 1 when any file is damaged (ingest that dataset again with
    --force), or when a dataset was ingested by an earlier dices that recorded no checksums.

    Examples:

        dices verify

        dices verify --data ~/dices
    """
    from dices_cli.store.datasets import Store, resolve_data_dir

    if not report_damage(Store(resolve_data_dir(data))):
        raise typer.Exit(1)


def report_damage(store: Store) -> bool:
    """Verify every ingested dataset and say how each one is; True when all are intact."""
    from dices_cli.store.datasets import verify as verify_store

    intact = True
    for stored, problems in verify_store(store):
        for problem in problems:
            say(f"Error: {worded(problem)}")
        if not problems:
            files = len(stored.manifest["files"])
            say(f"{stored.title}: ok, {files} files match their SHA-256 in {stored.path}")
        intact = intact and not problems
    return intact


def register(app: typer.Typer) -> None:
    app.command()(verify)
