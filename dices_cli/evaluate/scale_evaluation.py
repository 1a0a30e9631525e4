"""`dices evaluate` of a declared dataset: a model's predictions of one label against the
disagreeing raters, with LeWiDi's measures (`dices_cli.metrics.soft_labels`).

One row per model, kind of prediction and group (the pool first, then each group of each
`by` rater attribute):

    soft       p_VALUE columns: the predicted distribution against the crowd's (the group's
               ratings of the item): cross-entropy, Manhattan and, for an ordinal label,
               Wasserstein distance
    hard       a label per item, as a distribution with all its weight on that value:
               Manhattan and Wasserstein distance (cross-entropy would only count misses)
    per-rater  a label per item and rater: the error rate and, for an ordinal label, the
               normalised absolute distance, against each rater's own rating

An item counts for a group only where the group's raters rated it; a prediction of an item no
rater of the group rated is left out of that group's row (`items` says how many are in).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from dices_cli.errors import UsageError
from dices_cli.metrics import soft_labels

if TYPE_CHECKING:
    import polars as pl

    from dices_cli.evaluate.scale_predictions import ScalePredictions
    from dices_cli.output import Table
    from dices_cli.queries.declared import DeclaredSession

MEASURES = ("cross_entropy", "manhattan", "wasserstein", "error_rate", "absolute_distance")
COLUMNS = ("dataset", "label", "model", "prediction", "column", "group", "items", "ratings",
           *MEASURES)  # fmt: skip
POOL = "all raters"


def chosen_label(labels: Sequence[str], label: str | None, title: str) -> str:
    """`label`, checked; the declaration's first when None."""
    if label is None:
        return labels[0]
    if label not in labels:
        raise UsageError(f"{title} has no label {label!r}; its labels are: {', '.join(labels)}")
    return label


def evaluate_scale(
    session: DeclaredSession, dataset: str, label: str, predictions: ScalePredictions,
    by: Sequence[str],
) -> Table:  # fmt: skip
    """The rows above for `predictions` of `label` of the declared `dataset`."""
    from dices_cli.output import table_from_rows
    from dices_cli.queries.declared import positions, value_text

    scale = session.declared.scales[label]
    values = [value_text(v, scale) for v in scale.values]
    ordinal = scale.kind == "ordinal"
    places = np.array(positions(scale), dtype=np.float64)
    ratings = _ratings(session, label, by)
    rows = []
    groups: list[tuple[str | None, str | None]] = [(None, None)]
    for attribute in by:
        found = sorted({g for g in ratings[attribute].to_list() if g is not None})
        groups += [(attribute, group) for group in found]
    for model, part in _models(predictions.frame):
        for column, group in groups:
            chosen = ratings if column is None else ratings.filter(ratings[column] == group)
            for kind, figures in _scored(part, chosen, values, places, ordinal, predictions):
                rows.append((dataset, label, model, kind, column, group or POOL, *figures))
    return table_from_rows(list(COLUMNS), rows)


def _ratings(session: DeclaredSession, label: str, by: Sequence[str]) -> pl.DataFrame:
    """item_id, rater_id, value (as text) and the `by` attributes of every rating of `label`
    (a missing code is no rating)."""
    import polars as pl

    attributes = "".join(f', r."{name}"' for name in by)
    session.ask(label)  # the label's own column, not every label cast to text
    sql = (
        f"SELECT v.item_id, v.rater_id, v.value{attributes} FROM asked_label_values AS v "
        "JOIN raters AS r USING (rater_id)"
    )
    frame = pl.from_arrow(session.con.sql(sql).to_arrow_table())
    assert isinstance(frame, pl.DataFrame)
    return frame


def _models(frame: pl.DataFrame) -> list[tuple[str, pl.DataFrame]]:
    return [(str(p["model"][0]), p) for p in frame.partition_by("model", maintain_order=True)]


def _scored(
    part: pl.DataFrame,
    ratings: pl.DataFrame,
    values: list[str],
    places: np.ndarray[Any, np.dtype[np.float64]],
    ordinal: bool,
    predictions: ScalePredictions,
) -> list[tuple[str, tuple[Any, ...]]]:
    """(kind, (items, ratings, *MEASURES)) for each kind of prediction `part` gives."""
    import polars as pl

    scored: list[tuple[str, tuple[Any, ...]]] = []
    crowd = part.filter(pl.col("rater_id").is_null())
    if predictions.shares:
        soft = crowd.filter(pl.col(predictions.shares[0]).is_not_null())
        if soft.height:
            truth, predicted, n, count = _matched(soft, ratings, values, predictions.shares)
            if n:
                soft_figures = (
                    soft_labels.cross_entropy(truth, predicted),
                    soft_labels.manhattan(truth, predicted),
                    soft_labels.wasserstein(truth, predicted, places) if ordinal else None,
                )
                scored.append(("soft", (n, count, *soft_figures, None, None)))
    hard = crowd.filter(pl.col("label").is_not_null())
    if predictions.shares:
        hard = hard.filter(pl.col(predictions.shares[0]).is_null())
    if hard.height:
        onehot = hard.with_columns(
            pl.when(pl.col("label") == v).then(1.0).otherwise(0.0).alias(f"_p{i}")
            for i, v in enumerate(values)
        )
        shares = tuple(f"_p{i}" for i in range(len(values)))
        truth, predicted, n, count = _matched(onehot, ratings, values, shares)
        if n:
            wasserstein = soft_labels.wasserstein(truth, predicted, places) if ordinal else None
            manhattan = soft_labels.manhattan(truth, predicted)
            scored.append(("hard", (n, count, None, manhattan, wasserstein, None, None)))
    each = part.filter(pl.col("rater_id").is_not_null() & pl.col("label").is_not_null())
    if each.height:
        scored += _per_rater(each, ratings, values, places, ordinal)
    return scored


def _matched(
    rows: pl.DataFrame, ratings: pl.DataFrame, values: list[str], shares: Sequence[str]
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], int, int]:
    """The crowd's distribution (from `ratings`) and the predicted one of each item both
    have, the number of those items, and of their ratings."""
    import polars as pl

    counts = (
        ratings.group_by("item_id", "value")
        .len()
        .pivot(on="value", index="item_id", values="len")
        .fill_null(0)
    )
    for value in values:
        if value not in counts.columns:
            counts = counts.with_columns(pl.lit(0, dtype=pl.UInt32).alias(value))
    # In the predictions' order (a join's own order is any): the same sums every run.
    joined = rows.join(counts, on="item_id", how="inner", maintain_order="left")
    if joined.height == 0:
        return np.empty((0, len(values))), np.empty((0, len(values))), 0, 0
    tallies = joined.select(values).to_numpy().astype(np.float64)
    total = tallies.sum(axis=1)
    truth = tallies / total[:, None]
    predicted = joined.select(list(shares)).to_numpy().astype(np.float64)
    return truth, predicted, joined.height, int(total.sum())


def _per_rater(
    each: pl.DataFrame,
    ratings: pl.DataFrame,
    values: list[str],
    places: np.ndarray[Any, np.dtype[np.float64]],
    ordinal: bool,
) -> list[tuple[str, tuple[Any, ...]]]:
    joined = each.join(
        ratings, on=["item_id", "rater_id"], how="inner", maintain_order="left_right"
    )
    if joined.height == 0:
        return []
    item_codes = joined["item_id"].cast(str).to_numpy()
    _, items = np.unique(item_codes, return_inverse=True)
    missed = (joined["label"] != joined["value"]).to_numpy()
    place = dict(zip(values, places, strict=True))
    distance = None
    if ordinal:
        predicted = np.array([place[v] for v in joined["label"].to_list()])
        rated = np.array([place[v] for v in joined["value"].to_list()])
        span = float(places.max() - places.min())
        distance = soft_labels.absolute_distance(items, predicted, rated, span)
    figures = (None, None, None, soft_labels.error_rate(items, missed), distance)
    return [("per-rater", (int(items.max()) + 1, joined.height, *figures))]
