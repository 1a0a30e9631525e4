"""`dices evaluate`: predictions scored against a dataset's references, settings checked."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from dices_cli.errors import DicesError, Option, UsageError
from dices_cli.families import SCORED_BY_DEFAULT
from dices_cli.metrics.defaults import BOOTSTRAP, PERMUTATIONS, SEED
from dices_cli.runs.common import (
    Tell,
    check_choice,
    chooses,
    in_range,
    refuse_rater_selection,
    unsaid,
)

if TYPE_CHECKING:
    from dices_cli.evaluate.evaluation import Evaluation, Settings
    from dices_cli.evaluate.predictions import Predictions
    from dices_cli.evaluate.references import Votes
    from dices_cli.queries.engine import RaterSelection
    from dices_cli.store.datasets import Store


@dataclass(frozen=True)
class EvaluateRun:
    """The evaluation (its table, warnings, suspects and summary) and the settings it was
    made with, each as resolved."""

    evaluation: Evaluation
    settings: Settings
    declared: bool = False  # a declared dataset's label, by LeWiDi's measures


def run_evaluate(
    store: Store,
    predictions: str,
    dataset: str = SCORED_BY_DEFAULT,
    against: Sequence[str] | None = None,
    by: Sequence[str] | None = None,
    *,
    ties: str | None = None,
    threshold: float | None = None,
    bootstrap: int | None = None,
    permutations: int | None = None,
    interval: str = "clustered",
    seed: int | None = None,
    baseline: Sequence[str] | None = None,
    one_means: str | None = None,
    strict: bool = False,
    selection: RaterSelection | None = None,
    label: str | None = None,
    tell: Tell = unsaid,
) -> EvaluateRun:
    """`dices evaluate`: score the `predictions` file ("-": stdin) against `dataset`'s
    references (`against`; None: every one it has), for the raters of `selection`, also per
    group of the `by` columns and beside the `baseline`s (raters:K). None takes the default:
    ties exclude, threshold 0.5, `BOOTSTRAP`, `PERMUTATIONS`, `SEED`. Every setting and the
    dataset are checked here, before the work; the raters seen go to `tell`. A declared
    dataset's `label` (its first when None) is scored by LeWiDi's measures instead
    (`dices_cli.runs.scale_evaluation`), which take none of DICES's references and settings."""
    from dices_cli.families import declared_family
    from dices_cli.raters.selection import rater_selection

    if declared_family(dataset) is not None:
        from dices_cli.evaluate.evaluation import Evaluation, Settings
        from dices_cli.runs.scale_evaluation import run_scale_evaluation

        dices_only = {"against": against is not None, "baseline": baseline is not None}
        dices_only |= {"one_means": one_means is not None, "strict": strict}
        chose = selection is not None and chooses(selection)
        table = run_scale_evaluation(
            store, predictions, dataset, label, by or (), dices_only, chose
        )
        return EvaluateRun(Evaluation(table, [], [], []), Settings(), declared=True)
    if label is not None:
        raise UsageError(
            Option("label"), " scores a declared dataset's label; DICES's is Q_overall"
        )

    if one_means is not None:
        check_choice("one_means", one_means, ("unsafe", "safe"))
    settings = evaluation_settings(
        dataset,
        against,
        ties or "exclude",
        0.5 if threshold is None else threshold,
        bootstrap,
        permutations,
        interval,
        seed,
        by,
        baseline,
    )
    chosen = selection or rater_selection()
    result = run_evaluation(store, predictions, dataset, settings, chosen, one_means, strict, tell)
    return EvaluateRun(result, settings)


def evaluation_settings(
    dataset: str,
    against: Sequence[str] | None = None,
    ties: str = "exclude",
    threshold: float = 0.5,
    bootstrap: int | None = None,
    permutations: int | None = None,
    interval: str = "clustered",
    seed: int | None = None,
    by: Sequence[str] | None = None,
    baseline: Sequence[str] | None = None,
) -> Settings:
    """`dices evaluate`'s settings, each checked as the command line checks it: the ranges
    and choices of its options, and what ProsocialDialog (`dataset` prosocial) cannot take."""
    from dices_cli.evaluate.baseline import parse_baseline
    from dices_cli.evaluate.evaluation import PROSOCIAL_REFERENCES, REFERENCES, Settings
    from dices_cli.families import member_choices
    from dices_cli.families.prosocial import MEMBER as PROSOCIAL
    from dices_cli.formats.dices.layouts import group_columns
    from dices_cli.queries.catalog import ParameterError, usage_error

    check_choice("dataset", dataset, member_choices())
    check_choice("ties", ties, ("exclude", "unsafe", "safe"))
    check_choice("interval", interval, ("clustered", "conversations"))
    bootstrap = BOOTSTRAP if bootstrap is None else bootstrap
    permutations = PERMUTATIONS if permutations is None else permutations
    seed = SEED if seed is None else seed
    in_range("threshold", threshold, 0.0, 1.0)
    in_range("bootstrap", bootstrap, 0, 100_000)
    in_range("permutations", permutations, 0, 100_000)
    in_range("seed", seed, 0, 4_294_967_295)
    prosocial = dataset == PROSOCIAL
    if prosocial:
        _refuse_for_prosocial(by, baseline, ties)
    try:
        chosen_by = group_columns(by or [])
    except ParameterError as error:
        raise usage_error(error) from None
    known = PROSOCIAL_REFERENCES if prosocial else REFERENCES
    for reference in against or []:
        if reference not in known:
            raise UsageError(Option("against"), f" {reference}: choose from {', '.join(known)}")
    return Settings(
        against=tuple(against) if against else None,
        ties=ties,
        threshold=threshold,
        bootstrap=bootstrap,
        permutations=permutations,
        interval=interval,
        seed=seed,
        by=tuple(dict.fromkeys(chosen_by)),
        baselines=tuple(parse_baseline(spec) for spec in baseline or []),
    )


def _refuse_for_prosocial(
    by: Sequence[str] | None, baseline: Sequence[str] | None, ties: str
) -> None:
    """The settings that need DICES's raters, refused for ProsocialDialog in one line each."""
    from dices_cli.families import FAMILIES

    family = FAMILIES["prosocial"]
    if by:
        lacks = family.lacks("rater ids", "demographics")
        raise UsageError(f"{lacks}; `evaluate ", Option("by"), "` needs them")
    if baseline:
        raise UsageError(
            f"{family.lacks('rater ids')}; `evaluate ", Option("baseline"), "` needs them"
        )
    if ties != "exclude":
        raise UsageError(
            Option("ties"),
            " decides a tied crowd plurality; ProsocialDialog's label has no ties "
            "(two of three workers decide it)",
        )


def run_evaluation(
    store: Store,
    predictions: str,
    dataset: str,
    settings: Settings,
    selection: RaterSelection,
    one_means: str | None = None,
    strict: bool = False,
    tell: Tell = unsaid,
) -> Evaluation:
    """Score the `predictions` file against `dataset`'s references for the raters of
    `selection`; the raters seen go to `tell`. With `strict`, a suspected flipped polarity
    is an error; the evaluation's warnings and suspects are the caller's to say."""
    from dices_cli.evaluate.evaluation import chosen_references, combined, evaluate
    from dices_cli.families import FAMILIES, grouped_members
    from dices_cli.families.prosocial import MEMBER as PROSOCIAL

    datasets: list[str] = list(grouped_members()) if dataset == "all" else [dataset]
    for name in datasets:
        chosen_references(settings, name)  # before the work
    if dataset == PROSOCIAL:
        refuse_rater_selection(FAMILIES[PROSOCIAL], chooses(selection))
        votes, read = prosocial_votes(store, predictions, one_means)
    else:
        votes, read = dices_votes(
            store, datasets, selection, settings.by, predictions, one_means, tell
        )
        persona = persona_of(read, settings)
        if persona is not None:  # the raters in the groups the personas simulate
            from dices_cli.evaluate.personas import evaluate_personas

            settings = replace(settings, by=(persona,))
            votes = dices_votes_only(store, datasets, selection, settings.by, unsaid)
            return combined([evaluate_personas(v, read, settings, persona) for v in votes])
    wanted = {r for name in datasets for r in chosen_references(settings, name)}
    if wanted == {"crowd-share"} and not {"score", "distribution"} & read.kinds:
        raise UsageError(
            Option("against"),
            f" crowd-share compares a score or a distribution with the shares; "
            f"{read.source} gives labels only",
        )
    result = combined([evaluate(v, read, settings) for v in votes])
    for suspect in result.suspects if strict else ():
        raise DicesError(f"{suspect.message()} (", Option("strict"), ")")
    return result


def dices_votes_only(
    store: Store,
    datasets: list[str],
    chosen: RaterSelection,
    by: tuple[str, ...],
    tell: Tell = unsaid,
) -> list[Votes]:
    """Each DICES dataset's selected raters' votes, in the groups of `by`."""
    from dices_cli.evaluate.references import load_votes
    from dices_cli.queries.engine import open_session
    from dices_cli.raters.selection import resolve

    columns = list(by)
    votes = []
    for name in datasets:
        session = open_session(store, name, resolve(store, name, chosen), columns=columns)
        if session.selection.description:
            tell(f"raters: {'; '.join(session.selection.description)}")
        votes.append(load_votes(session, columns))
    return votes


def dices_votes(
    store: Store,
    datasets: list[str],
    chosen: RaterSelection,
    by: tuple[str, ...],
    predictions: str,
    one_means: str | None,
    tell: Tell = unsaid,
) -> tuple[list[Votes], Predictions]:
    """Each DICES dataset's selected raters' votes, and the predictions read against them."""
    from dices_cli.evaluate.predictions import read_predictions

    votes = dices_votes_only(store, datasets, chosen, by, tell)
    read = read_predictions(predictions, {v.dataset: v.item_ids.tolist() for v in votes}, one_means)
    return votes, read


def persona_of(read: Predictions, settings: Settings) -> str | None:
    """The rater column of a persona file's personas (None: not a persona file), refusing
    the settings that do not apply to one."""
    from dices_cli.evaluate.personas import persona_column

    column = persona_column(read)
    if column is None:
        return None
    if settings.by and settings.by != (column,):
        raise UsageError(
            f"{read.source} simulates groups of {column}: its personas are compared with "
            "those groups; ",
            Option("by"),
            f" {', '.join(settings.by)} does not apply",
        )
    if settings.baselines:
        raise UsageError(
            f"{read.source} is a persona file: ",
            Option("baseline"),
            " applies to the groups' rows of an ordinary predictions file",
        )
    return column


def prosocial_votes(
    store: Store, predictions: str, one_means: str | None
) -> tuple[list[Votes], Predictions]:
    """ProsocialDialog's votes on the utterances the predictions cover, and the predictions."""
    from dices_cli.evaluate.predictions import PROSOCIAL_ITEMS, read_predictions
    from dices_cli.evaluate.references import load_prosocial_votes
    from dices_cli.families.prosocial import MEMBER

    every = load_prosocial_votes(store)
    read = read_predictions(
        predictions, {MEMBER: every.item_ids.tolist()}, one_means, kind=PROSOCIAL_ITEMS
    )
    # The bootstrap resamples the utterances predicted, not all 165,681: a file usually
    # covers one split, and (resamples x items) arrays of all of them would take gigabytes.
    return [every.covering(read.frame["item_id"].unique().to_numpy())], read
