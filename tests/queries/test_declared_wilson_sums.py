"""`label-by-group`'s SQL makes only what its interval needs: with `--interval wilson` no
sums over items (a Wilson interval and the permutation test use the raters' sums alone),
each group's items counted instead; the counts and the raters' sums are those of the
clustered interval's SQL and of the ratings themselves, counted here in numpy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dices_cli.families import register_directory
from dices_cli.metrics.share_sums import SUMS
from dices_cli.queries.catalog import declared_queries, render_sql
from dices_cli.queries.declared import DeclaredSession
from dices_cli.queries.engine import arrow_table
from dices_cli.store.datasets import Store
from tests.drivers.ordinal import OrdinalRatings, ingest_dataset, ordinal_ratings

NAME = "wilson_toy"
pytestmark = pytest.mark.usefixtures("registry_as_it_was")
ITEM_SUMS = ("c_yy", "c_yn", "c_nn", "x_yy", "x_yn", "x_ny", "x_nn")


@pytest.fixture(scope="module")
def toy() -> OrdinalRatings:
    return ordinal_ratings((3, 6, 9), items=14, per_rater=9, seed=3)


@pytest.fixture(scope="module")
def data(toy: OrdinalRatings, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ingest_dataset(toy, tmp_path_factory.mktemp("wilson"), NAME)


def sql_rows(data: Path, interval: str) -> list[dict[str, Any]]:
    """The rows label-by-group's SQL hands its compute step, by group."""
    store = Store(data)
    register_directory(data)
    session = DeclaredSession(store, NAME)
    query = declared_queries()["label-by-group"]
    bound = session.checked(query, query.bind({"by": ["grp"], "interval": interval}))
    session.ask(bound["label"])
    sql = render_sql(query)
    named = {k: v for k, v in bound.items() if f"${k}" in sql}
    rows: list[dict[str, Any]] = session._fetch(sql, named, arrow_table).to_pylist()
    return rows


def test_wilson_sums_no_items_and_counts_what_clustered_counts(
    data: Path, toy: OrdinalRatings
) -> None:
    wilson, clustered = sql_rows(data, "wilson"), sql_rows(data, "clustered")
    assert [r["grp"] for r in wilson] == ["g0", "g1", "g2"]
    for mine, theirs in zip(wilson, clustered, strict=True):
        assert all(mine[SUMS][name] is None for name in ITEM_SUMS), mine[SUMS]
        assert all(theirs[SUMS][name] is not None for name in ITEM_SUMS), theirs[SUMS]
        for name in ("grp", "raters", "items", "ratings", "n_positive", "mean"):
            assert mine[name] == theirs[name], name
        for name in ("rater_yes", "rater_ratings", "r_yy", "r_yn", "r_nn"):
            assert mine[SUMS][name] == theirs[SUMS][name], name
    # the ratings themselves: each group's items, ratings and each rater's Yes (value >= 3)
    group_of = toy.group[toy.rater]
    for g, row in enumerate(wilson):
        mine_ = group_of == g
        raters = np.unique(toy.rater[mine_])
        assert row["items"] == len(np.unique(toy.item[mine_]))
        assert row["ratings"] == int(mine_.sum())
        yes = [int((toy.value[toy.rater == r] >= 3).sum()) for r in raters]
        assert row[SUMS]["rater_yes"] == yes  # raters in order of id (r000, r001, ...)
        assert row[SUMS]["rater_ratings"] == [int((toy.rater == r).sum()) for r in raters]
