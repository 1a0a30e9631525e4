"""What `dices evaluate` says beside its rows: on the screen (a model's coverage, a group too
small for intervals, an interval that does not hold its level) and in a row's
`interval_note`.

The interval notes come from the calibration against a known truth per group size
(docs/metrics.md, "Intervals of evaluate"; bench/calibration_evaluate.py): where a group
row's interval is known to cover less than it says, its row and the screen say so.
"""

from __future__ import annotations

from collections.abc import Sequence

from dices_cli.evaluate.measure import Prediction
from dices_cli.evaluate.references import Votes
from dices_cli.metrics.intervals import MIN_RATERS

# Per reference, what a group row's clustered intervals do not hold.
INTERVAL_NOTES = {
    "crowd-share": "the jsd difference's interval is approximate (wider than 95% needs "
    "when the group's shares match the rest's, narrower when they differ): read it as "
    "rough; the p_value holds",
}


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


def interval_notes(votes: Votes, references: Sequence[str]) -> list[str]:
    """What the screen says of the group rows' intervals that do not hold (interval_note)."""
    return [
        f"{_title(votes)}, {reference} group rows: {INTERVAL_NOTES[reference]} (interval_note)"
        for reference in references
        if reference in INTERVAL_NOTES
    ]


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
