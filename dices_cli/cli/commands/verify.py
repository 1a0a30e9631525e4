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
    from dices_cli.runs.common import data_store

    if not report_damage(data_store(data)):
        raise typer.Exit(1)


def report_damage(store: Store) -> bool:
    """Verify every ingested dataset and say how each one is; True when all are intact."""
    from dices_cli.runs.info import run_verify

    checks = run_verify(store)
    for check in checks:
        for problem in check.problems:
            say(f"Error: {worded(problem)}")
        if not check.problems:
            say(f"{check.title}: ok, {check.files} files match their SHA-256 in {check.path}")
    return not any(check.problems for check in checks)


def register(app: typer.Typer) -> None:
    app.command()(verify)
