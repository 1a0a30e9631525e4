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
from dices_cli.metrics.scoring import confusion_metrics

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


def labelled_batches(
    members: Members, labellings: NDArray[np.intp]
) -> Iterator[tuple[slice, Array]]:
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


def _entropy_bits(distribution: Array) -> Array:
    """Shannon entropy (bits) over the category axis (-2, as in answer counts), 0 log 0 = 0.
    (Summing over a short last axis instead is several times slower.)"""
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(distribution > 0, -distribution * np.log2(distribution), 0.0)
    return terms.sum(axis=-2)


def _divergences(predicted: Array, observed: Array) -> Array:
    """Jensen-Shannon divergence (bits) of predicted [..., category, item] from observed
    [..., category, item] (broadcast): H((p + q) / 2) - (H(p) + H(q)) / 2, which equals the
    relative-entropy form of metrics.scoring.item_divergences to the last bits."""
    predicted = predicted / predicted.sum(axis=-2, keepdims=True)
    middle = _entropy_bits((predicted + observed) / 2)
    return middle - (_entropy_bits(predicted) + _entropy_bits(observed)) / 2


def _binary_entropy_bits(share: Array) -> Array:
    """Entropy (bits) of [1 - share, share], 0 log 0 = 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        yes = np.where(share > 0, share * np.log2(share), 0.0)
        no = np.where(share < 1, (1 - share) * np.log2(1 - share), 0.0)
    return -(yes + no)


class _Cells:
    """Every count a set of the pool's raters can give a conversation, y Yes of m ratings
    (m up to the pool's ratings of it), numbered conversation by conversation.

    A relabelling's sets only ever hold such counts, so a model's divergence from the shares
    is computed once per cell and looked up: per model, one pass over the cells and a gather
    per relabelled set instead of some twenty passes over [relabelling, group, conversation]
    arrays (DICES-990, 10 models, --by rater_race, 1000 permutations: the crowd-share
    test took 9.7 s of CPU computing every divergence, 2.4 s with the table; in-process,
    one run each)."""

    def __init__(self, most: NDArray[np.intp]) -> None:
        sizes = (most + 1) * (most + 2) // 2  # per conversation: (m, y) with 0 <= y <= m <= most
        self.offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.intp)
        top = int(most.max(initial=0))
        ratings = np.repeat(np.arange(top + 1), np.arange(top + 1) + 1)
        yes = np.arange(len(ratings)) - ratings * (ratings + 1) // 2
        self.conversation = np.repeat(np.arange(len(most)), sizes)
        local = np.arange(int(sizes.sum())) - self.offsets[self.conversation]
        self.rated = ratings[local] > 0
        self.share = yes[local] / np.maximum(ratings[local], 1)
        self.entropy = _binary_entropy_bits(self.share)  # H(q), the same for every model

    def of(self, side: Array) -> NDArray[np.int32]:
        """[..., conversation] the cell of each set's counts [..., category, conversation]."""
        ratings = side.sum(axis=-2).astype(np.intp)
        local = ratings * (ratings + 1) // 2 + side[..., YES, :].astype(np.intp)
        return (self.offsets + local).astype(np.int32)

    def divergences(self, probability: Array) -> Array:
        """Per cell, the Jensen-Shannon divergence (bits) of [1 - p, p] from its shares,
        H((p + q) / 2) - (H(p) + H(q)) / 2 (equal to the relative-entropy form of
        metrics.scoring.item_divergences to the last bits); NaN where the model gives no p
        or the cell has no rating."""
        p = probability[self.conversation]
        table = (
            _binary_entropy_bits((p + self.share) / 2)
            - (_binary_entropy_bits(p) + self.entropy) / 2
        )
        return np.where(self.rated, table, np.nan)

    @staticmethod
    def mean(table: Array, sets: NDArray[np.int32]) -> Array:
        """[...] the mean over conversations of table's value of each set's cell, sets
        [..., conversation]; the NaN cells left out."""
        values = table[sets]
        use = ~np.isnan(values)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(use, values, 0.0).sum(axis=-1) / use.sum(axis=-1)


def _jsds(side: Array, predictions: Sequence[Prediction]) -> Array:
    """[row, group, model] mean Jensen-Shannon divergence (bits) of each model's predicted
    distribution of three answers from each set's shares."""
    total = side.sum(axis=-2)
    rated = total > 0
    three = side / np.where(rated, total, 1.0)[..., None, :]  # [..., category, conversation]
    result = np.empty((*rated.shape[:-1], len(predictions)))
    for m, prediction in enumerate(predictions):
        probability = prediction.probability()
        assert prediction.distribution is not None and probability is not None
        predicted = prediction.distribution.T  # [category, conversation]
        use = rated & ~np.isnan(probability)
        divergence = _divergences(predicted, three)
        with np.errstate(invalid="ignore", divide="ignore"):
            result[..., m] = np.where(use, divergence, 0.0).sum(axis=-1) / use.sum(axis=-1)
    return result


def _yes_only(prediction: Prediction) -> Array | None:
    """The probability of Yes the crowd-share rows compare with [not Yes, Yes] (as
    measure.against_shares chooses it: a distribution of No and Yes, else the score),
    normalised as the divergences normalise it, NaN where the model gives no probability;
    None for a distribution of three answers or no probability at all."""
    probability = prediction.probability()
    distribution = prediction.distribution
    if probability is None or (distribution is not None and distribution.shape[1] == 3):
        return None
    if distribution is None:
        return probability
    share = distribution[:, 1] / distribution.sum(axis=1)
    return np.where(np.isnan(probability), np.nan, share)


def _share_differences(
    members: Members, labellings: NDArray[np.intp], predictions: Sequence[Prediction]
) -> Array:
    """[labelling, model, group] the Jensen-Shannon divergence of each model from each
    group's shares minus from the rest's (NaN for a model with labels only)."""
    result = np.full((len(labellings), len(predictions), members.groups), np.nan)
    pool = members.answers.sum(axis=0)
    cells = _Cells(pool.sum(axis=0).astype(np.intp))
    shape = (len(labellings), members.groups, pool.shape[-1])
    inside_cells, outside_cells = np.empty(shape, np.int32), np.empty(shape, np.int32)
    binary = [_yes_only(prediction) for prediction in predictions]
    three = [
        m
        for m, prediction in enumerate(predictions)
        if binary[m] is None and prediction.distribution is not None
    ]
    for rows, inside in labelled_batches(members, labellings):
        outside = pool - inside
        inside_cells[rows], outside_cells[rows] = cells.of(inside), cells.of(outside)
        if three:
            chosen = [predictions[m] for m in three]
            difference = _jsds(inside, chosen) - _jsds(outside, chosen)
            result[rows, three] = np.moveaxis(difference, -1, 1)
    for m, probability in enumerate(binary):
        if probability is not None:
            table = cells.divergences(probability)
            result[:, m] = cells.mean(table, inside_cells) - cells.mean(table, outside_cells)
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
    if reference == "crowd-share":
        return _share_differences(members, labellings, predictions)
    result = np.empty((len(labellings), len(predictions), members.groups))
    pool = members.answers.sum(axis=0)
    for rows, inside in labelled_batches(members, labellings):
        group = _kappas(inside, predictions, ties, threshold)
        rest = _kappas(pool - inside, predictions, ties, threshold)
        result[rows] = np.moveaxis(group - rest, -1, 1)
    return result
