"""The compute step of `dices query agreement`: per-rating rows in, one row per group out.

sql/agreement.sql selects one row per rating (dataset, the group columns, rater_id, item_id
and the answer to the question); this module turns each dataset's rows into a
[rater, category, conversation] answer array and measures every group against the rest of
the pool (or the whole pool when no --by is given). The rows stay in Arrow and numpy
arrays: a million ratings cost a few sorts, not a loop in Python.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from dices_cli.errors import Option, UsageError
from dices_cli.families.schema import ANSWER, DATASETS, answer_columns
from dices_cli.metrics.agreement import Array
from dices_cli.metrics.distance import Distance
from dices_cli.metrics.groups import METRICS, POOL_METRICS, pool_metrics
from dices_cli.metrics.permutation import benjamini_hochberg, permutation_test
from dices_cli.output import Table

UNSURE = "Unsure"
Codes = NDArray[np.intp]


@dataclass(frozen=True)
class Ratings:
    """One dataset's counted ratings. A rater is one rater in one group: with --by phase, a
    rater who rated in two phases is a rater of each. Groups and raters are numbered in
    sorted order (groups as the SQL sorts them: ENUM order, NULL last; raters by id)."""

    keys: list[tuple[Any, ...]]  # each group's values of the group columns
    labels: Codes  # each rater's group number
    answers: Array  # [rater, category, conversation]: 1 where the rater gave that answer

    def rater_counts(self) -> list[int]:
        """Distinct rater ids per group, in group order."""
        return [int(n) for n in np.bincount(self.labels, minlength=len(self.keys))]


# Arrays are read from their Arrow buffers: pyarrow's own conversions (to_numpy, and
# pyarrow.compute) import pandas when it is installed, a cost to every command that
# computes (bench/startup.py).


def array_values(array: pa.Array) -> NDArray[Any]:
    """A fixed-width array's values, whatever lies under its NULLs."""
    data = np.frombuffer(array.buffers()[1], dtype=array.type.to_pandas_dtype())
    return data[array.offset : array.offset + len(array)]


def _nulls(array: pa.Array) -> NDArray[np.bool_]:
    validity = array.buffers()[0]
    if validity is None:
        return np.zeros(len(array), dtype=bool)
    bits = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")
    return bits[array.offset : array.offset + len(array)] == 0


def enum_codes(column: pa.ChunkedArray) -> tuple[Codes, list[Any]]:
    """Codes of an ENUM column (Arrow dictionary-encoded) in the ENUM's order, NULL coded
    after every value; and the value of each code, None for NULL."""
    encoded = column.unify_dictionaries().combine_chunks()
    values = encoded.dictionary.to_pylist()
    codes = array_values(encoded.indices).astype(np.intp)
    codes[_nulls(encoded.indices)] = len(values)
    return codes, [*values, None]


def _text_codes(column: pa.ChunkedArray) -> tuple[Codes, list[Any]]:
    """Codes of a text column (rater_raw_race) in sorted order, as SQL sorts text (by code
    point), NULL last; and the value of each code."""
    cells = column.to_pylist()
    values = [*sorted({cell for cell in cells if cell is not None}), None]
    code = {value: number for number, value in enumerate(values)}
    return np.fromiter((code[cell] for cell in cells), dtype=np.intp, count=len(cells)), values


def group_codes(table: pa.Table, group_columns: Sequence[str]) -> tuple[Codes, list[list[Any]]]:
    """One code per row for its combination of group values, sorting as the combinations
    sort; and each column's values, to decode it (see group_key)."""
    combined = np.zeros(table.num_rows, dtype=np.intp)
    values = []
    for name in group_columns:
        column = table.column(name)
        is_enum = pa.types.is_dictionary(column.type)
        codes, column_values = (enum_codes if is_enum else _text_codes)(column)
        combined = combined * len(column_values) + codes
        values.append(column_values)
    return combined, values


def group_key(combined: int, values: list[list[Any]]) -> tuple[Any, ...]:
    key = []
    for column_values in reversed(values):
        combined, code = divmod(combined, len(column_values))
        key.append(column_values[code])
    return tuple(reversed(key))


def dense_codes(codes: Codes) -> tuple[Codes, Codes]:
    """np.unique(codes, return_inverse=True) for small non-negative codes: by counting
    rather than sorting."""
    present = np.flatnonzero(np.bincount(codes))
    rank = np.zeros(present[-1] + 1, dtype=np.intp)
    rank[present] = np.arange(len(present))
    return present, rank[codes]


def counted_ratings(
    group: Codes,
    values: list[list[Any]],
    rater: Codes,
    item: Codes,
    answer: Codes,
    categories: int,
) -> Ratings:
    groups, group_of_row = dense_codes(group)
    rater_ids, rater_of_row = np.unique(rater, return_inverse=True)
    units, unit_of_row = dense_codes(group_of_row * len(rater_ids) + rater_of_row)
    items, item_of_row = np.unique(item, return_inverse=True)
    answers = np.zeros((len(units), categories, len(items)))
    answers[unit_of_row, answer, item_of_row] = 1.0
    labels = units // len(rater_ids)
    return Ratings([group_key(int(g), values) for g in groups], labels, answers)


def _read(
    table: pa.Table, group_columns: Sequence[str], question: str, categories: Sequence[str]
) -> dict[str, Ratings | None]:
    """Each dataset's counted ratings, None for a dataset with none. An answer that is not
    a category (NULL, or Unsure with --unsure missing) is missing."""
    group, values = group_codes(table, group_columns)
    answer_codes, answer_values = enum_codes(table.column(question))
    category = np.array([categories.index(v) if v in categories else -1 for v in answer_values])
    answer = category[answer_codes]
    datasets, names = enum_codes(table.column("dataset"))
    rater = array_values(table.column("rater_id").combine_chunks())
    item = array_values(table.column("item_id").combine_chunks())
    ratings: dict[str, Ratings | None] = {}
    for code in np.unique(datasets):
        counted = (datasets == code) & (answer >= 0)
        ratings[names[code]] = (
            counted_ratings(
                group[counted],
                values,
                rater[counted],
                item[counted],
                answer[counted],
                len(categories),
            )
            if counted.any()
            else None
        )
    return ratings


def _check(parameters: dict[str, Any], datasets: Sequence[str]) -> None:
    for name in datasets:
        if parameters["question"] not in answer_columns([DATASETS[name]]):
            raise UsageError(
                f"DICES-{name} has no answer column {parameters['question']!r}; choose another ",
                Option("question"),
                " or ",
                Option("dataset"),
            )


def _value(number: float) -> float | None:
    return None if np.isnan(number) else float(number)


def compute(table: pa.Table, parameters: dict[str, Any]) -> Table:
    """One row per dataset and group: raters, METRICS, their p-values, BH-adjusted p-values
    and null ranges (low and high of each metric in turn)."""
    by: list[str] = parameters["by"]
    categories = (
        ANSWER if parameters["unsure"] == "category" else tuple(a for a in ANSWER if a != UNSURE)
    )
    group_columns = [name for name in table.column_names if name in by]
    ratings = _read(table, group_columns, parameters["question"], categories)
    _check(parameters, list(ratings))
    columns = ["dataset", *group_columns, "raters", *METRICS, *TEST_COLUMNS]
    numeric = [False] * (1 + len(group_columns)) + [True] * (1 + len(METRICS) + len(TEST_COLUMNS))
    rows: list[tuple[Any, ...]] = []
    for dataset, per_dataset in ratings.items():
        if per_dataset is not None:
            rows += group_rows(dataset, per_dataset, bool(by), parameters)
    return Table(columns, numeric, rows)


TEST_COLUMNS = [  # NULL for the whole pool, which is not tested
    *(f"{m}_p" for m in METRICS),
    *(f"{m}_p_bh" for m in METRICS),
    *(f"{m}_null_{end}" for m in METRICS for end in ("low", "high")),
]


def group_rows(
    dataset: str,
    per_dataset: Ratings,
    grouped: bool,
    parameters: dict[str, Any],
    distance: Distance | None = None,
) -> list[tuple[Any, ...]]:
    """One dataset's rows: each group's raters, METRICS and TEST_COLUMNS (`grouped`), or
    the whole pool's; IRR and XRR with `distance` (None: nominal)."""
    raters = per_dataset.rater_counts()
    if not grouped:
        pool = dict(zip(POOL_METRICS, pool_metrics(per_dataset.answers, distance), strict=True))
        values = [_value(pool[m]) if m in pool else None for m in METRICS]
        return [(dataset, *raters, *values, *[None] * len(TEST_COLUMNS))]
    test = permutation_test(
        per_dataset.answers,
        per_dataset.labels,
        len(per_dataset.keys),
        parameters["permutations"],
        parameters["seed"],
        distance,
    )
    adjusted = np.column_stack([benjamini_hochberg(test.p[:, m]) for m in range(len(METRICS))])
    null_range = np.stack([test.null_low, test.null_high], axis=-1)  # [group, metric, end]
    rows = []
    for group, key in enumerate(per_dataset.keys):
        cells = [*test.observed[group], *test.p[group], *adjusted[group]]
        cells += list(null_range[group].ravel())
        rows.append((dataset, *key, raters[group], *(_value(c) for c in cells)))
    return rows
