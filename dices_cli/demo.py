"""`dices demo`: ingest the shipped sample into a scratch directory and show what dices does."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import polars as pl

from dices_cli.ingest import ingest
from dices_cli.output import Table, table_from_rows
from dices_cli.store import Store, inventory

SAMPLE_FILES = ("dices_350_sample.csv.gz", "dices_990_sample.csv.gz")


@dataclass(frozen=True)
class Section:
    title: str
    explanation: str
    command: str  # what the user would type to see this on their own data
    table: Table


def sample_paths() -> list[Path]:
    root = resources.files("dices_cli") / "data"
    return [Path(str(root / name)) for name in SAMPLE_FILES]


def tour(workdir: Path, sections: Callable[[Store], list[Section]] | None = None) -> list[Section]:
    """Ingest the sample into `workdir` and return the tour's sections."""
    store = Store(workdir)
    ingest(sample_paths(), store)
    first = Section(
        "What was ingested",
        "Both sample files were validated and split into typed Parquet tables.",
        f"dices ingest FILE... && dices info --data {workdir}",
        _summary(store),
    )
    return [first, *(sections or _default_sections)(store)]


def _default_sections(store: Store) -> list[Section]:
    shares = []
    for name in store.available():
        ratings = store.open(name).read("ratings")
        shares.append(
            ratings.group_by("Q_overall", maintain_order=True)
            .len("ratings")
            .sort("Q_overall")
            .with_columns(
                pl.lit(name).alias("dataset"),
                (pl.col("ratings") / pl.col("ratings").sum()).alias("share"),
            )
            .select("dataset", "Q_overall", "ratings", "share")
        )
    return [
        Section(
            "How raters answered Q_overall (is the last response unsafe?)",
            "Each rating is one rater's verdict on one conversation.",
            "dices query overview",
            Table.from_polars(pl.concat(shares)),
        )
    ]


def _summary(store: Store) -> Table:
    shown = ("dataset", "conversations", "raters", "ratings", "rows_rejected", "source")
    records = inventory(store)
    return table_from_rows(shown, [tuple(r[k] for k in shown) for r in records])
