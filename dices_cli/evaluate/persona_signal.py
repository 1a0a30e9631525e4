"""Does a persona carry any group signal at all? A persona run against its two nulls.

Asked before any per-group figure of a persona file (docs/evaluate.md, "Personas against
their nulls"), after Beck et al. (2024) and Orlikowski et al. (2025), who score persona
prompting against the same prompt without a persona and find the persona often adds little:

- **persona labels shuffled across groups.** The statistic is the difference correlation
  of dices_cli.evaluate.personas (over the cells (conversation, group): the real group's
  share of Yes minus the rest's, against the simulated group's unsafe share minus the other
  simulated groups' mean, weighted by their real groups' raters). Its null shuffles, within
  each conversation, which simulated group's prediction stands for which real group: exact
  when the judge ignores the persona (its answers on a conversation are then exchangeable
  across personas), whatever the raters do. The between-group spread of the simulated
  shares cannot be tested this way: a shuffle within a conversation leaves it unchanged.
- **no persona.** The same prompt without a persona (a second predictions file, one row per
  conversation) predicts every group with one share. `fit_persona` is the mean squared
  difference between each simulated group's unsafe share and its real group's share of
  Yes, `fit_no_persona` the same with the no-persona share for every group, and
  `fit_gain` = fit_no_persona - fit_persona, above 0 when the personas fit their groups
  better: its interval and test are Student's t over conversations of each conversation's
  gain (conversations are independent draws of the judge; the raters' shares are held fixed).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from dices_cli.errors import DicesError, Option, UsageError
from dices_cli.evaluate.evaluation import Evaluation, Settings
from dices_cli.evaluate.measure import Prediction
from dices_cli.evaluate.personas import correlation_rows, real_shares, simulated_shares
from dices_cli.evaluate.references import Votes
from dices_cli.metrics.agreement import Array
from dices_cli.metrics.permutation import two_sided_p_values
from dices_cli.metrics.student_t import t_quantile, two_sided_tail

if TYPE_CHECKING:
    from dices_cli.evaluate.predictions import Predictions

SIGNAL = "persona_signal"
FITS = ("fit_persona", "fit_no_persona", "fit_gain")
FIGURE_HELP = {
    SIGNAL: "Does the persona carry any group signal? The difference correlation, tested by "
    "shuffling within each conversation which simulated group stands for which real group "
    "(null: its mean over the shuffles).",
    "fit_persona": "Mean squared difference of each simulated group's unsafe share from its "
    "real group's share of Yes (with a no-persona file).",
    "fit_no_persona": "The same for the no-persona run's share, for every group.",
    "fit_gain": "fit_no_persona - fit_persona (above 0: the personas fit their groups "
    "better); interval and p-value by Student's t over conversations.",
}
# Persona shuffles (shuffles x groups x conversations) per batch.
BATCH_CELLS = 2_000_000


def weighted_differences(simulated: Array, raters: Array) -> Array:
    """[..., group, conversation] each group's value minus the other groups' mean weighted
    by `raters` [group] (NaN values left out of the mean)."""
    defined = ~np.isnan(simulated)
    weight = defined * raters[:, None]
    weighted = np.where(defined, simulated, 0.0) * weight
    with np.errstate(invalid="ignore", divide="ignore"):
        rest = (weighted.sum(axis=-2, keepdims=True) - weighted) / (
            weight.sum(axis=-2, keepdims=True) - weight
        )
    return simulated - rest


def cells(values: Array) -> Array:
    """[..., group, conversation] as [..., cell], a conversation's groups side by side."""
    return np.swapaxes(values, -1, -2).reshape(*values.shape[:-2], -1)


def persona_shuffles(simulated: Array, shuffles: int, seed: int) -> Array:
    """[shuffle, group, conversation]: per shuffle and conversation, the simulated groups'
    values in a random order (each permutation of the groups equally likely)."""
    rng = np.random.default_rng(seed)
    keys = rng.random((shuffles, *simulated.shape))
    order = np.argsort(keys, axis=1)
    return np.take_along_axis(np.broadcast_to(simulated, keys.shape), order, axis=1)


def signal_test(
    simulated: Array, counts: Array, raters: Array, shuffles: int, seed: int
) -> tuple[float, int, float, float]:
    """The difference correlation of `simulated` [group, conversation] with the real groups
    (answer counts [group, category, conversation], `raters` per group), the cells it uses,
    its mean over the persona shuffles and their two-sided p-value ((k + 1) / (N + 1);
    NaN without shuffles)."""
    own, rest = real_shares(counts)
    real = cells(own - rest)
    observed = cells(weighted_differences(simulated, raters))
    pearson, _ = correlation_rows(real, observed[None])
    used = int((~np.isnan(real) & ~np.isnan(observed)).sum())
    if shuffles == 0:
        return float(pearson[0]), used, math.nan, math.nan
    batch = max(1, BATCH_CELLS // simulated.size)
    null = np.empty(shuffles)
    for start in range(0, shuffles, batch):
        count = min(batch, shuffles - start)
        shuffled = persona_shuffles(simulated, count, seed + start)
        null[start : start + count] = correlation_rows(
            real, cells(weighted_differences(shuffled, raters))
        )[0]
    p = two_sided_p_values(pearson, null[:, None])[0]
    with warnings.catch_warnings():  # no shuffle defines it: NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(pearson[0]), used, float(np.nanmean(null)), float(p)


def fit_gain(
    simulated: Array, plain: Array, counts: Array
) -> dict[str, tuple[int, float, float, float, float]]:
    """FITS of `simulated` [group, conversation] and the no-persona shares `plain`
    [conversation] against the real groups' shares of Yes (answer counts [group, category,
    conversation]), over the conversations where every group is rated and predicted and the
    no-persona run predicts: per figure its conversations, value, and (fit_gain only) the
    95% t interval and two-sided t-test p-value of the mean per-conversation gain."""
    own, _ = real_shares(counts)
    persona = ((simulated - own) ** 2).mean(axis=0)
    alone = ((plain[None] - own) ** 2).mean(axis=0)
    used = ~np.isnan(persona) & ~np.isnan(alone)
    gain = (alone - persona)[used]
    n = int(used.sum())
    nan = math.nan
    figures = {
        "fit_persona": (n, float(persona[used].mean()) if n else nan, nan, nan, nan),
        "fit_no_persona": (n, float(alone[used].mean()) if n else nan, nan, nan, nan),
    }
    mean = float(gain.mean()) if n else nan
    low = high = p = nan
    if n >= 2:
        error = float(gain.std(ddof=1)) / math.sqrt(n)
        if error > 0:
            half = t_quantile(0.95, n - 1) * error
            low, high = mean - half, mean + half
            p = two_sided_tail(abs(mean) / error, n - 1)
        else:
            p = 1.0 if mean == 0 else 0.0
    figures["fit_gain"] = (n, mean, low, high, p)
    return figures


def _number(value: float) -> float | None:
    return None if math.isnan(value) else value


def signal_rows(
    votes: Votes,
    column: str,
    models: Sequence[tuple[str, Sequence[Prediction]]],
    plain: dict[str, Prediction] | None,
    shuffles: int,
    seed: int,
) -> tuple[list[tuple[Any, ...]], list[str]]:
    """The persona-signal rows of each model (its simulated groups in the votes' group
    order), in dices_cli.evaluate.personas' columns, and a line per model for a person;
    with `plain` (a no-persona prediction per persona model), the FITS rows too."""
    counts = votes.group_counts()
    raters = np.array(votes.group_raters(), dtype=np.float64)
    rows: list[tuple[Any, ...]] = []
    lines = []
    for model, personas in models:
        simulated = simulated_shares(personas)
        value, used, null, p = signal_test(simulated, counts, raters, shuffles, seed)
        base = (votes.dataset, model, column, None, votes.pool_raters())
        rows.append(
            (
                *base,
                SIGNAL,
                "crowd-share",
                used,
                _number(value),
                None,
                None,
                _number(null),
                _number(p),
                None,
                False,
            )
        )
        said = "no test" if math.isnan(p) else f"p = {p:.3g} ({shuffles} persona shuffles)"
        line = (
            f"{model} as {column} personas (DICES-{votes.dataset}): persona signal "
            f"(difference correlation) {value:.3f}, {said}"
        )
        if plain is not None:
            fits = fit_gain(simulated, simulated_shares([plain[model]])[0], counts)
            for name in FITS:
                n, figure, low, high, tested = fits[name]
                rows.append(
                    (
                        *base,
                        name,
                        "crowd-share",
                        n,
                        _number(figure),
                        _number(low),
                        _number(high),
                        None,
                        _number(tested),
                        None,
                        False,
                    )
                )
            gain = fits["fit_gain"]
            line += f"; squared error gain over no persona {gain[1]:.4f}, p = {gain[4]:.3g}"
        lines.append(line)
    return rows, lines


def no_persona_predictions(
    plain: Predictions, votes: Votes, models: Sequence[str]
) -> dict[str, Prediction]:
    """Each persona model's no-persona prediction: the plain file's model of the same name,
    else its only model; an error when it has several and none of that name, or personas."""
    from dices_cli.evaluate.evaluation import aligned_predictions
    from dices_cli.evaluate.predictions import PERSONA

    if plain.frame[PERSONA].drop_nulls().len():
        raise UsageError(
            Option("no_persona"),
            f" {plain.source}: a file of the same prompt without a persona, "
            "one row per conversation; this one has personas",
        )
    aligned = {p.model: p for p in aligned_predictions(plain.of(votes.dataset), votes)}
    chosen = {}
    for model in models:
        if model in aligned:
            chosen[model] = aligned[model]
        elif len(aligned) == 1:
            chosen[model] = next(iter(aligned.values()))
        else:
            raise DicesError(
                Option("no_persona"),
                f" {plain.source} has the models {', '.join(aligned)}; none is "
                f"{model!r}, the persona file's (give a file of one model, or of the same names)",
            )
    return chosen


def evaluate_with_nulls(
    votes: Votes,
    predictions: Predictions,
    plain: Predictions | None,
    settings: Settings,
    column: str,
) -> Evaluation:
    """A persona file's evaluation (dices_cli.evaluate.personas) with the persona-signal
    rows first, and their lines first in the summary."""
    from dices_cli.evaluate.personas import evaluate_personas, personas_of
    from dices_cli.output import Table

    evaluation = evaluate_personas(votes, predictions, settings, column)
    models = [(m.model, m.predictions) for m in personas_of(votes, predictions, column)]
    matched = (
        None if plain is None else no_persona_predictions(plain, votes, [m for m, _ in models])
    )
    rows, lines = signal_rows(votes, column, models, matched, settings.permutations, settings.seed)
    table = evaluation.table
    return Evaluation(
        Table(table.columns, table.numeric, rows + list(table.rows)),
        evaluation.warnings,
        evaluation.suspects,
        lines + evaluation.summary,
    )
