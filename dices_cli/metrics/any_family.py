"""The compute step of a declared dataset's `agreement` (sql/declared/agreement.sql).

The SQL gives one row per rating of the label: the dataset, the group attributes, the
rater and the item (dense codes), and the category (the value's rank in its scale). The
rows become the same [rater, category, item] answer array DICES's agreement counts
(`dices_cli.metrics.compute`), measured by the same functions with the label's distance
metric (`dices_cli.metrics.distance`); then DSI, the largest GAI along one attribute.

`share_intervals` is the compute step of `label-by-group`: DICES's intervals of group
shares (`dices_cli.metrics.shares`), of the share in the declared positive class, made
from SQL sums (`dices_cli.metrics.share_sums`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from dices_cli.metrics.compute import (
    TEST_COLUMNS,
    array_values,
    counted_ratings,
    group_codes,
    group_rows,
)
from dices_cli.metrics.distance import Distance
from dices_cli.metrics.groups import METRICS
from dices_cli.output import Table

# DICES's interval columns (dices_cli.metrics.shares) hold a share of Yes; here, of the
# positive class.
SHARE = ("share_yes", "share_positive")


def compute(table: pa.Table, parameters: dict[str, Any]) -> Table:
    """One row per group (or one for the pool): label, metric, raters, METRICS, their
    tests, and DSI."""
    by: list[str] = parameters["by"]
    distance = Distance(parameters["metric"], tuple(parameters["positions"]))
    group_columns = [name for name in table.column_names if name in by]
    columns = ["dataset", "label", "metric", *group_columns, "raters", *METRICS, *TEST_COLUMNS]
    columns.append("dsi")
    numeric = [False] * (3 + len(group_columns)) + [True] * (2 + len(METRICS) + len(TEST_COLUMNS))
    if table.num_rows == 0:
        return Table(columns, numeric, [])
    group, values = group_codes(table, group_columns)
    ratings = counted_ratings(
        group,
        values,
        array_values(table.column("rater").combine_chunks()),
        array_values(table.column("item").combine_chunks()),
        array_values(table.column("category").combine_chunks()).astype(np.intp),
        parameters["categories"],
    )
    dataset = str(table.column("dataset")[0].as_py())
    rows = group_rows(dataset, ratings, bool(by), parameters, distance)
    gai = 1 + len(group_columns) + 1 + METRICS.index("gai")
    defined = [row[gai] for row in rows if row[gai] is not None]
    dsi = max(defined) if len(group_columns) == 1 and defined else None
    label, metric = parameters["label"], distance.kind
    return Table(columns, numeric, [(row[0], label, metric, *row[1:], dsi) for row in rows])


def share_intervals(table: pa.Table, parameters: dict[str, Any]) -> Table:
    """The rows with the 95% interval of share_positive, made as DICES's share_yes's is:
    from the sums the SQL reduces its ratings to (`dices_cli.metrics.share_sums`), or from
    its rating lists; for an ordinal label, the interval and test of its mean
    (`dices_cli.metrics.mean_sums`) after them."""
    from dices_cli.metrics import mean_sums, share_sums, shares

    # An ordinal label's mean: its interval and test, from sums of its own (mean_sums).
    means = None
    draws: share_sums.Draws = {}  # the relabellings, drawn once for both tests
    if mean_sums.MEAN_SUMS in table.column_names:
        if parameters.get("kind") == "ordinal":
            means = mean_sums.compute(table, parameters, draws)
        table = table.drop_columns([mean_sums.MEAN_SUMS])
    # The SQL's sums; rating lists (as DICES's queries give them) are summed here.
    summed = share_sums.SUMS in table.column_names
    if summed:
        result = share_sums.compute(table, parameters, draws)
    else:
        result = shares.compute(table, parameters)
    columns = [
        name.replace(*SHARE) if name.startswith(SHARE[0]) else name for name in result.columns
    ]
    if means is None:
        return Table(columns, result.numeric, result.rows)
    rows = [(*row, *more) for row, more in zip(result.rows, means.rows, strict=True)]
    return Table([*columns, *means.columns], [*result.numeric, *means.numeric], rows)
