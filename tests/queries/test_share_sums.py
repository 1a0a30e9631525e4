"""`label-by-group` made from SQL sums (dices_cli.metrics.share_sums) gives what it gave
from every rating's rater, item and answer in lists (dices_cli.metrics.shares): the same
rows and notes, each interval end and difference to 1e-12, the p-values exactly (the
same raters relabelled by the same seed). The dataset has groups below and above the 5
raters an interval needs, and repeated (item, rater) pairs, so that every sum counts."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dices_cli.families import register_directory
from dices_cli.metrics.any_family import share_intervals
from dices_cli.output import Table
from dices_cli.queries.catalog import declared_queries
from dices_cli.queries.declared import DeclaredSession
from dices_cli.queries.engine import arrow_table
from dices_cli.store.datasets import Store
from tests.drivers.ordinal import OrdinalRatings, ingest_dataset, ordinal_ratings

NAME = "sums_toy"
pytestmark = pytest.mark.usefixtures("registry_as_it_was")

# label-by-group's SQL as it was, listing every rating of a group for shares.compute.
LISTED = """
SELECT
    COLUMNS(lambda c: c = 'dataset' OR list_contains($by, c)),
    count(DISTINCT rater_id) AS raters,
    count(DISTINCT item_id) AS items,
    count(*) AS ratings,
    count(*) FILTER (positive) AS n_positive,
    count(*) FILTER (positive) / count(*) AS share_positive,
    CASE WHEN any_value(kind) = 'ordinal' THEN avg(number) END AS mean,
    any_value($positive_values) AS positive,
    list(rater) AS rating_rater,
    list(item) AS rating_item,
    list(positive::UTINYINT) AS rating_yes
FROM (
    SELECT
        *,
        dense_rank() OVER (ORDER BY rater_id) AS rater,
        dense_rank() OVER (ORDER BY item_id) AS item
    FROM asked_label_values
    WHERE label = $label
)
JOIN (SELECT COLUMNS(lambda c: c IN ('dataset', 'rater_id') OR list_contains($by, c)) FROM raters)
    USING (dataset, rater_id)
GROUP BY ALL
ORDER BY ALL
"""


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    toy = ordinal_ratings((3, 6, 9), items=14, per_rater=9, seed=11)
    again = np.arange(0, len(toy.value), 7)  # a second rating of some pairs, another value
    repeated = OrdinalRatings(
        np.concatenate([toy.rater, toy.rater[again]]),
        np.concatenate([toy.item, toy.item[again]]),
        np.concatenate([toy.value, toy.levels + 1 - toy.value[again]]),
        toy.group,
        toy.levels,
    )
    return ingest_dataset(repeated, tmp_path_factory.mktemp("sums"), NAME)


def both(data: Path, parameters: dict[str, Any]) -> tuple[Table, Table]:
    """The query's rows from sums, and from rating lists over the same session."""
    store = Store(data)
    register_directory(data)
    session = DeclaredSession(store, NAME)
    query = declared_queries()["label-by-group"]
    summed = session.run(query, parameters)
    assert isinstance(summed, Table)
    # an ordinal label's mean columns come from sums alone (tests/queries/test_declared_mean.py)
    kept = [c for c in summed.columns if not c.startswith("mean_")]
    summed = Table(kept, summed.numeric[: len(kept)], [row[: len(kept)] for row in summed.rows])
    bound = session.checked(query, parameters)
    named = {k: v for k, v in bound.items() if f"${k}" in LISTED}
    listed = share_intervals(session._fetch(LISTED, named, arrow_table), bound)
    return summed, listed


def same(summed: Table, listed: Table) -> None:
    assert summed.columns == listed.columns
    assert summed.numeric == listed.numeric
    assert len(summed.rows) == len(listed.rows) > 0
    exact = {"p_value", "p_adjusted", "p_groups_differ"}
    for mine, theirs in zip(summed.rows, listed.rows, strict=True):
        for name, a, b in zip(summed.columns, mine, theirs, strict=True):
            if isinstance(a, float) and isinstance(b, float) and name not in exact:
                assert math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12), (name, a, b)
            else:
                assert a == b, (name, a, b)


@pytest.mark.parametrize("interval", ["clustered", "conversations", "wilson"])
@pytest.mark.parametrize("alternative", ["two-sided", "greater"])
def test_the_sums_give_the_figures_of_the_rating_lists(
    data: Path, interval: str, alternative: str
) -> None:
    parameters = {"by": ["grp"], "label": "score", "interval": interval,
                  "permutations": 499, "seed": 5, "alternative": alternative}  # fmt: skip
    summed, listed = both(data, parameters)
    same(summed, listed)
    notes = summed.columns.index("interval_note")
    assert [row[notes] for row in summed.rows][:1] == (
        ["fewer than 5 raters"] if interval == "clustered" else [None]
    )  # the group of 3 raters
    difference = summed.columns.index("difference_ci_low")
    assert all(row[difference] is not None for row in summed.rows[1:])


def test_the_sums_give_the_figures_of_the_rating_lists_without_groups(data: Path) -> None:
    parameters = {"by": [], "label": "score", "interval": "clustered",
                  "permutations": 99, "seed": 0, "alternative": "two-sided"}  # fmt: skip
    summed, listed = both(data, parameters)
    same(summed, listed)
    assert len(summed.rows) == 1
