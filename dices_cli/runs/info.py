"""`dices info` and `dices verify`: what a data directory holds, and whether it is intact."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dices_cli.errors import DamagedDataError
    from dices_cli.output import Table
    from dices_cli.store.datasets import Store

# The columns of `run_info` that answer "what is there": the counts of every family's units
# and where each dataset came from.
ANSWER_AFTER_COUNTS = ("source", "sha256")


def run_info(store: Store) -> Table:
    """One row per ingested dataset: its counts, source, checksum, when and where stored."""
    from dices_cli.errors import NotIngestedError
    from dices_cli.output import table_from_rows
    from dices_cli.store.datasets import inventory

    records = inventory(store)
    if not records:
        raise NotIngestedError(f"nothing is ingested in {store.root}", root=store.root)
    return table_from_rows(list(records[0]), [tuple(r.values()) for r in records])


def info_answer() -> tuple[str, ...]:
    """The columns of `run_info` that answer what is there."""
    from dices_cli.store.datasets import UNITS

    return (*(unit for units in UNITS.values() for unit in units), *ANSWER_AFTER_COUNTS)


@dataclass(frozen=True)
class DatasetCheck:
    """One stored dataset checked: its title, where it is, how many files it has, and what
    is wrong with them (nothing: intact)."""

    title: str
    path: Path
    files: int
    problems: list[DamagedDataError]


def run_verify(store: Store) -> list[DatasetCheck]:
    """Every stored file of every ingested dataset against its recorded size and SHA-256."""
    from dices_cli.store.datasets import verify

    # A damaged manifest is a problem of its own: its files are counted only when intact.
    return [
        DatasetCheck(
            stored.title, stored.path, 0 if problems else len(stored.manifest["files"]), problems
        )
        for stored, problems in verify(store)
    ]
