"""What `dices evaluate` says beside its rows: on the screen (a model's coverage, a group too
small for intervals) and in a row's `interval_note` (why it has no interval).

Every interval of a group of MIN_RATERS raters or more holds its level against a known
truth (docs/metrics.md, "Intervals of evaluate"; bench/calibration_evaluate.py), so a row
with an interval needs no note.
"""

from __future__ import annotations

from collections.abc import Sequence

from dices_cli.evaluate.measure import Prediction
from dices_cli.evaluate.references import Votes
from dices_cli.metrics.intervals import MIN_RATERS

# A group row's interval_note where it has no interval (as the share queries say it).
FEW_RATERS = f"fewer than {MIN_RATERS} raters"


def _title(votes: Votes) -> str:
    from dices_cli.families import family_of

    return family_of(votes.dataset).title_of(votes.dataset)


def few_raters_note(votes: Votes, by: Sequence[str], group: int) -> str:
    """What the screen says of a group of fewer than MIN_RATERS raters."""
    keys = zip(by, votes.group_keys[group], strict=True)
    name = ", ".join(f"{column}={value}" for column, value in keys)
    raters = votes.group_raters()[group]
    return (
        f"{_title(votes)}: {name} has {raters} "
        f"rater{'s' * (raters != 1)}, fewer than {MIN_RATERS}: its intervals are left empty "
        "(few_raters), as no interval holds its level for so few raters; its p-value holds"
    )


def coverage_note(prediction: Prediction, votes: Votes) -> str:
    """What a model leaves out: of the dataset, and of each split where it has splits."""
    covered = int(prediction.covered.sum())
    per_split = ""
    if votes.split is not None:
        parts = []
        for split, size in votes.split_sizes.items():
            predicted = int((prediction.covered & (votes.split == split)).sum())
            parts.append(f"{split} {predicted} of {size} ({predicted / size:.1%})")
        per_split = f": {', '.join(parts)}"
    return (
        f"model {prediction.model!r} predicts {covered} of the {votes.total} {votes.unit} of "
        f"{_title(votes)} ({covered / votes.total:.1%})"
        f"{per_split}; its metrics use those only"
    )
