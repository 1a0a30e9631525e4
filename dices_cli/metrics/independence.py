"""Tests of independence of answer and rater group, one contingency table per conversation.

The tables of many conversations come stacked: `counts` [row, category] holds each group's
answer counts, and `starts` the first row of each conversation (rows of one conversation are
consecutive). Answer categories no one chose are dropped from a conversation's table.

Which test (the rule the query's explanation documents):
  - one group: nothing to compare, no test (NaN);
  - one answer left: the table is the only one with its margins, exact p = 1;
  - 2x2, 2x3 or 3x2: exact (Fisher's test for 2x2, Freeman-Halton's extension beyond it):
    every table with the observed margins is enumerated (about 700 for 2x3 at 123 ratings);
  - larger, where Cochran's rule holds (every expected count >= 1, at least 80% >= 5):
    Pearson's chi-square test without continuity correction, vectorised over all those
    conversations;
  - larger, where it does not: a Monte Carlo test conditional on both margins, as the
    exact tests are. A 5x3 table of 123 ratings has 10^7 to 10^8 tables with its margins:
    too many to enumerate, so random tables are drawn from the same law instead (each a
    random reshuffle of the conversation's answers across its ratings), and Pearson's
    statistic ranks them. With no draws asked for, such a conversation has no test.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from dices_cli.metrics.agreement import Array
from dices_cli.metrics.permutation import RELATIVE_TIE as STATISTIC_TIE

Counts = NDArray[np.int64]
EXACT = "exact"
CHI_SQUARE = "chi-square"
MONTE_CARLO = "monte-carlo"
# Cochran's rule (Cochran 1954, Biometrics 10:417) for trusting the chi-square law of
# Pearson's statistic: every expected count at least 1, and at least 80% of them at least 5.
COCHRAN_LEAST = 1.0
COCHRAN_MOST = 5.0
COCHRAN_SHARE = (4, 5)  # 80%, as a fraction: compared in whole numbers
# Random tables (draws x conversations) a Monte Carlo batch holds: a few arrays of 8 MB.
DRAW_CELLS = 1_000_000
# A table at most this much more probable than the observed one counts as just as probable:
# tables of equal probability differ in the last bits once computed (R's fisher.test uses the
# same 1 + 1e-7).
RELATIVE_TIE = 1e-7
# Grid cells (tables x first-row values) enumerated per batch: a few MB of temporaries.
BATCH_CELLS = 200_000


def _log_factorials(n: int) -> Array:
    """log k! for k = 0..n, each from lgamma (exact to rounding, unlike a running sum)."""
    return np.array([math.lgamma(k + 1) for k in range(n + 1)])


def exact_p_values(tables: Counts) -> Array:
    """Two-sided exact p-values of 2x3 tables [table, row, column] (a 2x2 table is a 2x3
    one with an empty column): the probability, under independence with the margins fixed,
    of a table no more probable than the observed one.

    With the margins fixed, a table is decided by its first row x, and
    P(x) = prod_j C(col_j, x_j) / C(n, row_0) (the multivariate hypergeometric law). Every
    x of every table is enumerated at once, on a grid over the two smaller columns' cells.
    """
    order = np.argsort(tables.sum(axis=1), axis=1, kind="stable")  # largest column last
    tables = np.take_along_axis(tables, order[:, None, :], axis=2)
    columns = tables.sum(axis=1)  # [table, column]
    first_row = tables[:, 0].sum(axis=1)
    log_factorial = _log_factorials(int(columns.sum(axis=1).max()))

    def log_choose(whole: Counts, part: Counts) -> Array:
        """log C(whole, part), -inf where part is not in 0..whole: no such table."""
        inside = (part >= 0) & (part <= whole)
        part = np.where(inside, part, 0)
        logs = log_factorial[whole] - log_factorial[part] - log_factorial[whole - part]
        return np.where(inside, logs, -np.inf)

    log_tables = log_choose(columns.sum(axis=1), first_row)  # log C(n, row_0)
    observed = log_choose(columns, tables[:, 0]).sum(axis=1) - log_tables
    threshold = observed + math.log1p(RELATIVE_TIE)
    # Batches of tables of similar grid sizes, each padded to its largest.
    by_size = np.argsort((columns[:, 0] + 1) * (columns[:, 1] + 1), kind="stable")
    p_values = np.empty(len(tables))
    start = 0
    while start < len(tables):
        rest = by_size[start:]
        cells = (
            np.arange(1, len(rest) + 1)
            * np.maximum.accumulate(columns[rest, 0] + 1)
            * np.maximum.accumulate(columns[rest, 1] + 1)
        )
        batch = rest[: max(1, int(np.searchsorted(cells, BATCH_CELLS, side="right")))]
        start += len(batch)
        col = columns[batch]
        x0 = np.arange(col[:, 0].max() + 1)
        x1 = np.arange(col[:, 1].max() + 1)
        rest_of_row = first_row[batch, None] - np.arange(len(x0) + len(x1) - 1)  # x2 by x0 + x1
        log_p = (
            log_choose(col[:, 0, None], x0[None, :])[:, :, None]
            + log_choose(col[:, 1, None], x1[None, :])[:, None, :]
            + log_choose(col[:, 2, None], rest_of_row)[:, x0[:, None] + x1[None, :]]
            - log_tables[batch, None, None]
        )
        extreme = np.where(log_p <= threshold[batch, None, None], np.exp(log_p), 0.0)
        # Summed in order (running sums), so the padding's zeros change no bit: a table's
        # p-value does not depend on the tables it is batched with.
        p_values[batch] = np.cumsum(np.cumsum(extreme, axis=2)[:, :, -1], axis=1)[:, -1]
    return np.minimum(1.0, p_values)


def chi_square_survival(statistic: Array, dof: NDArray[np.int64]) -> Array:
    """P(X >= statistic) for X chi-square with `dof` (whole, >= 1) degrees of freedom.

    The regularised upper incomplete gamma Q(dof/2, s/2) in closed form, y = s/2, a = 0 for
    even dof and 1/2 for odd: Q(m + a, y) = [erfc(sqrt y) if a] + e^-y sum_{i<m} y^(i+a) /
    Gamma(i+a+1) with m = dof // 2. The terms are summed in logs (large statistics do not
    underflow before the end); every term is positive, so nothing cancels.
    """
    y = np.asarray(statistic, dtype=np.float64)[None, :] / 2
    odd = (dof % 2 == 1)[None, :]
    terms = np.arange(int(dof.max() // 2) if len(dof) else 0)[:, None]  # [term, conversation]
    power = terms + np.where(odd, 0.5, 0.0)
    log_gamma = np.where(
        odd,
        np.array([math.lgamma(i + 1.5) for i in terms[:, 0]]).reshape(-1, 1),
        np.array([math.lgamma(i + 1.0) for i in terms[:, 0]]).reshape(-1, 1),
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        log_power = np.where(power == 0, 0.0, power * np.log(y))  # y^0 = 1, even at y = 0
    log_terms = np.where(terms < (dof // 2)[None, :], -y + log_power - log_gamma, -np.inf)
    top = log_terms.max(axis=0, initial=-np.inf)
    finite = np.isfinite(top)
    shift = np.where(finite, top, 0.0)
    # in order, as in exact_p_values: the padding terms (-inf) change no bit
    in_order = np.cumsum(np.exp(log_terms - shift), axis=0)[-1] if len(terms) else 0.0
    summed = np.where(finite, np.exp(shift) * in_order, 0.0)
    erfc = np.array([math.erfc(math.sqrt(v)) for v in y[0]])
    return np.asarray(np.minimum(1.0, np.where(odd[0], erfc, 0.0) + summed))


def _expected(counts: Counts, starts: NDArray[np.intp]) -> tuple[Array, NDArray[np.bool_]]:
    """Each cell's expected count under independence, row total x column total / total, and
    whether its answer was chosen in its conversation (the cells of its table)."""
    conversation = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, len(counts))))
    column_totals = np.add.reduceat(counts, starts, axis=0)[conversation]
    row_totals = counts.sum(axis=1, keepdims=True)
    total = column_totals.sum(axis=1, keepdims=True)
    return row_totals * column_totals / total, column_totals > 0


def chi_square_statistics(counts: Counts, starts: NDArray[np.intp]) -> Array:
    """Pearson's statistic sum (observed - expected)^2 / expected of each conversation's
    table, over the categories someone chose."""
    expected, chosen = _expected(counts, starts)
    with np.errstate(divide="ignore", invalid="ignore"):
        cells = np.where(chosen, (counts - expected) ** 2 / expected, 0.0)
    return np.add.reduceat(cells.sum(axis=1), starts)


def cochran_holds(counts: Counts, starts: NDArray[np.intp]) -> NDArray[np.bool_]:
    """Whether each conversation's table meets Cochran's rule: every expected count >= 1 and
    at least 80% of them >= 5 (over the categories someone chose)."""
    expected, chosen = _expected(counts, starts)
    too_small = np.add.reduceat((chosen & (expected < COCHRAN_LEAST)).sum(axis=1), starts)
    large = np.add.reduceat((chosen & (expected >= COCHRAN_MOST)).sum(axis=1), starts)
    cells = np.add.reduceat(chosen.sum(axis=1), starts)
    share, whole = COCHRAN_SHARE
    return np.asarray((too_small == 0) & (whole * large >= share * cells))


def monte_carlo_p_values(
    counts: Counts, starts: NDArray[np.intp], draws: int, rng: np.random.Generator
) -> Array:
    """Monte Carlo p-values of the tables' independence, conditional on both margins:
    (k + 1) / (draws + 1), k the random tables whose Pearson statistic is at least the
    observed one's (a relative 1e-12 below counts: equal statistics summed in another order
    differ in the last bits). Never 0. draws >= 1.

    A random table is the conversation's answers reshuffled across its ratings, the
    multivariate hypergeometric law of the exact tests: group by group, how many of the
    answers not yet dealt out it gets, one hypergeometric draw per answer but the last
    (which takes the rest). Each conversation's largest group comes last and takes what is
    left, without a draw. Every conversation and draw is dealt at once: the loops run over
    group and answer positions only, in batches of about `DRAW_CELLS` tables, and the
    conversations are ordered by their number of groups, most first, so that those with a
    group at a position are a slice (no copies).

    Pearson's statistic is n (sum_ij O_ij^2 / (r_i c_j) - 1), and n and the margins are the
    same in every random table, so the tables are ranked by the sum, computed for the
    observed table by the same operations in the same order (equal tables, equal bits).
    """
    groups = np.diff(np.append(starts, len(counts)))
    conversation = np.repeat(np.arange(len(starts)), groups)
    position = np.arange(len(counts)) - starts[conversation]  # of a group in its conversation
    ranked = np.argsort(-groups, kind="stable")  # conversations, most groups first
    rank = np.empty_like(ranked)
    rank[ranked] = np.arange(len(ranked))
    # [conversation, group, answer], each conversation's groups by size, the largest last
    tables = np.zeros((len(starts), int(groups.max()), counts.shape[1]), dtype=np.int64)
    tables[rank[conversation], position] = counts[np.lexsort((counts.sum(axis=1), conversation))]
    sizes = tables.sum(axis=2)  # [conversation, group], 0 past its groups
    columns = tables.sum(axis=1)  # [conversation, answer]
    # 1 / (r_i c_j); 0 for no group or an unchosen answer, whose cells are always 0
    margins = sizes[:, :, None] * columns[:, None, :]
    weights = np.where(margins > 0, 1.0 / np.maximum(margins, 1), 0.0)
    # conversations [0, having[g]) have a group at position g
    having = [int((groups > g).sum()) for g in range(tables.shape[1])] + [0]
    answers = columns.shape[1]

    observed = np.zeros(len(starts))
    for g in range(tables.shape[1]):
        for j in range(answers):
            cells = tables[: having[g], g, j]
            observed[: having[g]] += cells * cells * weights[: having[g], g, j]
    threshold = observed * (1 - STATISTIC_TIE)

    at_least = np.zeros(len(starts), dtype=np.int64)
    batch = max(1, DRAW_CELLS // len(starts))
    for done in range(0, draws, batch):
        size = min(batch, draws - done)
        left = [np.repeat(columns[None, :, j], size, axis=0) for j in range(answers)]
        sums = np.zeros((size, len(starts)))
        for g in range(tables.shape[1]):
            drawn, last = having[g + 1], having[g]  # [drawn, last): g is the largest group
            to_deal = np.repeat(sizes[None, :drawn, g], size, axis=0)
            for j in range(answers):
                if j < answers - 1:
                    others = sum(left[k][:, :drawn] for k in range(j + 1, answers))
                    dealt = rng.hypergeometric(left[j][:, :drawn], others, to_deal)
                    to_deal -= dealt
                else:
                    dealt = to_deal
                left[j][:, :drawn] -= dealt
                sums[:, :drawn] += dealt * dealt * weights[:drawn, g, j]
                rest = left[j][:, drawn:last]
                sums[:, drawn:last] += rest * rest * weights[drawn:last, g, j]
        at_least += (sums >= threshold).sum(axis=0)
    return np.asarray((at_least[rank] + 1) / (draws + 1))


def independence_tests(
    counts: Counts, starts: NDArray[np.intp], draws: int, rng: np.random.Generator
) -> tuple[Array, Array]:
    """Each conversation's p-value (NaN for one group, or a Monte Carlo test of no draws)
    and the test that gave it (None where there is no p-value). counts: [row, category]
    with 3 categories; `draws` and `rng` are the Monte Carlo tests' (docs: module)."""
    groups = np.diff(np.append(starts, len(counts)))
    column_totals = np.add.reduceat(counts, starts, axis=0)
    answers = (column_totals > 0).sum(axis=1)
    compared = groups >= 2
    p_values = np.full(len(starts), np.nan)
    tests = np.full(len(starts), None, dtype=object)

    one_answer = compared & (answers == 1)
    p_values[one_answer], tests[one_answer] = 1.0, EXACT
    # Two groups: their rows as they are (an empty answer column changes no probability).
    two_groups = compared & (groups == 2) & (answers >= 2)
    three_by_two = (groups == 3) & (answers == 2)  # turned into 2 answers x 3 groups
    rows = counts[starts[three_by_two, None] + np.arange(3)]  # [conversation, group, answer]
    chosen = np.nonzero(column_totals[three_by_two] > 0)[1].reshape(-1, 1, 2)
    tables = np.concatenate(
        [
            counts[starts[two_groups, None] + np.arange(2)],
            np.take_along_axis(rows, chosen, axis=2).transpose(0, 2, 1),
        ]
    )
    exact = np.concatenate([np.flatnonzero(two_groups), np.flatnonzero(three_by_two)])
    if len(exact):
        p_values[exact], tests[exact] = exact_p_values(tables), EXACT

    larger = compared & (answers >= 2) & ~two_groups & ~three_by_two
    chi_square = larger & cochran_holds(counts, starts)
    if chi_square.any():
        statistics = chi_square_statistics(counts, starts)[chi_square]
        dof = (groups[chi_square] - 1) * (answers[chi_square] - 1)
        p_values[chi_square] = chi_square_survival(statistics, dof)
        tests[chi_square] = CHI_SQUARE
    monte_carlo = larger & ~chi_square
    if monte_carlo.any() and draws > 0:
        chosen_rows = np.repeat(monte_carlo, groups)
        sub_starts = np.cumsum(np.concatenate([[0], groups[monte_carlo][:-1]]))
        p_values[monte_carlo] = monte_carlo_p_values(counts[chosen_rows], sub_starts, draws, rng)
        tests[monte_carlo] = MONTE_CARLO
    return p_values, tests
