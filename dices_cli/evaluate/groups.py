"""Group rows of `dices evaluate`: is a model closer to one rater group than to the rest?

A group's reference (its plurality, its shares) comes from fewer raters than the rest's, so
it is noisier, and any model agrees less with it: under shuffled demographics the kappa of
a 5-rater group is 0.20 below the rest's on average. Two resampling schemes answer for that
(docs/evaluate.md, "Group rows"):

- the test permutes the raters' group labels across raters, every group keeping its size
  (as `dices query agreement` does), and recomputes the difference group - rest of the
  headline metric for each relabelling: its null distribution carries the small-group
  effect, and its mean is the difference expected for a group of that size;
- the intervals resample conversations, and leave out one rater at a time (the
  delete-one-rater jackknife, dices_cli.metrics.intervals): `left_out_batches` gives the
  groups' counts without each member, which the caller scores.

A member is a (rater, group) pair: a rater who rated in two phases is a member of each phase
group (`--by phase`), as in `dices query agreement`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
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
# Cells per gather of the crowd-share test (labellings x groups x conversations).
GATHER_CELLS = 20_000


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


def left_out_batches(members: Members) -> Iterator[tuple[slice, Array]]:
    """The delete-one-rater jackknife's group counts, a batch of members at a time: per
    member left out, [member, group, category, conversation] the groups' answer counts
    without that member's answers."""
    groups = members.counts(_one_hot(members.group[None, :], members.groups))[0]
    cells = members.groups * members.answers[0].size
    size = max(1, BATCH_CELLS // cells)
    for start in range(0, len(members.group), size):
        rows = slice(start, start + size)
        batch = np.repeat(groups[None], len(members.group[rows]), axis=0)
        own = members.group[rows]
        batch[np.arange(len(own)), own] -= members.answers[rows]
        yield rows, batch


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
    relative-entropy form of metrics.scoring.category_divergences to the last bits."""
    predicted = predicted / predicted.sum(axis=-2, keepdims=True)
    middle = _entropy_bits((predicted + observed) / 2)
    return middle - (_entropy_bits(predicted) + _entropy_bits(observed)) / 2


def _distances(predicted: Array, observed: Array) -> Array:
    """Total-variation distance of predicted [..., category, item] from observed (broadcast),
    half the L1 distance, as metrics.scoring.category_divergences."""
    return np.abs(predicted - observed).sum(axis=-2) / 2


def answer_variances(prediction: Prediction, counts: Array) -> dict[str, float]:
    """`answer_variance` of each figure whose answers' noise both jackknives count and is
    taken off once: jsd and tvd. (cross_entropy's is 6-9% of its variance, and taking it off
    left a 5-rater group's cross_entropy at 0.86 coverage of a known truth: it is kept.)"""
    return {
        "jsd": answer_variance(prediction, counts),
        "tvd": answer_variance(prediction, counts, _distances),
    }


def answer_variance(
    prediction: Prediction,
    counts: Array,
    per_conversation: Callable[[Array, Array], Array] = (_divergences),
) -> float:
    """V_answers of a model's jsd (or another mean over conversations of a function
    `per_conversation` of the predicted and the observed shares) from the shares of a set's
    answer `counts` [category, conversation] (dices_cli.metrics.intervals): the part of its
    variance that the conversations' and the raters' jackknives both count. Per
    conversation with m answers, k_c of category c, its value v_c with one answer of c left
    out: (m - 1) / m * sum_c k_c (v_c - mean)^2 (the delete-one-answer jackknife); summed
    over the conversations the figure averages, over their number squared. The shares are
    those of measure.against_shares: [not Yes, Yes] against a probability of Yes, else the
    three answers against a distribution of three. NaN for a model without a probability."""
    yes_only = _yes_only(prediction)
    probability = prediction.probability()
    if probability is None:
        return math.nan
    if yes_only is None:
        assert prediction.distribution is not None
        predicted, observed = prediction.distribution.T, counts
    else:
        predicted = np.stack([1 - yes_only, yes_only])
        observed = np.stack([counts.sum(axis=0) - counts[YES], counts[YES]])
    ratings = observed.sum(axis=0)
    used = (ratings > 0) & ~np.isnan(probability)
    fewer = np.maximum(ratings - 1, 1)
    left = np.stack(
        [
            per_conversation(predicted, (observed - np.eye(len(observed))[:, c, None]) / fewer)
            for c in range(len(observed))
        ]
    )
    with np.errstate(invalid="ignore"):
        left = np.where(observed > 0, left, 0.0)  # a category no one gave leaves nothing
        mean = (observed * left).sum(axis=0) / np.maximum(ratings, 1)
        spread = (ratings - 1) / np.maximum(ratings, 1) * (observed * (left - mean) ** 2).sum(0)
    conversations = int(used.sum())
    return float(spread[used].sum()) / conversations**2 if conversations else math.nan


def rater_spread(members: Members) -> float:
    """sigma^2, the variance of the raters' effects on the logit of Yes within their
    groups, for `quadratic_scale`: a member's share of Yes r over their c answered
    conversations, over the mean w = pi (1 - pi) of those conversations' pool shares pi,
    is its effect a = r / w (to first order); sigma^2 is the variance of a about its
    group's mean (pooled over the groups), less its binomial noise, the mean of
    1 / (c w); at least 1e-6. NaN with no two members in a group."""
    answered = members.answers.sum(axis=1) > 0
    yes = members.answers[:, YES, :]
    ratings = answered.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        pool = np.where(ratings > 0, yes.sum(axis=0) / ratings, np.nan)
        bernoulli = np.nan_to_num(pool * (1 - pool))
        conversations = answered.sum(axis=1)
        mean_w = (answered * bernoulli).sum(axis=1) / conversations
        effect = yes.sum(axis=1) / conversations / mean_w
    kept = (conversations > 0) & (mean_w > 0)
    squares, members_kept, groups = 0.0, 0, 0
    for group in range(members.groups):
        mine = effect[kept & (members.group == group)]
        if mine.size:
            squares += float(((mine - mine.mean()) ** 2).sum())
            members_kept += mine.size
            groups += 1
    if members_kept <= groups:
        return math.nan
    noise = float((1 / (conversations[kept] * mean_w[kept])).mean())
    return max(squares / (members_kept - groups) - noise, 1e-6)


def quadratic_scale(
    prediction: Prediction, counts: Array, pool: Array, spread: float, raters: int
) -> float:
    """s^2 = C2 sigma^2 / n of a group's jsd (dices_cli.metrics.intervals.
    curved_interval): against [not Yes, Yes], the jsd moves with the group's mean effect u
    on the logit of Yes as F + C2 (u - u*)^2 near its minimum u*, with C2 = 1/2 mean over
    conversations of f''(s) w^2 (f the divergence of the model's p from the share s, at
    the group's share clipped to [1 / 2m, 1 - 1 / 2m] of its m ratings; w = pi (1 - pi)
    of the pool's share pi: ds / du). `counts` and `pool`: the group's and the pool's
    answer counts [category, conversation]; `spread`: `rater_spread`'s sigma^2; `raters`:
    n, the group's members. NaN for a model without a probability of Yes, a distribution
    of three answers or fewer than two raters."""
    probability = _yes_only(prediction)
    if probability is None:
        return math.nan
    ratings, pool_ratings = counts.sum(axis=0), pool.sum(axis=0)
    used = (ratings > 0) & ~np.isnan(probability)
    m, yes = ratings[used], counts[YES][used]
    share = np.clip(yes / m, 0.5 / m, 1 - 0.5 / m)
    pi = pool[YES][used] / pool_ratings[used]
    middle = (probability[used] + share) / 2
    curvature = (-0.25 / (middle * (1 - middle)) + 0.5 / (share * (1 - share))) / math.log(
        2
    )  # f'' of H((p + s) / 2) - (H(p) + H(s)) / 2 in s, H in bits
    if not used.any() or raters < 2:
        return math.nan
    return 0.5 * float((curvature * (pi * (1 - pi)) ** 2).mean()) * spread / raters


def group_scale(
    prediction: Prediction, members: Members, counts: Array, pool: Array, group: int
) -> float:
    """`quadratic_scale` of `members`' `group`, whose answer counts are `counts`."""
    raters = int((members.group == group).sum())
    return quadratic_scale(prediction, counts, pool, rater_spread(members), raters)


def _binary_entropy_bits(share: Array) -> Array:
    """Entropy (bits) of [1 - share, share], 0 log 0 = 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        yes = np.where(share > 0, share * np.log2(share), 0.0)
        no = np.where(share < 1, (1 - share) * np.log2(1 - share), 0.0)
    return -(yes + no)


class _Cells:
    """The counts a set of the pool's raters can give a conversation, y Yes of m ratings
    (m up to the pool's ratings of it), numbered conversation by conversation; and, once
    the relabellings' sets are all seen (`of`), the cells they hold numbered densely
    (`number`).

    A model's divergence from a set's shares depends on the set through its cell alone, so
    it is computed once per cell the sets hold, for all models, and gathered per set:
    instead of some twenty passes over [relabelling, group, conversation] arrays per model,
    one gather. Faster than every divergence computed per set, and than a table of every
    possible cell, most of which no set holds (bench/evaluate.py). Only the groups' cells
    are held: a rest's cell follows from its group's (the pool minus the group)."""

    def __init__(self, most: NDArray[np.intp]) -> None:
        sizes = (most + 1) * (most + 2) // 2  # per conversation: (m, y) with 0 <= y <= m <= most
        self.offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.intp)
        top = int(most.max(initial=0))
        self._ratings = np.repeat(np.arange(top + 1), np.arange(top + 1) + 1)  # per local number
        self._held = np.zeros(int(sizes.sum()), dtype=bool)

    def of(self, side: Array) -> NDArray[np.int32]:
        """[..., conversation] the cell of each set's counts [..., category, conversation],
        remembered as held."""
        ratings = side.sum(axis=-2).astype(np.intp)
        local = ratings * (ratings + 1) // 2 + side[..., YES, :].astype(np.intp)
        cells = (self.offsets + local).astype(np.int32)
        self._held[cells] = True
        return cells

    def number(self, pool: Array) -> HeldCells:
        """The held cells, numbered densely in cell order, each with its rest's cell: the
        pool's counts `pool` [category, conversation] minus the set's."""
        held = np.flatnonzero(self._held)
        conversation = np.searchsorted(self.offsets, held, side="right") - 1
        local = held - self.offsets[conversation]
        ratings = self._ratings[local]
        yes = local - ratings * (ratings + 1) // 2
        ratings = np.stack([ratings, pool.sum(axis=0)[conversation] - ratings])  # set, rest
        yes = np.stack([yes, pool[YES][conversation] - yes])
        numbers = np.cumsum(self._held, dtype=np.int32) - 1
        share = yes / np.maximum(ratings, 1)
        return HeldCells(numbers, conversation, ratings > 0, share, _binary_entropy_bits(share))


@dataclass(frozen=True)
class HeldCells:
    """The cells the relabellings' groups hold, numbered densely; each with the cell of its
    rest (the pool without the group), as side 1 of the [side, held cell] arrays."""

    numbers: NDArray[np.int32]  # per cell of _Cells: its dense number (held cells only)
    conversation: NDArray[np.intp]  # per held cell
    rated: Mask  # [side, held cell]: m > 0
    share: Array  # [side, held cell]: y / m, the share of Yes (0 where m = 0)
    entropy: Array  # [side, held cell]: H(q) of its share q

    def divergences(self, probability: Array, entropy: Array) -> Array:
        """[side, held cell] the Jensen-Shannon divergence (bits) of [1 - p, p] from the
        shares, H((p + q) / 2) - (H(p) + H(q)) / 2 (equal to the relative-entropy form of
        metrics.scoring.category_divergences to the last bits); 0 where the model gives no
        p (probability per conversation NaN; H(p) its `entropy`) or the cell has no rating
        (left out of the means: `defined`)."""
        p = probability[self.conversation]
        table = _binary_entropy_bits((p + self.share) / 2)
        table -= (entropy[self.conversation] + self.entropy) / 2
        return np.where(self.rated & ~np.isnan(p), table, 0.0)

    def defined(self, numbers: NDArray[np.intp], has_p: NDArray[np.float32]) -> Array:
        """[..., side, model] per group of held cells `numbers` [..., conversation] and its
        rest: the conversations where it has a rating and the model a p (has_p
        [conversation, model], 1 where it has): a product, in float32 (half the bytes;
        counts up to 2^24 are exact)."""
        counts = [
            self.rated[side][numbers].reshape(-1, numbers.shape[-1]).astype(np.float32) @ has_p
            for side in (0, 1)
        ]
        stacked = np.stack(counts, axis=1).astype(np.float64)
        return stacked.reshape(*numbers.shape[:-1], 2, has_p.shape[1])


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


class _ShareTest:
    """The crowd-share rows' test: [labelling, model, group] the Jensen-Shannon divergence
    of each model from each group's shares minus from the rest's (NaN for a model with
    labels only), fed the relabellings' counts a batch at a time (`add`)."""

    def __init__(
        self, members: Members, labellings: NDArray[np.intp], predictions: Sequence[Prediction]
    ) -> None:
        self.predictions = predictions
        self.result = np.full((len(labellings), len(predictions), members.groups), np.nan)
        pool = members.answers.sum(axis=0)
        self.cells = _Cells(pool.sum(axis=0).astype(np.intp))
        self.shape = (len(labellings), members.groups, pool.shape[-1])
        self.pool = pool
        self.inside = np.empty(self.shape, np.int32)  # the groups' cells (their rests': HeldCells)
        self.yes_only = [_yes_only(prediction) for prediction in predictions]
        self.three = [
            m
            for m, prediction in enumerate(predictions)
            if self.yes_only[m] is None and prediction.distribution is not None
        ]

    def add(self, rows: slice, inside: Array, outside: Array) -> None:
        """The counts of a batch of labellings' groups (`inside`) and rests (`outside`)."""
        self.inside[rows] = self.cells.of(inside)
        if self.three:
            chosen = [self.predictions[m] for m in self.three]
            difference = _jsds(inside, chosen) - _jsds(outside, chosen)
            self.result[rows, self.three] = np.moveaxis(difference, -1, 1)

    def differences(self) -> Array:
        given = [(m, p) for m, p in enumerate(self.yes_only) if p is not None]
        if not given:
            return self.result
        binary = [m for m, _ in given]
        held = self.cells.number(self.pool)
        probabilities = np.stack([probability for _, probability in given])
        # [held cell, side, model]: a group's and its rest's values for every model in one
        # row, gathered at once, instead of a gather per model and side from its own table
        # (the rest's cells numbered apart), which costs a third more CPU for many models
        # and permutations (bench/evaluate.py). The sums over conversations then run along a
        # strided axis, in another order: differences move by up to 7e-16.
        table = np.stack(
            [
                held.divergences(probability, _binary_entropy_bits(probability))
                for probability in probabilities
            ],
            axis=-1,
        )
        table = np.ascontiguousarray(np.moveaxis(table, 0, 1)).reshape(table.shape[1], -1)
        has_p = (~np.isnan(probabilities)).T.astype(np.float32)  # [conversation, model]
        sums = np.empty((*self.shape[:-1], 2, len(binary)))  # [labelling, group, side, model]
        defined = np.empty_like(sums)
        # A few labellings at a time: the gathers' indices and results stay a few MB.
        step = max(1, GATHER_CELLS // (self.shape[1] * self.shape[2]))
        for start in range(0, self.shape[0], step):
            rows = slice(start, start + step)
            numbers = np.take(held.numbers, self.inside[rows]).astype(np.intp)
            gathered = np.take(table, numbers, axis=0).sum(axis=-2)
            sums[rows] = gathered.reshape(sums[rows].shape)
            defined[rows] = held.defined(numbers, has_p)
        with np.errstate(invalid="ignore", divide="ignore"):  # NaN where nothing is defined
            means = np.moveaxis(sums / defined, -2, 0)
        self.result[:, binary] = np.moveaxis(means[0] - means[1], -1, 1)
        return self.result


def permuted_differences(
    members: Members,
    labellings: NDArray[np.intp],
    predictions: Sequence[Prediction],
    references: Sequence[str],
    ties: str,
    threshold: float,
) -> dict[str, Array]:
    """Per reference: [labelling, model, group] the headline metric of each model against
    each group minus against the rest of the pool, under each labelling of the members:
    kappa against the crowd label (reference "crowd"), Jensen-Shannon divergence from the
    shares ("crowd-share"). The relabellings' counts are made once for both."""
    pool = members.answers.sum(axis=0)
    kappas = (
        np.empty((len(labellings), len(predictions), members.groups))
        if "crowd" in references
        else None
    )
    shares = _ShareTest(members, labellings, predictions) if "crowd-share" in references else None
    for rows, inside in labelled_batches(members, labellings):
        outside = pool - inside
        if kappas is not None:
            group = _kappas(inside, predictions, ties, threshold)
            rest = _kappas(outside, predictions, ties, threshold)
            kappas[rows] = np.moveaxis(group - rest, -1, 1)
        if shares is not None:
            shares.add(rows, inside, outside)
    result = {}
    if kappas is not None:
        result["crowd"] = kappas
    if shares is not None:
        result["crowd-share"] = shares.differences()
    return result
