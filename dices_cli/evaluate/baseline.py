"""The human ceiling: K real raters per conversation, scored as if they were a model.

Each draw picks, for every conversation, K of the raters who rated it at random (from the
selected pool); their plurality is the pseudo-model's label (a tie among them is broken at
random: a model must answer) and their shares of answers its distribution. The raters drawn
are left out of the reference they are scored against. Conversations with fewer than K + 1
ratings are not predicted. Metrics are averaged over the draws.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from dices_cli.errors import Option, UsageError
from dices_cli.evaluate.measure import Prediction
from dices_cli.evaluate.references import UNRATED, Mask, Votes

DRAWS = 20  # draws of K raters averaged per baseline
_SPEC = re.compile(r"raters:([1-9][0-9]{0,3})")


def parse_baseline(spec: str) -> int:
    """K from 'raters:K' (K from 1 to 9999)."""
    match = _SPEC.fullmatch(spec.strip())
    if match is None:
        raise UsageError(f"a baseline is raters:K with K a whole number from 1, not {spec!r}")
    return int(match[1])


def baseline_name(k: int) -> str:
    return f"raters:{k}"


@dataclass(frozen=True)
class Draw:
    prediction: Prediction
    kept: Mask  # per rating: not drawn, so part of the reference


def check_drawable(votes: Votes, k: int) -> None:
    """UsageError unless some conversation has more than K ratings: K to draw, and at least
    one left to score them against (naming the largest K that can be drawn)."""
    from dices_cli.families import family_of

    most = int(np.bincount(votes.item, minlength=votes.conversations).max(initial=0))
    if k < most:
        return
    title = family_of(votes.dataset).title_of(votes.dataset)
    fits = f"give raters:{most - 1} or less" if most > 1 else "no baseline can be drawn"
    raise UsageError(
        Option("baseline"),
        f" {baseline_name(k)} needs a conversation with at least {k + 1} ratings ({k} drawn, "
        f"and one left to score them against); the most any conversation of {title} has "
        f"among the selected raters is {most}: {fits}",
    )


def draws(votes: Votes, k: int, count: int, seed: int) -> Iterator[Draw]:
    """`count` draws of K raters per conversation, reproducible from `seed` (UsageError
    when no conversation has more than K ratings: `check_drawable`)."""
    check_drawable(votes, k)
    rng = np.random.default_rng(seed)
    conversations = votes.conversations
    eligible = np.bincount(votes.item, minlength=conversations) > k
    for _ in range(count):
        # Ratings sorted by conversation, in random order within each: the first K are drawn.
        order = np.lexsort((rng.random(len(votes.item)), votes.item))
        ranked = votes.item[order]
        rank = np.arange(len(order)) - np.searchsorted(ranked, ranked)
        drawn = np.zeros(len(order), dtype=bool)
        drawn[order[(rank < k) & eligible[ranked]]] = True
        counts = votes.counts(drawn)
        # Counts are whole numbers: noise below 1 only decides between tied answers.
        label = (counts + rng.random(counts.shape) * 0.5).argmax(axis=0).astype(np.intp)
        label[~eligible] = UNRATED
        distribution = (counts / k).T
        distribution[~eligible] = np.nan
        prediction = Prediction(baseline_name(k), eligible, label, None, distribution)
        yield Draw(prediction, ~drawn)
