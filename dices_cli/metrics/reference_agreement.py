"""The compute steps of a declared dataset's `gold-vs-crowd` (sql/declared/gold-vs-crowd.sql):
each item's crowd label against its reference label (experts' gold), per rater group; and
of `gold-vs-crowd-items`, those crowd labels and references item by item.

The SQL gives one row per rating of the label: the dataset, the `by` attributes, the item,
the value's rank in its scale (`category`) and the item's reference cell as text. Per group
of raters and item the ratings are counted over the scale; the crowd label is the
plurality value (a tie of two or more values: the category `tie`, after the scale's) or
the lower median (ordinal labels). The reference cell is read by the declaration
(`Reference.rank_of`). Per group, the items with a reference give a table of reference x
crowd label (square: the scale's values, and `tie` for plurality), from which come

    accuracy          trace / n
    kappa             Cohen's kappa, with Fleiss, Cohen and Everitt's (1969) large-sample
                      standard error and a 95% Wald interval held in [-1, 1]
    kappa_linear,     weighted kappa, weights |i - j| and (i - j)^2 on the ranks
    kappa_quadratic   (ordinal labels, median crowd: a tie has no rank)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from dices_cli.errors import DicesError
from dices_cli.output import Table

if TYPE_CHECKING:
    import pyarrow as pa
    from numpy.typing import NDArray

    from dices_cli.families.declaration import Reference, Scale

METRICS = (
    "label", "reference", "crowd", "items", "ties", "accuracy", "kappa", "kappa_ci_low",
    "kappa_ci_high", "kappa_linear", "kappa_quadratic",
)  # fmt: skip
TEXT = frozenset(("label", "reference", "crowd"))
Z95 = 1.959963984540054  # the 97.5th percentile of the standard normal


@dataclass(frozen=True)
class Counted:
    """The ratings counted per group of raters and item: each pair's group (its values of
    `by`, after the dataset), item, counts over the scale and reference rank (NaN: none),
    and the groups in order (`group_of` numbers them)."""

    pairs: list[tuple[tuple[Any, ...], Any]]
    counts: NDArray[np.int64]
    reference: NDArray[np.float64]
    groups: list[tuple[Any, ...]]
    group_of: NDArray[np.intp]


def counted(table: pa.Table, parameters: dict[str, Any]) -> Counted:
    """The SQL's rows (one per rating) counted per group and item; a rater without a value
    of an attribute is in no group."""
    by: list[str] = parameters["by"]
    scale: Scale = parameters["scale"]
    frame = {name: table.column(name).to_pylist() for name in ("dataset", *by, "item_id")}
    category = np.asarray(table.column("category").to_numpy(zero_copy_only=False), np.intp)
    cells = table.column("reference_cell").to_pylist()
    ranks = _reference_ranks(cells, frame["item_id"], parameters["reference_rule"], scale)
    keys = [tuple(frame[n][i] for n in ("dataset", *by)) for i in range(table.num_rows)]
    pairs: dict[tuple[Any, ...], int] = {}
    pair_of = np.empty(table.num_rows, np.intp)
    for row, (key, item) in enumerate(zip(keys, frame["item_id"], strict=True)):
        pair_of[row] = (
            -1 if any(v is None for v in key) else pairs.setdefault((key, item), len(pairs))
        )
    kept = pair_of >= 0
    counts = np.zeros((len(pairs), len(scale.values)), np.int64)
    np.add.at(counts, (pair_of[kept], category[kept]), 1)
    reference = np.array([ranks[item] for (_, item) in pairs], dtype=np.float64)
    groups = sorted({key for (key, _) in pairs}, key=_order)
    index = {key: number for number, key in enumerate(groups)}
    group_of = np.array([index[key] for (key, _) in pairs], dtype=np.intp)
    return Counted(list(pairs), counts, reference, groups, group_of)


def gold_vs_crowd(table: pa.Table, parameters: dict[str, Any]) -> Table:
    """One row per group of the `by` attributes (one without them), in the groups' order."""
    by: list[str] = parameters["by"]
    reference: Reference = parameters["reference_rule"]
    crowd: str = parameters["crowd"]
    weighted = crowd == "median" and parameters["kind"] == "ordinal"
    columns = ["dataset", *by, *METRICS]
    numeric = [c not in TEXT and c != "dataset" and c not in by for c in columns]
    if not table.num_rows:
        return Table(columns, numeric, [])
    found = counted(table, parameters)
    size = found.counts.shape[1]
    labels = _median(found.counts) if crowd == "median" else _plurality(found.counts)
    rows = []
    for number, key in enumerate(found.groups):
        chosen = (found.group_of == number) & ~np.isnan(found.reference)
        square = size + (crowd == "plurality")  # plurality: a tie is a category of its own
        confusion = np.zeros((square, square), np.float64)
        np.add.at(confusion, (found.reference[chosen].astype(np.intp), labels[chosen]), 1.0)
        rows.append(
            (*key, parameters["label"], reference.attribute, crowd,
             *_agreement(confusion, crowd, weighted, size))
        )  # fmt: skip
    return Table(columns, numeric, rows)


ITEM_COLUMNS = (
    "item_id", "ratings", "counts", "reference", "plurality", "median", "plurality_agrees",
    "median_agrees",
)  # fmt: skip


def crowd_by_item(table: pa.Table, parameters: dict[str, Any]) -> Table:
    """One row per group and item (gold-vs-crowd-items): the crowd labels and the reference,
    as values of the scale, in the groups' order, then the items'."""
    by: list[str] = parameters["by"]
    scale: Scale = parameters["scale"]
    columns = ["dataset", *by, *ITEM_COLUMNS]
    numeric = [c in ("ratings",) for c in columns]
    if not table.num_rows:
        return Table(columns, numeric, [])
    found = counted(table, parameters)
    values = [str(v) for v in scale.values]
    ordinal = parameters["kind"] == "ordinal"
    plurality = _plurality(found.counts)
    median = _median(found.counts)
    rows = []
    for number, (key, item) in sorted(
        enumerate(found.pairs), key=lambda p: (found.group_of[p[0]], _order((p[1][1],)))
    ):
        reference = found.reference[number]
        known = not math.isnan(reference)
        said = values[int(reference)] if known else None
        crowd = "tie" if plurality[number] == len(values) else values[plurality[number]]
        middle = values[median[number]] if ordinal else None
        rows.append(
            (*key, item, int(found.counts[number].sum()),
             " ".join(map(str, found.counts[number])), said, crowd, middle,
             (crowd == said) if known else None,
             (middle == said) if known and ordinal else None)
        )  # fmt: skip
    return Table(columns, numeric, rows)


def _reference_ranks(
    cells: list[str | None], items: list[Any], reference: Reference, scale: Scale
) -> dict[Any, float]:
    """Each item's reference rank (NaN: none); a cell the declaration cannot read is bad
    data, said with the item and the fix."""
    ranks: dict[Any, float] = {}
    for cell, item in zip(cells, items, strict=True):
        if item in ranks:
            continue
        try:
            rank = reference.rank_of(cell, scale)
        except KeyError:
            shown = ", ".join(map(str, scale.values))
            raise DicesError(
                f"item {item}'s reference label ({reference.attribute}) is {cell!r}: not a value "
                f"of {reference.label}'s scale ({shown}); map it in "
                f'[dataset.references.{reference.attribute}] values = {{ "{cell}" = VALUE }}, '
                "or list it in its missing codes"
            ) from None
        ranks[item] = math.nan if rank is None else float(rank)
    return ranks


def _order(key: tuple[Any, ...]) -> tuple[tuple[bool, str, Any], ...]:
    """Groups in their values' order (numbers as numbers, text as text)."""
    return tuple((isinstance(v, str), type(v).__name__, v) for v in key)


def _plurality(counts: NDArray[np.int64]) -> NDArray[np.intp]:
    """Each row's most frequent rank; the column after the scale's when two or more tie."""
    top = counts.max(axis=1, keepdims=True)
    tied = (counts == top).sum(axis=1) > 1
    return np.where(tied, counts.shape[1], counts.argmax(axis=1)).astype(np.intp)


def _median(counts: NDArray[np.int64]) -> NDArray[np.intp]:
    """Each row's lower median rank: the (n - 1) // 2-th of its sorted ratings (from 0)."""
    position = (counts.sum(axis=1) - 1) // 2
    below = np.cumsum(counts, axis=1)
    return (below <= position[:, None]).sum(axis=1).astype(np.intp)


def _agreement(
    confusion: NDArray[np.float64], crowd: str, weighted: bool, size: int
) -> tuple[Any, ...]:
    """items, ties, accuracy, kappa and its interval, the weighted kappas of one table
    (rows: the reference; columns: the crowd)."""
    n = float(confusion.sum())
    ties = int(confusion[:, size].sum()) if crowd == "plurality" else None
    if n == 0:
        return (0, ties, None, None, None, None, None, None)
    accuracy = float(np.trace(confusion)) / n
    kappa, low, high = _kappa_interval(confusion / n, n)
    linear = quadratic = None
    if weighted:
        linear = _weighted_kappa(confusion, 1)
        quadratic = _weighted_kappa(confusion, 2)
    return (int(n), ties, accuracy, kappa, low, high, linear, quadratic)


def _kappa_interval(p: NDArray[np.float64], n: float) -> tuple[Any, Any, Any]:
    """Cohen's kappa of a table of shares and the ends of its 95% Wald interval, from the
    large-sample variance of Fleiss, Cohen and Everitt (1969), held in [-1, 1]:
    [sum_i p_ii (1 - (p_i. + p_.i)(1 - k))^2 + (1 - k)^2 sum_(i != j) p_ij (p_.i + p_j.)^2
     - (k - pe (1 - k))^2] / (n (1 - pe)^2)."""
    rows, cols = p.sum(axis=1), p.sum(axis=0)
    chance = float(rows @ cols)
    if math.isclose(chance, 1.0, rel_tol=0.0, abs_tol=1e-15):
        return None, None, None
    kappa = (float(np.trace(p)) - chance) / (1 - chance)
    diagonal = np.diag(p)
    a = float(np.sum(diagonal * (1 - (rows + cols) * (1 - kappa)) ** 2))
    spread = (cols[:, None] + rows[None, :]) ** 2  # (p_.i + p_j.)^2 at [i, j]
    off = p * spread
    b = (1 - kappa) ** 2 * float(off.sum() - np.trace(off))
    c = (kappa - chance * (1 - kappa)) ** 2
    se = math.sqrt(max(a + b - c, 0.0) / n) / (1 - chance)
    return kappa, max(kappa - Z95 * se, -1.0), min(kappa + Z95 * se, 1.0)


def _weighted_kappa(confusion: NDArray[np.float64], power: int) -> float | None:
    """1 - sum(w O) / sum(w E), weights |i - j|^power, E from the margins."""
    ranks = np.arange(len(confusion))
    weights = np.abs(ranks[:, None] - ranks[None, :]).astype(np.float64) ** power
    expected = np.outer(confusion.sum(axis=1), confusion.sum(axis=0)) / confusion.sum()
    disagreement = float((weights * expected).sum())
    if disagreement == 0:
        return None
    return 1.0 - float((weights * confusion).sum()) / disagreement
