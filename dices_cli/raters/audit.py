"""What a rater filter does: who it removes, from which groups, and what it changes in the labels.

Per dataset: raters and ratings kept; agreement with the raters the DICES authors removed
(precision and recall of the filter's removals against theirs); per demographic column,
the removal rate of each group and an exact test of whether removal is independent of the
group; and per conversation, whether its plurality label changes and the total-variation
distance between its answer distributions before and after.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dices_cli.families.schema import DATASETS, PUBLISHED_REMOVED
from dices_cli.output import Table, table_from_rows
from dices_cli.queries.own_sql import internal_sql
from dices_cli.raters.quality import DEMOGRAPHICS, RaterQuality

if TYPE_CHECKING:
    from dices_cli.queries.engine import Session

ALPHA = 0.05  # below this p-value, removal is reported as depending on the group
MISSING_GROUP = "(not given)"
# Relative tolerance when comparing table probabilities, as scipy's fisher_exact uses, so
# that tables as probable as the observed one are not lost to rounding.
TOLERANCE = 1e-7


def exact_independence_p(sizes: Sequence[int], removed: Sequence[int]) -> float:
    """Exact p-value that removal is independent of group: Fisher (2 groups), Freeman-Halton.

    Every table with the observed margins (group sizes, total removed) has the multivariate
    hypergeometric probability prod C(n_i, x_i) / C(N, R); the p-value sums the
    probabilities of the tables no more probable than the observed one. The tables are
    enumerated group by group, the largest group last (its count is what the others leave),
    so DICES pools (at most a few hundred raters in five groups) take milliseconds.
    """
    import numpy as np

    order = np.argsort(np.asarray(sizes), kind="stable")
    n = np.asarray(sizes, dtype=np.int64)[order]
    x = np.asarray(removed, dtype=np.int64)[order]
    total, total_removed = int(n.sum()), int(x.sum())
    log_factorial = np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, total + 1)))))

    def log_comb(size: Any, k: Any) -> Any:
        return log_factorial[size] - log_factorial[k] - log_factorial[size - k]

    observed = float(log_comb(n, x).sum())
    partial_sums = np.zeros(1, dtype=np.int64)
    partial_logs = np.zeros(1)
    for index, size in enumerate(n[:-1]):
        counts = np.arange(size + 1)
        partial_sums = (partial_sums[:, None] + counts).ravel()
        partial_logs = (partial_logs[:, None] + log_comb(size, counts)).ravel()
        room_left = int(n[index + 1 :].sum())
        possible = (partial_sums <= total_removed) & (partial_sums >= total_removed - room_left)
        partial_sums, partial_logs = partial_sums[possible], partial_logs[possible]
    table_logs = partial_logs + log_comb(n[-1], total_removed - partial_sums)
    extreme = table_logs <= observed + np.log1p(TOLERANCE)
    p_value = np.exp(table_logs[extreme] - log_comb(total, total_removed)).sum()
    return float(min(1.0, p_value))


@dataclass(frozen=True)
class GroupRemoval:
    group: str
    raters: int
    removed: int

    @property
    def rate(self) -> float:
        return self.removed / self.raters


@dataclass(frozen=True)
class ColumnAudit:
    """Removal per group of one demographic column, and the exact test of independence."""

    column: str
    groups: list[GroupRemoval]
    p_value: float | None  # None when there is one group only: nothing to compare

    @property
    def test(self) -> str | None:
        if self.p_value is None:
            return None
        return "Fisher" if len(self.groups) == 2 else "Freeman-Halton"

    @property
    def depends_on_group(self) -> bool:
        return self.p_value is not None and self.p_value < ALPHA

    def record(self) -> dict[str, Any]:
        return {
            "column": self.column,
            "test": self.test,
            "p_value": self.p_value,
            "depends_on_group": self.depends_on_group,
            "groups": [
                {"group": g.group, "raters": g.raters, "removed": g.removed, "removal_rate": g.rate}
                for g in self.groups
            ],
        }


@dataclass(frozen=True)
class DatasetAudit:
    dataset: str
    raters: int
    raters_kept: int
    published: int  # raters of this pool the DICES authors removed
    published_verified: bool  # whether that list is the authors' own
    removed_and_published: int
    ratings: int
    ratings_kept: int
    conversations: int
    conversations_without_ratings: int
    plurality_changed: int  # among conversations that still have ratings
    mean_tvd: float | None
    max_tvd: float | None
    columns: list[ColumnAudit]

    @property
    def raters_removed(self) -> int:
        return self.raters - self.raters_kept

    @property
    def precision(self) -> float | None:
        """Share of this filter's removals that the DICES authors also removed."""
        return self.removed_and_published / self.raters_removed if self.raters_removed else None

    @property
    def recall(self) -> float | None:
        """Share of the DICES authors' removals that this filter also removes."""
        return self.removed_and_published / self.published if self.published else None


def _column_audit(
    dataset: str, column: str, pool: Sequence[RaterQuality], kept: set[tuple[str, int]]
) -> ColumnAudit | None:
    values = [r.demographics.get(column) for r in pool]
    if all(v is None for v in values):
        return None  # the dataset has no such column
    sizes = Counter(v or MISSING_GROUP for v in values)
    removed = Counter(
        (r.demographics.get(column) or MISSING_GROUP) for r in pool if r.key not in kept
    )
    order = {v: i for i, v in enumerate(DATASETS[dataset].column(column).values)}
    names = sorted(sizes, key=lambda g: (order.get(g, len(order)), g))
    groups = [GroupRemoval(g, sizes[g], removed[g]) for g in names]
    p_value = (
        exact_independence_p([g.raters for g in groups], [g.removed for g in groups])
        if len(groups) > 1
        else None
    )
    return ColumnAudit(column, groups, p_value)


def audit(
    session: Session, raters: Sequence[RaterQuality], kept: set[tuple[str, int]]
) -> list[DatasetAudit]:
    """The audit of keeping `kept` out of `raters` (the whole pool of the session's datasets)."""
    keys = sorted(kept)
    changes = {
        row["dataset"]: row
        for row in session.execute(
            internal_sql("filter-audit-conversations"),
            {"datasets": [k[0] for k in keys], "rater_ids": [k[1] for k in keys]},
        ).records()
    }
    audits = []
    for dataset in sorted({r.dataset for r in raters}):
        pool = [r for r in raters if r.dataset == dataset]
        removed = {r.rater_id for r in pool if r.key not in kept}
        published = PUBLISHED_REMOVED[dataset] & {r.rater_id for r in pool}
        change = changes[dataset]
        columns = [_column_audit(dataset, c, pool, kept) for c in DEMOGRAPHICS]
        audits.append(
            DatasetAudit(
                dataset=dataset,
                raters=len(pool),
                raters_kept=len(pool) - len(removed),
                published=len(published),
                published_verified=DATASETS[dataset].removed_list_verified,
                removed_and_published=len(removed & published),
                ratings=int(change["ratings"]),
                ratings_kept=int(change["ratings_kept"]),
                conversations=change["conversations"],
                conversations_without_ratings=change["conversations_without_ratings"],
                plurality_changed=change["plurality_changed"],
                mean_tvd=change["mean_tvd"],
                max_tvd=change["max_tvd"],
                columns=[c for c in columns if c is not None],
            )
        )
    return audits


def audit_table(audits: Sequence[DatasetAudit], filter_description: str) -> Table:
    """The audit as one row per dataset, for --audit (the group tests nested as records)."""
    records = [
        {
            "dataset": a.dataset,
            "filter": filter_description,
            "raters": a.raters,
            "raters_kept": a.raters_kept,
            "raters_removed": a.raters_removed,
            "ratings": a.ratings,
            "ratings_kept": a.ratings_kept,
            "published_removed": a.published,
            "removed_and_published": a.removed_and_published,
            "precision": a.precision,
            "recall": a.recall,
            "conversations": a.conversations,
            "conversations_without_ratings": a.conversations_without_ratings,
            "plurality_changed": a.plurality_changed,
            "mean_tvd": a.mean_tvd,
            "max_tvd": a.max_tvd,
            "groups": [c.record() for c in a.columns],
        }
        for a in audits
    ]
    return table_from_rows(list(records[0]), [tuple(r.values()) for r in records])
