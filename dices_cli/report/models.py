"""The model predictions the report scores: `dices evaluate`'s core, run for the report.

Nothing is computed here: each model is scored by `dices_cli.evaluate.evaluation.evaluate`,
once over the whole pool (with the human baselines) and once per group column (one column
at a time, as the other sections compare groups), and the report draws those rows.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from dices_cli.errors import UsageError
from dices_cli.families.schema import SCORED_BY_DEFAULT

if TYPE_CHECKING:
    from dices_cli.evaluate.evaluation import Evaluation, Settings
    from dices_cli.evaluate.predictions import Predictions
    from dices_cli.evaluate.references import Votes
    from dices_cli.output import Table
    from dices_cli.queries.engine import RaterSelection, Session
    from dices_cli.store.datasets import Store


@dataclass(frozen=True)
class ModelsRequest:
    """A predictions file to score, on which dataset (None: DICES-350 when the report shows
    it, else the report's one dataset), with `dices evaluate`'s settings (its `by` unused:
    the report's group columns are)."""

    path: str  # "-" for stdin
    dataset: str | None
    settings: Settings
    one_means: str | None = None


@dataclass(frozen=True)
class ScoredModels:
    """The evaluations the models section draws."""

    dataset: str
    source: str  # the predictions file, as the reader names it
    pool: Evaluation  # the whole pool, with the baselines
    groups: dict[str, Evaluation]  # per group column: that column's groups
    settings: Settings
    judged: Table | None = None  # how `dices judge` made the file: its manifest, if beside it
    # A persona file's rater column (`pool` then holds dices_cli.evaluate.personas' rows).
    persona: str | None = None
    # Each model as one more rater (dices evaluate --as-rater): per group column, or "" for
    # the whole pool without group columns.
    as_rater: dict[str, Evaluation] | None = None


def models_dataset(request: ModelsRequest, datasets: list[str]) -> str:
    """The dataset the predictions are scored on, one of the report's `datasets`."""
    if request.dataset is None:
        return SCORED_BY_DEFAULT if SCORED_BY_DEFAULT in datasets else datasets[0]
    if request.dataset not in datasets:
        shown = " and ".join(f"DICES-{d}" for d in datasets)
        raise UsageError(
            f"the predictions are for DICES-{request.dataset}, but the report shows {shown} only"
        )
    return request.dataset


@dataclass(frozen=True)
class ReadModels:
    """A predictions file read against the report's raters, not yet scored."""

    dataset: str
    session: Session
    votes: Votes
    predictions: Predictions
    judged: Table | None
    settings: Settings
    by: list[str]


def read_models(
    store: Store,
    selection: RaterSelection,
    request: ModelsRequest,
    datasets: list[str],
    by: list[str],
) -> ReadModels:
    """The predictions of `request` read and checked against the report's raters: every
    refusal of the file comes from here, before anything is scored or drawn."""
    from dices_cli.evaluate.predictions import read_predictions
    from dices_cli.evaluate.references import load_votes
    from dices_cli.judge.run import judged_settings
    from dices_cli.queries.engine import open_session

    dataset = models_dataset(request, datasets)  # the report's datasets have every `by` column
    session = open_session(store, dataset, selection, columns=by)
    votes = load_votes(session, [])
    predictions = read_predictions(request.path, votes.item_ids.tolist(), request.one_means)
    judged = judged_settings(Path(request.path)) if request.path != "-" else None
    return ReadModels(dataset, session, votes, predictions, judged, request.settings, by)


def score_read(read: ReadModels, store: Store, selection: RaterSelection) -> ScoredModels:
    """Every model of `read` scored by the evaluate core on the report's raters."""
    from dices_cli.evaluate.as_rater import evaluate_as_rater
    from dices_cli.evaluate.evaluation import evaluate
    from dices_cli.evaluate.persona_signal import evaluate_with_nulls
    from dices_cli.evaluate.personas import persona_column
    from dices_cli.evaluate.references import load_votes
    from dices_cli.queries.engine import open_session

    dataset, session, votes, predictions = read.dataset, read.session, read.votes, read.predictions
    judged, by = read.judged, read.by
    persona = persona_column(predictions)
    if persona is not None:  # simulated groups: scored against the real ones, as evaluate does
        settings = replace(read.settings, by=(persona,), baselines=())
        grouped = load_votes(open_session(store, dataset, selection, columns=[persona]), [persona])
        scored = evaluate_with_nulls(grouped, predictions, None, settings, persona)
        return ScoredModels(dataset, predictions.source, scored, {}, settings, judged, persona)
    settings = replace(read.settings, by=())
    pool = evaluate(votes, predictions, settings)
    groups = {
        column: evaluate(
            load_votes(session, [column]),
            predictions,
            # Groups are compared on the crowd: gold has no groups, and the human baseline
            # per group would cost the report seconds.
            replace(settings, against=("crowd",), by=(column,), baselines=()),
        )
        for column in by
    }
    as_rater = {
        column: evaluate_as_rater(
            load_votes(session, [column] if column else []),
            predictions,
            replace(settings, by=(column,) if column else ()),
        )
        for column in by or [""]
    }
    return ScoredModels(
        dataset, predictions.source, pool, groups, settings, judged, as_rater=as_rater
    )


def score_models(
    store: Store,
    selection: RaterSelection,
    request: ModelsRequest,
    datasets: list[str],
    by: list[str],
) -> ScoredModels:
    """Every model of `request` scored by the evaluate core on the report's raters
    (`read_models`, then `score_read`)."""
    return score_read(read_models(store, selection, request, datasets, by), store, selection)
