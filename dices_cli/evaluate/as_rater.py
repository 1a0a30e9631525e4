"""`dices evaluate --as-rater`: each model's labels as one more rater beside the human raters.

Per model: its cross-replication reliability (xrr) with the whole pool and with each group
of the `--by` columns, the raters' own alpha (irr) and xrr / irr, with `agreement`'s
permutation tests for the groups (dices_cli.metrics.judge_rater); for several models, how
alike their errors against the crowd label are, and the effective number of independent
judges. docs/evaluate.md, "Judges as raters".
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from dices_cli.evaluate.evaluation import Evaluation, Settings, aligned_predictions
from dices_cli.evaluate.groups import members_of
from dices_cli.evaluate.references import CATEGORIES, UNRATED, YES, Votes, crowd_binary
from dices_cli.metrics.judge_rater import (
    FIGURES,
    beside,
    error_correlation,
    judge_counts,
    judge_test,
)
from dices_cli.metrics.permutation import benjamini_hochberg
from dices_cli.output import Table

if TYPE_CHECKING:
    from dices_cli.evaluate.predictions import Predictions

COLUMNS = [
    "dataset",
    "model",
    "other",
    "group",
    "raters",
    "figure",
    "n",
    "value",
    "null_low",
    "null_high",
    "p_value",
    "p_adjusted",
]
TEXT_COLUMNS = frozenset({"dataset", "model", "other", "group", "figure"})
COLUMN_HELP = {
    "dataset": "The dataset (350, 990).",
    "model": "The judge (the file's model column); empty on the judges' joint rows.",
    "other": "error_correlation rows: the second judge of the pair.",
    "group": "The rater group (its values of the group columns, joined by /); empty for "
    "the whole pool.",
    "raters": "The group's raters (the pool's on the pool and joint rows).",
    "figure": "xrr: cross-replication reliability of the judge's labels with the raters' "
    "answers (the judge as one more rater); irr: the raters' own Krippendorff's alpha; "
    "xrr_over_irr: xrr / irr, 1 when the judge agrees with the group as well as its raters "
    "agree with each other; error_rate: share of conversations where the judge's label "
    "differs from the crowd's (the pool's plurality, ties as evaluate rules them); "
    "error_correlation: Pearson correlation "
    "of two judges' errors over the conversations both judged; mean_error_correlation: its "
    "mean over the pairs; effective_judges: n / (1 + (n - 1) * mean_error_correlation).",
    "n": "Conversations measured (effective_judges: the judges).",
    "value": "The figure.",
    "null_low/null_high": "Group rows: the 2.5th and 97.5th percentiles of the figure over "
    "the relabellings of the raters (group sizes kept): what as many raters drawn at random "
    "would give.",
    "p_value": "Group rows: two-sided permutation p-value ((k + 1) / (N + 1)).",
    "p_adjusted": "p_value adjusted over the groups (Benjamini-Hochberg), per judge and figure.",
}


def _number(value: Any) -> float | None:
    number = float(value)
    return None if math.isnan(number) else number


def evaluate_as_rater(votes: Votes, predictions: Predictions, settings: Settings) -> Evaluation:
    """Every figure of every model of `predictions` as a rater of `votes`' dataset, per group
    of `votes`' groups when settings.by names columns."""
    aligned = aligned_predictions(predictions.of(votes.dataset), votes)
    numeric = [name not in TEXT_COLUMNS for name in COLUMNS]
    if not aligned:  # -d all: no model predicts this dataset
        return Evaluation(Table(COLUMNS, numeric, []), [], [], [])
    models = [p.model for p in aligned]
    labels = np.array([p.answer(settings.threshold) for p in aligned], dtype=np.intp)
    judges = judge_counts(labels, CATEGORIES)
    pool = votes.counts()
    rated = pool.sum(axis=0) > 0
    judged = (labels != UNRATED) & rated
    rows: list[tuple[Any, ...]] = []
    everyone = votes.pool_raters()
    for j, values in enumerate(beside(judges, pool)):
        for f, figure in enumerate(FIGURES):
            n = int(judged[j].sum()) if figure != "irr" else int(rated.sum())
            rows.append(
                (votes.dataset, models[j], None, None, everyone, figure, n, _number(values[f]))
                + (None,) * 4
            )
    if settings.by:
        rows += _group_rows(votes, models, judges, labels, settings)
    crowd = crowd_binary(pool, settings.ties)
    compared = (labels != UNRATED) & crowd.defined
    errors = error_correlation((labels == YES) != crowd.unsafe, compared)
    for j, model in enumerate(models):
        rows.append(
            (
                votes.dataset,
                model,
                None,
                None,
                everyone,
                "error_rate",
                int(errors.judged[j]),
                _number(errors.error_rate[j]),
                *((None,) * 4),
            )
        )
    for i in range(len(models)):
        for j in range(i + 1, len(models)):
            rows.append(
                (
                    votes.dataset,
                    models[i],
                    models[j],
                    None,
                    everyone,
                    "error_correlation",
                    int(errors.pairs[i, j]),
                    _number(errors.correlation[i, j]),
                    *((None,) * 4),
                )
            )
    summary = [_summary_line(votes, models, rows)]
    if len(models) >= 2:
        pairs = len(models) * (len(models) - 1) // 2
        joint = (votes.dataset, None, None, None, everyone)
        rows.append((*joint, "mean_error_correlation", pairs, _number(errors.mean), *[None] * 4))
        rows.append(
            (*joint, "effective_judges", len(models), _number(errors.effective), *[None] * 4)
        )
        summary.append(
            f"{len(models)} judges on DICES-{votes.dataset}: mean error correlation "
            f"{errors.mean:.3f}, as many independent judges as {errors.effective:.2f}"
        )
    return Evaluation(Table(COLUMNS, numeric, rows), [], [], summary)


def _group_rows(
    votes: Votes, models: list[str], judges: Any, labels: Any, settings: Settings
) -> list[tuple[Any, ...]]:
    """Each judge beside each group: FIGURES, null ranges, p-values and BH over the groups."""
    members = members_of(votes)
    test = judge_test(
        judges, members.answers, members.group, members.groups, settings.permutations, settings.seed
    )
    counts = votes.group_counts()
    group_rated = counts.sum(axis=1) > 0  # [group, conversation]
    raters = votes.group_raters()
    rows = []
    for j, model in enumerate(models):
        adjusted = np.column_stack(
            [benjamini_hochberg(test.p[j, :, f]) for f in range(len(FIGURES))]
        )
        for g, key in enumerate(votes.group_keys):
            group = "/".join(str(value) for value in key)
            both = int((group_rated[g] & (labels[j] != UNRATED)).sum())
            for f, figure in enumerate(FIGURES):
                n = both if figure != "irr" else int(group_rated[g].sum())
                cells = (test.observed, test.null_low, test.null_high, test.p)
                rows.append(
                    (
                        votes.dataset,
                        model,
                        None,
                        group,
                        raters[g],
                        figure,
                        n,
                        *tuple(_number(array[j, g, f]) for array in cells),
                        _number(adjusted[g, f]),
                    )
                )
    return rows


def _summary_line(votes: Votes, models: list[str], rows: list[tuple[Any, ...]]) -> str:
    """For a person: each judge's xrr with the pool, on the scale of the raters' alpha."""
    pool = {(row[1], row[5]): row[7] for row in rows if row[3] is None and row[5] in FIGURES}
    said = []
    for model in models:
        xrr, relative = pool[model, "xrr"], pool[model, "xrr_over_irr"]
        shown = "undefined" if xrr is None else f"{xrr:.3f}"
        ratio = "" if relative is None else f" ({relative:.2f} of the raters' own alpha)"
        said.append(f"{model} {shown}{ratio}")
    return f"judges as raters on DICES-{votes.dataset}, xrr with the pool: " + "; ".join(said)
