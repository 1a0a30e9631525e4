"""Data directories whose rater demographics carry no information: the null of every
calibration test of a group figure.

Each rater gets the demographics of another rater, drawn as one random permutation of the
raters (seeded), so every group, and every intersection of groups, keeps its size and its
mix of the other columns, while who is in it becomes random. The ratings (and `phase`, which
belongs to a rating) are untouched.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dices_cli.evaluate.references import Votes
from dices_cli.store.datasets import Store


def shuffled_store(source: Path, target: Path, seed: int) -> Path:
    """A copy of the data directory `source` at `target` with each dataset's rater
    demographics permuted across its raters; `target` is returned."""
    import polars as pl

    origin, copy = Store(source), Store(target)
    rng = np.random.default_rng(seed)
    with copy.locked():
        for name in origin.available():
            stored = origin.open(name)
            tables = {table: stored.read(table) for table in stored.tables}
            if "raters" in tables:
                raters = tables["raters"]
                profiles = [c for c in raters.columns if c.startswith("rater_") and c != "rater_id"]
                order = rng.permutation(raters.height)
                tables["raters"] = raters.with_columns(
                    raters.select(profiles)[order.tolist()].get_columns()
                )
                assert isinstance(tables["raters"], pl.DataFrame)
            copy.publish(name, tables, stored.manifest)
    return target


def shuffled_groups(votes: Votes, rng: np.random.Generator) -> Votes:
    """The votes with each rater's group given to another rater (group sizes kept)."""
    from dataclasses import replace

    assert votes.rater is not None
    group_of_rater = np.zeros(int(votes.rater.max()) + 1, dtype=np.intp)
    group_of_rater[votes.rater] = votes.group
    return replace(votes, group=rng.permutation(group_of_rater)[votes.rater])
