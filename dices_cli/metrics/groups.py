"""Every metric of every rater group against the rest of the pool, for many labellings at once.

A labelling assigns each rater to a group. Group counts come from one matrix product of the
labelling's one-hot membership with the raters' one-hot answers, so a batch of permuted
labellings costs one product and a few array passes, never a loop over raters.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from dices_cli.metrics.agreement import (
    Array,
    cross_replication_reliability,
    group_association_index,
    krippendorff_alpha_nominal,
    negentropy,
    normalised_xrr,
    plurality_size,
)
from dices_cli.metrics.distance import Distance, alpha, cross_replication

METRICS = ("irr", "xrr", "xrr_normalised", "gai", "negentropy", "plurality_size")
POOL_METRICS = ("irr", "negentropy", "plurality_size")  # the ones that need no rest
# Count cells (labellings x groups x categories x conversations) per batch: each temporary
# array has the same small size whatever the number of permutations, so that it stays in
# the CPU cache (larger batches are slower; bench/agreement.py).
BATCH_CELLS = 200_000


def _metrics(inside: Array, outside: Array, distance: Distance | None = None) -> Array:
    """inside, outside: [labelling, group, category, conversation]. IRR and XRR with
    `distance` (None: DICES's nominal answers, `agreement`'s own functions)."""

    def irr_of(counts: Array) -> Array:
        return krippendorff_alpha_nominal(counts) if distance is None else alpha(counts, distance)

    def xrr_of(x: Array, y: Array) -> Array:
        if distance is None:
            return cross_replication_reliability(x, y)
        return cross_replication(x, y, distance)

    irr = irr_of(inside)
    if inside.shape[1] == 2:
        # Each group is the other's rest, and XRR is symmetric: half the work, same values.
        rest_irr = irr[:, ::-1]
        xrr = np.repeat(xrr_of(inside[:, :1], outside[:, :1]), 2, axis=1)
    else:
        rest_irr = irr_of(outside)
        xrr = xrr_of(inside, outside)
    return np.stack(
        [
            irr,
            xrr,
            normalised_xrr(xrr, irr, rest_irr),
            group_association_index(irr, xrr),
            negentropy(inside),
            plurality_size(inside),
        ],
        axis=-1,
    )


def group_metrics(
    answers: Array, labellings: NDArray[np.intp], groups: int, distance: Distance | None = None
) -> Array:
    """METRICS of each group against the rest, for each labelling (IRR and XRR with
    `distance`; None: nominal).

    answers: [rater, category, conversation], 1 where the rater gave that answer.
    labellings: [labelling, rater] group numbers 0 .. groups - 1.
    Returns [labelling, group, metric] in METRICS order.
    """
    raters, categories, conversations = answers.shape
    flat = answers.reshape(raters, categories * conversations)
    total = flat.sum(axis=0).reshape(categories, conversations)
    batch = max(1, BATCH_CELLS // (groups * conversations * categories))
    result = np.empty((len(labellings), groups, len(METRICS)))
    for start in range(0, len(labellings), batch):
        chunk = labellings[start : start + batch]
        membership = (chunk[:, None, :] == np.arange(groups)[None, :, None]).astype(np.float64)
        inside = (membership.reshape(-1, raters) @ flat).reshape(
            len(chunk), groups, categories, conversations
        )
        result[start : start + len(chunk)] = _metrics(inside, total - inside, distance)
    return result


def pool_metrics(answers: Array, distance: Distance | None = None) -> Array:
    """POOL_METRICS of all raters together (IRR with `distance`; None: nominal)."""
    counts = answers.sum(axis=0)
    irr = krippendorff_alpha_nominal(counts) if distance is None else alpha(counts, distance)
    return np.array([irr, negentropy(counts), plurality_size(counts)])
