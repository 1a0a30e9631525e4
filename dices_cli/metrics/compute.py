"""The compute step of `dices query agreement`: per-rating rows in, one row per group out.

sql/agreement.sql selects one row per rating (dataset, the group columns, rater_id, item_id
and the answer to the question, ordered by all of them); this module turns each dataset's
rows into a [rater, category, conversation] answer array and measures every group against
the rest of the pool (or the whole pool when no --by is given).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dices_cli.errors import UsageError
from dices_cli.metrics.agreement import Array
from dices_cli.metrics.groups import METRICS, POOL_METRICS, pool_metrics
from dices_cli.metrics.permutation import benjamini_hochberg, permutation_test
from dices_cli.output import Table
from dices_cli.queries.engine import answer_columns
from dices_cli.schema import ANSWER, DATASETS

UNSURE = "Unsure"


@dataclass
class _Ratings:
    """One dataset's ratings. A rater is one rater in one group: with --by phase, a rater
    who rated in two phases is a rater of each."""

    groups: dict[tuple[Hashable, ...], int] = field(default_factory=dict)  # key -> number
    raters: dict[tuple[Any, tuple[Hashable, ...]], int] = field(default_factory=dict)
    conversations: dict[Any, int] = field(default_factory=dict)
    cells: list[tuple[int, int, int]] = field(default_factory=list)  # rater, conversation, answer

    def add(self, rater: Any, key: tuple[Hashable, ...], conversation: Any, answer: int) -> None:
        self.groups.setdefault(key, len(self.groups))
        unit = self.raters.setdefault((rater, key), len(self.raters))
        item = self.conversations.setdefault(conversation, len(self.conversations))
        self.cells.append((unit, item, answer))

    def answers(self, categories: int) -> Array:
        """[rater, category, conversation]: 1 where the rater gave that answer."""
        array = np.zeros((len(self.raters), categories, len(self.conversations)))
        units, items, answers = np.array(self.cells, dtype=np.intp).T
        array[units, answers, items] = 1.0
        return array

    def labels(self) -> NDArray[np.intp]:
        """Each rater's group number."""
        return np.array([self.groups[key] for _, key in self.raters], dtype=np.intp)

    def rater_counts(self) -> list[int]:
        """Distinct rater ids per group, in group order."""
        ids: list[set[Any]] = [set() for _ in self.groups]
        for rater, key in self.raters:
            ids[self.groups[key]].add(rater)
        return [len(group) for group in ids]


def _check(parameters: dict[str, Any], datasets: Sequence[str]) -> None:
    if parameters["permutations"] < 0:
        raise UsageError(f"--permutations must be 0 or more (got {parameters['permutations']})")
    if parameters["seed"] < 0:
        raise UsageError(f"--seed must be 0 or more (got {parameters['seed']})")
    for name in datasets:
        if parameters["question"] not in answer_columns([DATASETS[name]]):
            raise UsageError(
                f"DICES-{name} has no answer column {parameters['question']!r}; "
                "choose another --question or --dataset"
            )


def _read(
    table: Table, by: Sequence[str], question: str, categories: Sequence[str]
) -> dict[str, _Ratings]:
    position = {name: index for index, name in enumerate(table.columns)}
    group_at = [position[name] for name in table.columns if name in by]
    dataset_at, rater_at, item_at = position["dataset"], position["rater_id"], position["item_id"]
    answer_at = position[question]
    code = {answer: index for index, answer in enumerate(categories)}
    ratings: dict[str, _Ratings] = {}
    for row in table.rows:
        per_dataset = ratings.setdefault(row[dataset_at], _Ratings())
        answer = code.get(row[answer_at])
        if answer is not None:  # anything else (NULL, or Unsure with --unsure missing) is missing
            key = tuple(row[i] for i in group_at)
            per_dataset.add(row[rater_at], key, row[item_at], answer)
    return ratings


def _value(number: float) -> float | None:
    return None if np.isnan(number) else float(number)


def compute(table: Table, parameters: dict[str, Any]) -> Table:
    """One row per dataset and group: raters, METRICS, their p-values and BH-adjusted p-values."""
    by: list[str] = parameters["by"]
    categories = (
        ANSWER if parameters["unsure"] == "category" else tuple(a for a in ANSWER if a != UNSURE)
    )
    group_columns = [name for name in table.columns if name in by]
    ratings = _read(table, by, parameters["question"], categories)
    _check(parameters, list(ratings))
    columns = [
        "dataset",
        *group_columns,
        "raters",
        *METRICS,
        *(f"{m}_p" for m in METRICS),
        *(f"{m}_p_bh" for m in METRICS),
    ]
    numeric = [False] * (1 + len(group_columns)) + [True] * (1 + 3 * len(METRICS))
    rows: list[tuple[Any, ...]] = []
    for dataset, per_dataset in ratings.items():
        if not per_dataset.cells:
            continue
        answers = per_dataset.answers(len(categories))
        if not by:
            pool = dict(zip(POOL_METRICS, pool_metrics(answers), strict=True))
            values = [_value(pool[m]) if m in pool else None for m in METRICS]
            rows.append((dataset, len(per_dataset.raters), *values, *[None] * 2 * len(METRICS)))
            continue
        observed, p = permutation_test(
            answers,
            per_dataset.labels(),
            len(per_dataset.groups),
            parameters["permutations"],
            parameters["seed"],
        )
        adjusted = np.column_stack([benjamini_hochberg(p[:, m]) for m in range(len(METRICS))])
        raters = per_dataset.rater_counts()
        for key, group in per_dataset.groups.items():
            cells = [*observed[group], *p[group], *adjusted[group]]
            rows.append((dataset, *key, raters[group], *(_value(c) for c in cells)))
    return Table(columns, numeric, rows)
