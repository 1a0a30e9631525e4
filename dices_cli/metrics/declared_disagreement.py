"""The compute step of a declared dataset's `group-disagreement`
(sql/declared/group-disagreement.sql): per item, its groups' extremes and a permutation test
of whether the rating depends on the group.

The SQL gives one row per rating of the label: the dataset, the item, the `by` attributes,
the value's rank in its scale (`category`), its position (`number`) and whether it is in
the positive class. Per item, the groups with at least `min_raters` ratings are compared:

    ordinal   Kruskal-Wallis H of the ratings' mid-ranks (ties corrected)
    else      Pearson's chi-square of the groups x values table

Under relabelling (the item's ratings shuffled among the compared groups, sizes kept) the
tie correction and the expected counts stay fixed, so each permutation only needs the
groups' rank sums (H) or their value counts (chi-square): a matrix product per item.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from dices_cli.metrics.disagreement import dataset_rng
from dices_cli.metrics.permutation import benjamini_hochberg
from dices_cli.output import Table

COLUMNS = (
    "dataset", "item_id", "label", "groups", "ratings", "groups_left_out", "ratings_left_out",
    "measure", "highest_group", "highest", "lowest_group", "lowest", "gap", "test",
    "statistic", "p_value", "p_adjusted",
)  # fmt: skip
NUMERIC = frozenset(
    ("groups", "ratings", "groups_left_out", "ratings_left_out", "highest", "lowest", "gap",
     "statistic", "p_value", "p_adjusted")
)  # fmt: skip
# A permuted statistic this close to the observed one counts as equal (float sums).
TOLERANCE = 1e-9


def group_disagreement(table: pa.Table, parameters: dict[str, Any]) -> Table:
    """One row per item (see the module's docstring), sorted as the query says."""
    by: list[str] = parameters["by"]
    ordinal = parameters["kind"] == "ordinal"
    positive = bool(parameters["positive_values"])
    measure = "mean" if ordinal else "share_positive" if positive else None
    rows: list[list[Any]] = []
    if table.num_rows:
        groups = _group_names(table, by)
        dataset = str(table.column("dataset")[0].as_py())
        rng = dataset_rng(parameters["seed"], dataset)
        items = table.column("item_id").to_pylist()
        category = np.asarray(table.column("category").to_numpy(zero_copy_only=False), np.intp)
        number = np.asarray(table.column("number").to_numpy(zero_copy_only=False), np.float64)
        flag = table.column("positive").to_pylist()
        yes = np.array([bool(f) for f in flag], dtype=np.float64)
        starts = [0] + [i for i in range(1, len(items)) if items[i] != items[i - 1]]
        for start, end in zip(starts, [*starts[1:], len(items)], strict=True):
            value = number[start:end] if ordinal else yes[start:end]
            rows.append(
                [dataset, items[start], parameters["label"],
                 *_item(groups[start:end], category[start:end], value, ordinal, measure,
                        parameters, rng)]
            )  # fmt: skip
    p = np.array([np.nan if r[-1] is None else r[-1] for r in rows], dtype=np.float64)
    adjusted = benjamini_hochberg(p)
    for row, q in zip(rows, adjusted, strict=True):
        row.append(None if np.isnan(q) else float(q))
    rows.sort(key=_rank)
    return Table(list(COLUMNS), [c in NUMERIC for c in COLUMNS], [tuple(r) for r in rows])


def _group_names(table: pa.Table, by: list[str]) -> list[str | None]:
    """Each rating's group: its rater's attribute values joined by ' & '; None without one."""
    columns = [table.column(name).to_pylist() for name in by]
    return [
        None if any(v is None for v in values) else " & ".join(map(str, values))
        for values in zip(*columns, strict=True)
    ]


def _item(
    groups: list[str | None],
    category: np.ndarray[Any, Any],
    value: np.ndarray[Any, Any],
    ordinal: bool,
    measure: str | None,
    parameters: dict[str, Any],
    rng: np.random.Generator,
) -> list[Any]:
    """groups ... p_value of one item's ratings."""
    sizes: dict[str, int] = {}
    for group in groups:
        if group is not None:
            sizes[group] = sizes.get(group, 0) + 1
    compared = [g for g in sizes if sizes[g] >= parameters["min_raters"]]
    left_out = [g for g in sizes if sizes[g] < parameters["min_raters"]]
    code = {g: k for k, g in enumerate(compared)}
    kept = np.array([g in code for g in groups])
    codes = np.array([code[g] for g in groups if g in code], dtype=np.intp)
    counts = [len(compared), len(codes), len(left_out), sum(sizes[g] for g in left_out)]
    extremes: list[Any] = [measure, None, None, None, None, None]
    if measure is not None and compared:
        means = np.bincount(codes, weights=value[kept], minlength=len(compared)) / np.bincount(
            codes, minlength=len(compared)
        )
        high, low = int(np.argmax(means)), int(np.argmin(means))
        extremes = [measure, compared[high], float(means[high]), compared[low],
                    float(means[low]), float(means[high] - means[low])]  # fmt: skip
    test: list[Any] = [None, None, None]
    if len(compared) >= 2 and parameters["permutations"] > 0:
        statistic, p = _permutation_test(
            codes, category[kept], value[kept], ordinal, len(compared),
            parameters["permutations"], rng,
        )  # fmt: skip
        test = ["kruskal-wallis" if ordinal else "chi-square", statistic, p]
    return [*counts, *extremes, *test]


def _permutation_test(
    codes: np.ndarray[Any, Any],
    category: np.ndarray[Any, Any],
    value: np.ndarray[Any, Any],
    ordinal: bool,
    groups: int,
    permutations: int,
    rng: np.random.Generator,
) -> tuple[float, float | None]:
    """The observed statistic and its permutation p-value (None when it is undefined:
    every rating the same)."""
    labellings = np.vstack([codes, rng.permuted(np.tile(codes, (permutations, 1)), axis=1)])
    if ordinal:
        statistics = _kruskal_wallis(labellings, value, groups)
    else:
        statistics = _chi_square(labellings, category, groups)
    if statistics is None:
        return float("nan"), None
    observed = statistics[0]
    at_least = np.sum(statistics[1:] >= observed - TOLERANCE * max(1.0, abs(observed)))
    return float(observed), float((1 + at_least) / (1 + permutations))


def _kruskal_wallis(
    labellings: np.ndarray[Any, Any], value: np.ndarray[Any, Any], groups: int
) -> np.ndarray[Any, Any] | None:
    """H (ties corrected) of each row of `labellings` (group codes of the ratings)."""
    from scipy.stats import rankdata, tiecorrect

    ranks = rankdata(value)
    correction = tiecorrect(ranks)
    if correction == 0:
        return None
    n = len(value)
    one_hot = np.zeros((labellings.shape[0], groups, n))
    np.put_along_axis(one_hot, labellings[:, None, :], 1.0, axis=1)
    sizes = one_hot[0].sum(axis=1)
    sums = one_hot @ ranks
    h = 12.0 / (n * (n + 1)) * (sums**2 / sizes).sum(axis=1) - 3 * (n + 1)
    return np.asarray(h / correction)


def _chi_square(
    labellings: np.ndarray[Any, Any], category: np.ndarray[Any, Any], groups: int
) -> np.ndarray[Any, Any] | None:
    """Pearson's chi-square of the groups x values table of each row of `labellings`."""
    values, category = np.unique(category, return_inverse=True)
    if len(values) < 2:
        return None
    one_hot = np.zeros((labellings.shape[0], groups, len(category)))
    np.put_along_axis(one_hot, labellings[:, None, :], 1.0, axis=1)
    observed = one_hot @ np.eye(len(values))[category]
    expected = np.outer(observed[0].sum(axis=1), observed[0].sum(axis=0)) / len(category)
    return np.asarray(((observed - expected) ** 2 / expected).sum(axis=(1, 2)))


def _rank(row: list[Any]) -> tuple[Any, ...]:
    p, gap = row[-1], row[COLUMNS.index("gap")]
    return (p is None, p or 0.0, -(gap or 0.0), str(row[1]))
