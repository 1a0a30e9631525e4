"""Group rows of `dices evaluate`: is a model closer to one rater group than to the rest?

A group's reference (its plurality, its shares) comes from fewer raters than the rest's, so
it is noisier, and any model agrees less with it: under shuffled demographics the kappa of
a 5-rater group is 0.20 below the rest's on average. Two resampling schemes answer for that
(docs/evaluate.md, "Group rows"):

- the test permutes the raters' group labels across raters, every group keeping its size
  (as `dices query agreement` does), and recomputes the difference group - rest of the
  headline metric for each relabelling: its null distribution carries the small-group
  effect, and its mean is the difference expected for a group of that size;
- the intervals resample raters within their groups (`rater_weights`) as well as
  conversations: `crossed_counts` gives each rater draw's group counts, which the caller
  scores on conversation resamples.

A member is a (rater, group) pair: a rater who rated in two phases is a member of each phase
group (`--by phase`), as in `dices query agreement`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from dices_cli.evaluate.measure import Prediction
from dices_cli.evaluate.references import CATEGORIES, UNRATED, YES, Mask, Votes, crowd_binary
from dices_cli.metrics.agreement import Array
from dices_cli.metrics.scoring import confusion_metrics, item_divergences

# Group count cells (rows x groups x categories x conversations) per batch of relabellings:
# each temporary is a few MB whatever the number of permutations.
BATCH_CELLS = 2_000_000


@dataclass(frozen=True)
class Members:
    """One dataset's raters as members of their groups, with their answers."""

    group: NDArray[np.intp]  # per member: its group
    answers: Array  # [member, category, conversation]: 1 where the member gave that answer
    groups: int

    def counts(self, membership: Array) -> Array:
        """[row, group, category, conversation] answer counts of the members that
        `membership` [row, group, member] weighs (one-hot for a labelling, resample counts
        for a rater draw)."""
        rows, groups, members = membership.shape
        flat = self.answers.reshape(members, -1)
        counts = membership.reshape(rows * groups, members) @ flat
        return counts.reshape(rows, groups, *self.answers.shape[1:])


def members_of(votes: Votes, kept: Mask | None = None) -> Members:
    """The members of `votes`' groups, with the answers of the ratings `kept` selects (all)."""
    assert votes.rater is not None, "groups are of raters"
    raters = int(votes.rater.max(initial=0)) + 1
    pairs, member = np.unique(votes.group * raters + votes.rater, return_inverse=True)
    chosen = np.ones(len(member), dtype=bool) if kept is None else kept
    n = votes.conversations
    cells = (member[chosen] * CATEGORIES + votes.answer[chosen]) * n + votes.item[chosen]
    answers = np.bincount(cells, minlength=len(pairs) * CATEGORIES * n).astype(np.float64)
    return Members(
        (pairs // raters).astype(np.intp),
        answers.reshape(len(pairs), CATEGORIES, n),
        len(votes.group_keys),
    )


def _one_hot(labellings: NDArray[np.intp], groups: int) -> Array:
    """[labelling, group, member] membership of labellings [labelling, member]."""
    return (labellings[:, None, :] == np.arange(groups)[None, :, None]).astype(np.float64)


def crossed_counts(members: Members, rater_draws: NDArray[np.int32]) -> Array:
    """[draw, group, category, conversation] counts of each group's raters as drawn:
    rater_draws [draw, member] counts how often each member is in the draw."""
    membership = _one_hot(members.group[None, :], members.groups)
    return members.counts(membership * rater_draws[:, None, :].astype(np.float64))


def _batches(members: Members, labellings: NDArray[np.intp]) -> Iterator[tuple[slice, Array]]:
    """The group counts of the labellings, a batch of rows at a time."""
    cells = members.groups * members.answers[0].size
    size = max(1, BATCH_CELLS // cells)
    for start in range(0, len(labellings), size):
        rows = slice(start, start + size)
        yield rows, members.counts(_one_hot(labellings[rows], members.groups))


def _kappas(side: Array, predictions: Sequence[Prediction], ties: str, threshold: float) -> Array:
    """[row, group, model] Cohen's kappa of each model against each set's crowd label, on
    the conversations the model predicts and the label defines (as evaluate's rows)."""
    reference = crowd_binary(side, ties)  # [row, group, conversation]
    shape = reference.unsafe.shape
    unsafe = (reference.defined & reference.unsafe).reshape(-1, shape[-1]).astype(np.float64)
    safe = (reference.defined & ~reference.unsafe).reshape(-1, shape[-1]).astype(np.float64)
    said = [prediction.answer(threshold) for prediction in predictions]
    yes = np.column_stack([answer == YES for answer in said]).astype(np.float64)
    no = np.column_stack([(answer != YES) & (answer != UNRATED) for answer in said])
    tp, fn = unsafe @ yes, unsafe @ no.astype(np.float64)
    fp, tn = safe @ yes, safe @ no.astype(np.float64)
    kappa = confusion_metrics(tp, fp, fn, tn)["kappa"]
    return kappa.reshape(*shape[:-1], len(predictions))


def _jsds(side: Array, predictions: Sequence[Prediction]) -> Array:
    """[row, group, model] mean Jensen-Shannon divergence (bits) of each model's predicted
    distribution from each set's shares of answers, as evaluate's crowd-share rows measure
    it (NaN for a model with labels only)."""
    total = side.sum(axis=-2)
    rated = total > 0
    observed = np.moveaxis(side / np.where(rated, total, 1.0)[..., None, :], -2, -1)
    result = np.full((*rated.shape[:-1], len(predictions)), np.nan)
    for m, prediction in enumerate(predictions):
        probability = prediction.probability()
        if probability is None:
            continue
        predicted = prediction.distribution
        shares = observed
        if predicted is None or predicted.shape[1] == 2:
            if predicted is None:
                predicted = np.column_stack([1 - probability, probability])
            share_yes = observed[..., YES]
            shares = np.stack([1 - share_yes, share_yes], axis=-1)
        use = rated & ~np.isnan(probability)
        divergence = np.zeros(use.shape)
        items = np.broadcast_to(np.arange(len(probability)), use.shape)[use]
        divergence[use] = item_divergences(predicted[items], shares[use])[:, 2]
        with np.errstate(invalid="ignore", divide="ignore"):
            result[..., m] = divergence.sum(axis=-1) / use.sum(axis=-1)
    return result


def permuted_differences(
    members: Members,
    labellings: NDArray[np.intp],
    predictions: Sequence[Prediction],
    reference: str,
    ties: str,
    threshold: float,
) -> Array:
    """[labelling, model, group] the headline metric of each model against each group minus
    against the rest of the pool, under each labelling of the members: kappa against the
    crowd label (reference "crowd"), Jensen-Shannon divergence from the shares
    ("crowd-share")."""
    result = np.empty((len(labellings), len(predictions), members.groups))
    pool = members.answers.sum(axis=0)
    for rows, inside in _batches(members, labellings):
        outside = pool - inside
        if reference == "crowd":
            group = _kappas(inside, predictions, ties, threshold)
            rest = _kappas(outside, predictions, ties, threshold)
        else:
            group, rest = _jsds(inside, predictions), _jsds(outside, predictions)
        result[rows] = np.moveaxis(group - rest, -1, 1)
    return result
