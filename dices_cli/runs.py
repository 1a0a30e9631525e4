"""What each command that reads data does between parsing its arguments and rendering its
result, as one function each: the command line (`dices_cli.cli.commands`) and the Python API
(`dices_cli.api`) both call these, so their results are the same rows.

Arguments come typed and are checked here as on the command line; messages name parameters
as `Option`s, which the command line says as flags and the API by their names. What is said
to the user on the way (a note, the raters seen) goes to the caller's `tell`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dices_cli.errors import DicesError, Option, UsageError

if TYPE_CHECKING:
    from dices_cli.evaluate.evaluation import Evaluation, Settings
    from dices_cli.evaluate.predictions import Predictions
    from dices_cli.evaluate.references import Votes
    from dices_cli.families import Family
    from dices_cli.output import Result
    from dices_cli.queries.catalog import Query
    from dices_cli.queries.engine import RaterSelection
    from dices_cli.raters.audit import DatasetAudit
    from dices_cli.raters.quality import RaterQuality
    from dices_cli.report.models import ModelsRequest
    from dices_cli.store.datasets import Store

# Something said to the user about a result (`note: ...`, `warning: ...`, `raters: ...`).
Tell = Callable[[str], None]


def unsaid(_text: str) -> None:
    """A `Tell` for a caller that says nothing."""


def refuse_rater_selection(family: Family, chosen: bool) -> None:
    """A usage error when raters are `chosen` of `family`, whose raters cannot be chosen."""
    if chosen:
        raise UsageError(
            f"{family.lacks('rater ids')}; ",
            Option("exclude_removed"),
            ", ",
            Option("raters"),
            " and ",
            Option("min_quality"),
            " choose raters",
        )


def chooses(selection: RaterSelection) -> bool:
    """Whether `selection` chooses raters (rather than seeing them all)."""
    return bool(
        selection.exclude_removed
        or selection.keep_ids is not None
        or selection.min_quality is not None
    )


# --- canned queries ---------------------------------------------------------------------------


def no_such_query(name: str) -> str:
    """There is no query `name`: the nearest name first, then every query, the ones of a
    family other than DICES marked with it."""
    import difflib

    from dices_cli.families import family_of
    from dices_cli.queries.catalog import command_queries

    queries = command_queries()
    nearest = difflib.get_close_matches(name, list(queries), n=1)
    guess = f": did you mean {nearest[0]!r}? The" if nearest else "; the"
    listed = []
    for query in queries.values():
        owner = family_of(query.datasets[0])
        listed.append(query.name if owner.name == "dices" else f"{query.name} ({owner.title} only)")
    return f"no query {name!r}{guess} queries are: {', '.join(listed)}"


def other_families() -> list[Family]:
    """Every family but DICES."""
    from dices_cli.families import FAMILIES

    return [family for name, family in FAMILIES.items() if name != "dices"]


@dataclass(frozen=True)
class CannedRun:
    """A canned query's result, and what a table of it always shows (its focus's arguments:
    the bound parameters; None for another family's query, which has no group columns)."""

    result: Result
    query: Query
    parameters: dict[str, Any] | None


def run_canned(
    store: Store,
    canned: Query,
    given: Mapping[str, Any],
    dataset: str,
    selection: RaterSelection,
    typed: bool = True,
    tell: Tell = unsaid,
    show_sql: Tell | None = None,
) -> CannedRun:
    """Run `canned` over `dataset` with the values `given` to its parameters (absent or None:
    the default), for the raters of `selection`. `typed`: as for `Session.run`. Notes (a
    dataset left out, the raters seen) go to `tell`; the SQL and its parameters to
    `show_sql`."""

    from dices_cli.families.schema import DATASETS, missing_group_column
    from dices_cli.queries.catalog import ParameterError, family_queries, render_sql, usage_error
    from dices_cli.queries.engine import connect, open_session, statement_names
    from dices_cli.raters.selection import resolve

    family = family_asked(canned, dataset, store)
    if family is not None:
        refuse_rater_selection(family, chooses(selection))
        own = family_queries(family.name).get(canned.name)
        result = run_family_query(canned, given, family, store, typed, show_sql)
        assert own is not None  # run_family_query refuses a query the family lacks
        return CannedRun(result, own, None)
    try:
        parameters = canned.bind(given)
    except ParameterError as error:
        raise usage_error(error) from None
    if show_sql is not None:
        show_sql(f"-- parameters: {parameters}\n{render_sql(canned)}")
    columns = canned.group_columns(parameters)
    selection = resolve(store, dataset, selection, needs=canned.datasets, columns=columns)
    # Only the views the query reads, and the stored files behind them: binding a view takes
    # DuckDB 2-50 ms (ratings_wide 20-37 ms, which `overview` does not read).
    connection = connect()
    named = statement_names(render_sql(canned), connection)
    session = open_session(
        store,
        dataset,
        selection,
        needs=canned.datasets,
        columns=columns,
        named=named,
        connection=connection,
    )
    queried = {d.name for d in session.datasets}
    for skipped in sorted(set(store.available()) - queried if dataset == "all" else ()):
        if lacking := missing_group_column(DATASETS[skipped], columns):
            note = f"{lacking}, so it is left out"
        else:
            note = (
                f"{canned.name} does not apply to DICES-{skipped}; "
                "showing the datasets it applies to"
            )
        tell(f"note: {note}")
    if dataset == "all":
        ingested = set(store.ingested())
        for other in other_families():
            if ingested & set(other.members) and canned.name in family_queries(other.name):
                tell(
                    f"note: {other.title} is ingested too; -d {other.name} runs its own "
                    f"{canned.name}"
                )
    if session.selection.description:
        tell(f"raters: {'; '.join(session.selection.description)}")
    return CannedRun(session.run(canned, parameters, typed=typed), canned, parameters)


def family_asked(canned: Query, dataset: str, store: Store) -> Family | None:
    """The family other than DICES a run is for: the one `dataset` names; with all, the one a
    query of its own belongs to, or the one with its own version of a DICES query when no
    DICES dataset is ingested. None for DICES."""
    from dices_cli.families import FAMILIES, family_of
    from dices_cli.queries.catalog import family_queries

    if dataset in FAMILIES:
        return FAMILIES[dataset]
    owner = family_of(canned.datasets[0])
    if owner.name == "dices":
        if dataset != "all" or store.available():
            return None
        ingested = set(store.ingested())
        return next(
            (
                family
                for family in other_families()
                if ingested & set(family.members) and canned.name in family_queries(family.name)
            ),
            None,
        )
    if dataset != "all":
        raise UsageError(
            f"{canned.name} applies to {owner.title} only: give ",
            Option("dataset"),
            f" {owner.name}",
        )
    return owner


def run_family_query(
    canned: Query,
    given: Mapping[str, Any],
    family: Family,
    store: Store,
    typed: bool = True,
    show_sql: Tell | None = None,
) -> Result:
    """Run the family's own version of `canned` (`typed`, as for `Session.run`); a parameter
    it does not take, or a query it does not have, is a usage error that says what the family
    lacks."""
    from dices_cli.queries.catalog import family_queries, render_sql
    from dices_cli.queries.family import FamilySession

    own = family_queries(family.name).get(canned.name)
    if own is None:
        raise UsageError(f"{family.lacks()}; {canned.name} needs them")
    taken = {p.name for p in own.parameters}
    for name, value in given.items():
        if name not in taken and value not in (None, (), []):
            lacks = family.lacks("rater ids", "demographics")
            raise UsageError(f"{lacks}; `{canned.name} ", Option(name), "` needs them")
    parameters = own.bind({k: v for k, v in given.items() if k in taken})
    if show_sql is not None:
        show_sql(f"-- parameters: {parameters}\n{render_sql(own)}")
    return FamilySession(store, family.members[0]).run(own, parameters, typed)


# --- evaluate ---------------------------------------------------------------------------------


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
    from dices_cli.families.prosocial import MEMBER as PROSOCIAL
    from dices_cli.formats.dices.layouts import group_columns
    from dices_cli.metrics import defaults
    from dices_cli.queries.catalog import ParameterError, usage_error

    check_choice("dataset", dataset, ("350", "990", "all", PROSOCIAL))
    check_choice("ties", ties, ("exclude", "unsafe", "safe"))
    check_choice("interval", interval, ("clustered", "conversations"))
    bootstrap = defaults.BOOTSTRAP if bootstrap is None else bootstrap
    permutations = defaults.PERMUTATIONS if permutations is None else permutations
    seed = defaults.SEED if seed is None else seed
    _in_range("threshold", threshold, 0.0, 1.0)
    _in_range("bootstrap", bootstrap, 0, 100_000)
    _in_range("permutations", permutations, 0, 100_000)
    _in_range("seed", seed, 0, 4_294_967_295)
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


def check_choice(name: str, value: object, choices: Sequence[str]) -> None:
    if value not in choices:
        raise UsageError(Option(name), f" must be one of: {', '.join(choices)} (got {value!r})")


def _in_range(name: str, value: float, low: float, high: float) -> None:
    if not low <= value <= high:  # False for NaN
        raise UsageError(Option(name), f" must be between {low:g} and {high:g} (got {value:g})")


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
    from dices_cli.families import FAMILIES
    from dices_cli.families.prosocial import MEMBER as PROSOCIAL

    datasets: list[str] = ["350", "990"] if dataset == "all" else [dataset]
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


# --- filter-raters ----------------------------------------------------------------------------


@dataclass(frozen=True)
class RaterFilterRun:
    """Every rater's quality, the (dataset, rater_id) of those kept, and the audit."""

    raters: list[RaterQuality]
    kept: set[tuple[str, int]]
    audits: list[DatasetAudit]


def run_rater_filter(
    store: Store, dataset: str, min_quality: float | None, preset: str | None
) -> RaterFilterRun:
    """Score every rater of `dataset`, keep those at `min_quality` or above (or those a
    `preset` keeps), and audit what that changes."""
    from dices_cli.families import FAMILIES
    from dices_cli.queries.engine import open_session
    from dices_cli.raters.audit import audit
    from dices_cli.raters.quality import RaterFilter, kept_raters, score_raters

    if dataset in FAMILIES:
        raise UsageError(f"{FAMILIES[dataset].lacks('rater ids')}; filter_raters needs them")
    rule = RaterFilter(min_quality=min_quality, preset=preset)  # type: ignore[arg-type]
    session = open_session(store, dataset)
    raters = score_raters(session)
    kept = kept_raters(raters, rule)
    return RaterFilterRun(raters, kept, audit(session, raters, kept))


# --- report -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReportRun:
    """The report written, the command line that makes it again (as the page records it),
    and the datasets left out with why."""

    path: Path
    command: str
    left_out: list[str]


def run_report(
    store: Store,
    target: Path,
    dataset: str = "all",
    selection: RaterSelection | None = None,
    by: Sequence[str] = (),
    *,
    permutations: int | None = None,
    seed: int | None = None,
    predictions: str | None = None,
    predictions_dataset: str | None = None,
    bootstrap: int | None = None,
    baseline: Sequence[str] | None = None,
    ties: str | None = None,
    threshold: float | None = None,
    one_means: str | None = None,
    strict: bool = False,
    force: bool = False,
    inputs: Sequence[Path] = (),
    selection_words: Sequence[str] = (),
    tell: Tell = unsaid,
) -> ReportRun:
    """Write the HTML report of `dataset` (`dices report`) to `target`, for the raters of
    `selection`, comparing the groups of the `by` columns; with `predictions` (a file, "-"
    for stdin), also score a model with `dices evaluate`'s settings. Every setting is checked
    before any work, and `target` before anything is read (not replaced without `force`, never
    one of `inputs`). The page records the equivalent command line, with `selection_words`
    (the rater selection as the caller gave it) in it; warnings go to `tell`."""
    import shlex

    from dices_cli.families.schema import DATASETS, missing_group_column
    from dices_cli.formats.dices.layouts import group_columns
    from dices_cli.output import OUTPUT, check_output, open_output
    from dices_cli.queries.catalog import ParameterError, usage_error
    from dices_cli.queries.engine import chosen_datasets
    from dices_cli.raters.selection import rater_selection
    from dices_cli.report import agreement_options, build_report, check_charts_available

    check_choice("dataset", dataset, ("all", "350", "990"))
    given = {
        "predictions_dataset": predictions_dataset,
        "bootstrap": bootstrap,
        "baseline": baseline,
        "ties": ties,
        "threshold": threshold,
        "one_means": one_means,
        "strict": strict or None,
    }
    if predictions is None:
        for name, value in given.items():
            if value is not None:
                raise UsageError(
                    Option(name), " scores predictions: give ", Option("predictions"), " FILE too"
                )
    if predictions_dataset is not None:
        check_choice("predictions_dataset", predictions_dataset, ("350", "990"))
    if one_means is not None:
        check_choice("one_means", one_means, ("unsafe", "safe"))
    inputs = [*inputs, *([Path(predictions)] if predictions not in (None, "-") else [])]
    check_output(target, force, inputs, option=OUTPUT)  # before the work
    check_charts_available()
    try:
        columns = group_columns(by)
        permutations, seed = agreement_options(permutations, seed)
    except ParameterError as error:
        raise usage_error(error) from None
    words = ["dices", "report", "--dataset", dataset]
    words += [part for column in columns for part in ("--by", column)]
    if columns:
        words += ["--permutations", str(permutations), "--seed", str(seed)]
    models = None
    if predictions is not None:
        models = _models_request(
            predictions, predictions_dataset, bootstrap, baseline, ties, threshold, one_means, seed
        )
        settings = models.settings
        words += ["--predictions", predictions]
        words += ["--predictions-dataset", predictions_dataset] if predictions_dataset else []
        words += ["--bootstrap", str(settings.bootstrap)]
        words += [part for k in settings.baselines for part in ("--baseline", f"raters:{k}")]
        words += ["--ties", settings.ties, "--threshold", f"{settings.threshold:g}"]
        words += ["--one-means", one_means] if one_means else []
        words += ["--strict"] if strict else []
        words += ["--seed", str(seed)] if not columns else []
    words += [*selection_words, "-o", str(target)]
    command = shlex.join(words)
    try:
        document = build_report(
            store,
            dataset,
            selection or rater_selection(),
            columns,
            command,
            permutations,
            seed,
            models,
            warn=lambda text: tell(f"warning: {text}"),
            strict=strict,
        )
    except ParameterError as error:
        raise usage_error(error) from None
    with open_output(target, force, inputs) as handle:
        handle.write(document.encode("utf-8"))
    left_out = []
    if dataset == "all":
        shown = set(chosen_datasets(store, "all", columns=columns))
        for skipped in sorted(set(store.available()) - shown):
            left_out.append(
                f"{missing_group_column(DATASETS[skipped], columns)}, so it is left out"
            )
    return ReportRun(target, command, left_out)


def _models_request(
    predictions: str,
    dataset: str | None,
    bootstrap: int | None,
    baseline: Sequence[str] | None,
    ties: str | None,
    threshold: float | None,
    one_means: str | None,
    seed: int,
) -> ModelsRequest:
    """What the report scores, with `dices evaluate`'s settings and the report's defaults,
    each checked as `dices evaluate` checks it."""
    from dices_cli.evaluate.baseline import parse_baseline
    from dices_cli.evaluate.evaluation import Settings
    from dices_cli.report import BASELINES, BOOTSTRAP
    from dices_cli.report.models import ModelsRequest

    defaults = Settings()
    if ties is not None:
        check_choice("ties", ties, ("exclude", "unsafe", "safe"))
    if threshold is not None:
        _in_range("threshold", threshold, 0.0, 1.0)
    if bootstrap is not None:
        _in_range("bootstrap", bootstrap, 0, 100_000)
    settings = Settings(
        ties=ties or defaults.ties,
        threshold=defaults.threshold if threshold is None else threshold,
        bootstrap=BOOTSTRAP if bootstrap is None else bootstrap,
        seed=seed,
        baselines=tuple(dict.fromkeys(map(parse_baseline, baseline))) if baseline else BASELINES,
    )
    return ModelsRequest(predictions, dataset, settings, one_means)
