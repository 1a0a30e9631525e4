"""The Python API: what every `dices` command does, as functions that return Polars frames.

`dices_cli.open(DIR)` gives a `Data` over a data directory; its methods are the commands
that read one (`query`, `sql`, `evaluate`, `filter_raters`, `report`), and `ingest` and
`validate` are the two that read CSV files. The command line parses its arguments, calls
the same functions (the ones below without a leading `_` that take a `Store`), and renders
what they return; so a command's CSV and the method's frame hold the same rows
(tests/test_api.py holds them equal).

Parameters are checked as on the command line: a canned query's from its `.sql` header,
the others against the same ranges and choices. A failure is one of dices' own exceptions
(`dices_cli.errors`) with the command line's message, options said by their parameter's
name (`threshold`, not `--threshold`); never a `SystemExit`. What the command line says on
stderr as `note:` or `warning:` is a `DicesNote` warning.

Heavy libraries are imported by the function that needs them: `import dices_cli` loads none.
docs/python.md is a worked session; the examples here run as doctests over the packaged
sample (`dices demo`'s):

>>> import dices_cli as dices
>>> from dices_cli.demo import sample_paths
>>> dices.ingest(sample_paths(), "dices-data")
IngestSummary(rows_read=10775, rows_written=10775, rows_rejected=0, datasets=('350', '990'))
>>> d = dices.open("dices-data")
>>> d.query("overview").select("dataset", "conversations", "raters").rows()
[('350', 40, 123), ('990', 80, 173)]
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dices_cli.errors import DicesError, Option, UsageError

if TYPE_CHECKING:
    import polars as pl

    from dices_cli.audit import DatasetAudit
    from dices_cli.evaluate.evaluation import Evaluation, Settings
    from dices_cli.evaluate.predictions import Predictions
    from dices_cli.evaluate.references import Votes
    from dices_cli.families import Family
    from dices_cli.output import Result
    from dices_cli.quality import RaterQuality
    from dices_cli.queries.catalog import Query
    from dices_cli.queries.engine import RaterSelection
    from dices_cli.store import Store

# Something said to the user about a result (`note: ...`, `warning: ...`): the command line
# prints it on stderr, the API gives it to `tell`.
Tell = Callable[[str], None]
# Predictions or a table of one's own: a file (CSV, TSV, JSON Lines, Parquet) or a frame.
Frame = Any  # str | os.PathLike | polars.DataFrame | pandas.DataFrame


class DicesNote(UserWarning):
    """What the command line says on stderr as `note:` or `warning:` (a dataset left out,
    a coverage under 100%, a suspected flipped polarity): given as a Python warning."""


def _warn(text: str) -> None:
    """`text` as a `DicesNote`; the raters a result is of, which the caller chose, are not
    news to the caller (the command line says them on stderr)."""
    if not text.startswith("raters: "):
        warnings.warn(text, DicesNote, stacklevel=3)


# --- the rater selection: which raters a query sees ------------------------------------------


@dataclass(frozen=True)
class RaterFilterResult:
    """What `Data.filter_raters` found: one row per rater (`raters`: score, components, kept),
    the `audit` of what the filter changes (one row per dataset), and the `kept` rater ids,
    which `raters=` of the other methods takes as it is."""

    raters: pl.DataFrame
    audit: pl.DataFrame
    kept: frozenset[int]
    description: str


def rater_selection(
    exclude_removed: bool = False,
    ids: frozenset[int] | None = None,
    source: str | None = None,
    min_quality: float | None = None,
) -> RaterSelection:
    """The rater selection every query honours: without the raters the DICES authors
    removed, only the rater `ids` (read from `source`), and a minimum quality score (to be
    resolved by `dices_cli.selection.resolve`)."""
    from dices_cli.queries.engine import RaterSelection

    selection = RaterSelection(exclude_removed=exclude_removed, min_quality=min_quality)
    if exclude_removed:
        selection.description.append("without the raters the DICES authors removed")
    if ids is not None:
        selection.keep_ids = ids
        selection.description.append(f"{len(ids)} raters from {source}")
    return selection


def _selection(
    raters: RaterFilterResult | Iterable[int] | str | os.PathLike[str] | None,
    exclude_removed: bool,
    min_quality: float | None,
) -> RaterSelection:
    """`raters=` as the API takes it: a `RaterFilterResult`, rater ids, or an ids file."""
    from dices_cli.raters import parse_rater_ids

    if raters is None:
        return rater_selection(exclude_removed, min_quality=min_quality)
    if isinstance(raters, RaterFilterResult):
        ids, source = raters.kept, "filter_raters"
    elif isinstance(raters, str | os.PathLike):
        try:
            data = Path(raters).read_bytes()
        except OSError as error:
            raise DicesError(
                "cannot read ", Option("raters"), f" {raters}: {error.strerror}"
            ) from error
        ids, source = parse_rater_ids(data, str(raters)), str(raters)
    else:
        ids, source = frozenset(int(i) for i in raters), "a list"
    return rater_selection(exclude_removed, ids, source, min_quality)


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


def _chooses(selection: RaterSelection) -> bool:
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
    """A canned query's result, and what a table of it always shows (`focus`'s arguments:
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
    tell: Tell = _warn,
    show_sql: Tell | None = None,
) -> CannedRun:
    """Run `canned` over `dataset` with the values `given` to its parameters (absent or None:
    the default), for the raters of `selection`. `typed`: as for `Session.run`. Notes (a
    dataset left out, the raters seen) go to `tell`; the SQL and its parameters to
    `show_sql`."""
    from dices_cli.queries.catalog import (
        ParameterError,
        family_queries,
        missing_group_column,
        render_sql,
        usage_error,
    )
    from dices_cli.queries.engine import open_session
    from dices_cli.schema import DATASETS
    from dices_cli.selection import resolve

    family = _family_asked(canned, dataset, store)
    if family is not None:
        refuse_rater_selection(family, _chooses(selection))
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
    session = open_session(store, dataset, selection, needs=canned.datasets, columns=columns)
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


def _family_asked(canned: Query, dataset: str, store: Store) -> Family | None:
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
    from dices_cli.layouts import group_columns
    from dices_cli.metrics import defaults
    from dices_cli.queries.catalog import ParameterError, usage_error

    _choice("dataset", dataset, ("350", "990", "all", PROSOCIAL))
    _choice("ties", ties, ("exclude", "unsafe", "safe"))
    _choice("interval", interval, ("clustered", "conversations"))
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


def _choice(name: str, value: object, choices: Sequence[str]) -> None:
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
    tell: Tell = _warn,
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
        refuse_rater_selection(FAMILIES[PROSOCIAL], _chooses(selection))
        votes, read = prosocial_votes(store, predictions, one_means)
    else:
        votes, read = dices_votes(
            store, datasets, selection, settings.by, predictions, one_means, tell
        )
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


def dices_votes(
    store: Store,
    datasets: list[str],
    chosen: RaterSelection,
    by: tuple[str, ...],
    predictions: str,
    one_means: str | None,
    tell: Tell = _warn,
) -> tuple[list[Votes], Predictions]:
    """Each DICES dataset's selected raters' votes, and the predictions read against them."""
    from dices_cli.evaluate.predictions import read_predictions
    from dices_cli.evaluate.references import load_votes
    from dices_cli.queries.engine import open_session
    from dices_cli.selection import resolve

    columns = list(by)
    votes = []
    for name in datasets:
        session = open_session(store, name, resolve(store, name, chosen), columns=columns)
        if session.selection.description:
            tell(f"raters: {'; '.join(session.selection.description)}")
        votes.append(load_votes(session, columns))
    read = read_predictions(predictions, {v.dataset: v.item_ids.tolist() for v in votes}, one_means)
    return votes, read


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
    from dices_cli.audit import audit
    from dices_cli.families import FAMILIES
    from dices_cli.quality import RaterFilter, kept_raters, score_raters
    from dices_cli.queries.engine import open_session

    if dataset in FAMILIES:
        raise UsageError(f"{FAMILIES[dataset].lacks('rater ids')}; filter_raters needs them")
    rule = RaterFilter(min_quality=min_quality, preset=preset)  # type: ignore[arg-type]
    session = open_session(store, dataset)
    raters = score_raters(session)
    kept = kept_raters(raters, rule)
    return RaterFilterRun(raters, kept, audit(session, raters, kept))


# --- results as frames ------------------------------------------------------------------------


def frame(result: Result) -> pl.DataFrame:
    """A result as a Polars frame: a stream's Arrow types kept (ENUMs as categoricals), a
    table's Python values typed by Polars."""
    import polars as pl

    from dices_cli.output import Table

    if isinstance(result, Table):
        return pl.DataFrame(
            result.rows, schema=result.columns, orient="row", infer_schema_length=None
        )
    import pyarrow as pa

    table = pa.Table.from_batches(list(result.batches), schema=result.schema)
    converted = pl.from_arrow(table)
    assert isinstance(converted, pl.DataFrame)
    return converted


@contextlib.contextmanager
def _as_file(given: Frame, name: str) -> Iterator[str]:
    """A path for `given`: a file's own, or a frame written to a temporary Parquet file
    `name`.parquet (read back as the command line reads any Parquet file)."""
    if isinstance(given, str | os.PathLike):
        yield os.fspath(given)
        return
    import polars as pl

    if not isinstance(given, pl.DataFrame):
        try:
            given = pl.from_pandas(given)
        except TypeError:
            raise UsageError(
                Option(name),
                " is a path, a polars or a pandas DataFrame, not ",
                type(given).__name__,
            ) from None
    import tempfile

    with tempfile.TemporaryDirectory(prefix="dices-") as directory:
        path = Path(directory) / f"{name}.parquet"
        given.write_parquet(path)
        yield str(path)


# --- the public API ---------------------------------------------------------------------------


def open(path: str | os.PathLike[str] | None = None) -> Data:
    """The data directory `path`; None: $DICES_DATA, else ./dices-data (as the command line
    resolves it). Nothing is read until a method asks.

    >>> import dices_cli as dices
    >>> dices.open("/tmp/nowhere").query("overview")
    Traceback (most recent call last):
    ...
    dices_cli.queries.engine.NothingIngestedError: nothing is ingested in /tmp/nowhere
    """
    from dices_cli.store import resolve_data_dir

    return Data(resolve_data_dir(None if path is None else Path(path)))


class Data:
    """An ingested data directory: the commands that read it, as methods that return Polars
    frames. Every method takes the rater selection of the command line: `exclude_removed`,
    `raters` (a `filter_raters` result, rater ids, or an ids file) and `min_quality`."""

    def __init__(self, root: Path) -> None:
        from dices_cli.store import Store

        self.root = root
        self._store = Store(root)

    def __repr__(self) -> str:
        return f"Data({str(self.root)!r})"

    def query(
        self,
        name: str,
        dataset: str = "all",
        *,
        exclude_removed: bool = False,
        raters: RaterFilterResult | Iterable[int] | str | os.PathLike[str] | None = None,
        min_quality: float | None = None,
        **params: Any,
    ) -> pl.DataFrame:
        """The canned query `name` (`dices query NAME`), with its parameters by name as its
        `.sql` header declares them (`by=["rater_gender"]`, `threshold=0.3`).

        >>> shares = d.query("qoverall-by-demographic", dataset="350", by=["rater_gender"])
        >>> shares.select("rater_gender", "raters", "ratings").rows()
        [('Man', 61, 2440), ('Woman', 62, 2480)]
        >>> d.query("gold-vs-crowd", threshold=2)
        Traceback (most recent call last):
        ...
        dices_cli.errors.UsageError: threshold must be a number between 0 and 1 (got 2)
        """
        from dices_cli.queries.catalog import command_queries

        _choice("dataset", dataset, ("all", "350", "990", "prosocial"))
        canned = command_queries().get(name)
        if canned is None:
            raise UsageError(no_such_query(name))
        taken = {p.name for p in canned.parameters}
        for given in params:
            if given not in taken:
                takes = [part for p in canned.parameters for part in (", ", Option(p.name))][1:]
                raise UsageError(
                    f"{name} does not take ",
                    Option(given),
                    "; it takes: ",
                    *(takes or ["no parameters"]),
                )
        selection = _selection(raters, exclude_removed, min_quality)
        run = run_canned(self._store, canned, params, dataset, selection)
        return frame(run.result)

    def sql(
        self,
        text: str,
        tables: Mapping[str, Frame] | None = None,
        dataset: str = "all",
        *,
        timeout: float = 60.0,
        exclude_removed: bool = False,
        raters: RaterFilterResult | Iterable[int] | str | os.PathLike[str] | None = None,
        min_quality: float | None = None,
    ) -> pl.DataFrame:
        """One read-only SELECT over the views (`dices sql`), in the same sandbox; `tables`
        are tables of one's own by name: files, or polars or pandas frames.

        >>> d.sql("SELECT dataset, count(*) AS n FROM ratings GROUP BY 1 ORDER BY 1").rows()
        [('350', 4920), ('990', 5855)]
        """
        from dices_cli.families import FAMILIES
        from dices_cli.queries.sandbox import run_sql, user_tables
        from dices_cli.selection import resolve

        _choice("dataset", dataset, ("all", "350", "990", "prosocial"))
        selection = _selection(raters, exclude_removed, min_quality)
        if dataset in FAMILIES:
            refuse_rater_selection(FAMILIES[dataset], _chooses(selection))
        with contextlib.ExitStack() as files:
            paths = {n: files.enter_context(_as_file(t, n)) for n, t in (tables or {}).items()}
            named = user_tables([f"{n}={p}" for n, p in paths.items()])
            chosen = None if dataset in FAMILIES else resolve(self._store, dataset, selection)
            with run_sql(self._store, dataset, text, chosen, timeout, named) as result:
                return frame(result)

    def evaluate(
        self,
        predictions: Frame,
        dataset: str = "350",
        against: Sequence[str] | None = None,
        by: Sequence[str] | None = None,
        *,
        ties: str = "exclude",
        threshold: float = 0.5,
        bootstrap: int | None = None,
        permutations: int | None = None,
        interval: str = "clustered",
        seed: int | None = None,
        baseline: Sequence[str] | None = None,
        one_means: str | None = None,
        strict: bool = False,
        exclude_removed: bool = False,
        raters: RaterFilterResult | Iterable[int] | str | os.PathLike[str] | None = None,
        min_quality: float | None = None,
    ) -> pl.DataFrame:
        """Score a model's predictions (`dices evaluate`): a file, or a polars or pandas frame
        with item_id and a label, score or distribution. One row per model x reference
        (x group); warnings (coverage, a suspected flipped polarity) are `DicesNote`s.

        >>> from dices_cli.demo import demo_predictions_path
        >>> scored = d.evaluate(demo_predictions_path(), against=["gold"], bootstrap=50)
        >>> scored.select("model", "reference", "n", "accuracy").rows()
        [('five-raters', 'gold', 40, 0.75), ('five-raters-flipped', 'gold', 40, 0.25)]
        """
        if one_means is not None:
            _choice("one_means", one_means, ("unsafe", "safe"))
        settings = evaluation_settings(
            dataset, against, ties, threshold, bootstrap, permutations, interval, seed, by, baseline
        )
        selection = _selection(raters, exclude_removed, min_quality)
        with _as_file(predictions, "predictions") as path:
            result = run_evaluation(
                self._store, path, dataset, settings, selection, one_means, strict
            )
        for note in result.warnings:
            _warn(f"warning: {note}")
        for suspect in result.suspects:
            _warn(f"warning: {suspect.message()}")
        return frame(result.table)

    def filter_raters(
        self,
        min_quality: float | None = None,
        preset: str | None = None,
        dataset: str = "all",
        *,
        explain: bool = False,
    ) -> RaterFilterResult:
        """Score every rater's quality and keep the good ones (`dices filter-raters`): the
        rater table, the audit, and the kept ids to pass as `raters=`.

        >>> good = d.filter_raters(min_quality=0.6)
        >>> good.raters.columns[:3]
        ['dataset', 'rater_id', 'score']
        >>> d.query("overview", raters=good)["raters"].to_list()
        [88, 163]
        """
        from dices_cli.audit import audit_table
        from dices_cli.quality import RaterFilter, quality_table

        if preset is not None:
            _choice("preset", preset, ("authors",))
        _choice("dataset", dataset, ("all", "350", "990", "prosocial"))
        run = run_rater_filter(self._store, dataset, min_quality, preset)
        rule = RaterFilter(min_quality=min_quality, preset=preset)  # type: ignore[arg-type]
        return RaterFilterResult(
            raters=frame(quality_table(run.raters, rule, explain)),
            audit=frame(audit_table(run.audits, rule.description)),
            kept=frozenset(r.rater_id for r in run.raters if r.key in run.kept),
            description=rule.description,
        )

    def report(
        self,
        path: str | os.PathLike[str],
        by: Sequence[str] | None = None,
        dataset: str = "all",
        *,
        permutations: int | None = None,
        seed: int | None = None,
        force: bool = False,
        exclude_removed: bool = False,
        raters: RaterFilterResult | Iterable[int] | str | os.PathLike[str] | None = None,
        min_quality: float | None = None,
    ) -> Path:
        """Write the HTML report (`dices report`) to `path` and return it; `force` replaces
        an existing file. Needs the `report` extra (vl-convert) for its charts."""
        from dices_cli.layouts import group_columns
        from dices_cli.output import OUTPUT, check_output, open_output
        from dices_cli.queries.catalog import ParameterError, usage_error
        from dices_cli.report import agreement_options, build_report, check_charts_available

        _choice("dataset", dataset, ("all", "350", "990"))
        target = Path(path)
        check_output(target, force, [self.root], option=OUTPUT)
        check_charts_available()
        try:
            columns = group_columns(by or [])
            permutations, seed = agreement_options(permutations, seed)
        except ParameterError as error:
            raise usage_error(error) from None
        selection = _selection(raters, exclude_removed, min_quality)
        call = f"dices_cli.open({str(self.root)!r}).report({str(target)!r}, by={columns!r})"
        document = build_report(
            self._store, dataset, selection, columns, call, permutations, seed, warn=_warn
        )
        with open_output(target, force, [self.root]) as handle:
            handle.write(document.encode("utf-8"))
        return target


@dataclass(frozen=True)
class IngestSummary:
    """What `ingest` did: rows read from the files, written to the data directory, and
    rejected (only with `rejects`), and the datasets stored."""

    rows_read: int
    rows_written: int
    rows_rejected: int
    datasets: tuple[str, ...]


def ingest(
    paths: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
    dir: str | os.PathLike[str] | None = None,
    dataset: str = "auto",
    *,
    force: bool = False,
    rejects: str | os.PathLike[str] | None = None,
) -> IngestSummary:
    """Validate DICES CSV files (or ProsocialDialog's JSON Lines) and store them in the data
    directory `dir` (None: as `open` resolves it), as `dices ingest` does: all or nothing,
    unless `rejects` names a file for the rejected rows.

    >>> dices.ingest(sample_paths(), d.root)
    Traceback (most recent call last):
    ...
    dices_cli.errors.DatasetExistsError: DICES-350 is already ingested in ...; use force to ...

    """
    from dices_cli.ingest import ingest as run_ingest
    from dices_cli.store import Store, resolve_data_dir

    _choice("dataset", dataset, ("auto", "350", "990"))
    given = [os.fspath(p) for p in ([paths] if isinstance(paths, str | os.PathLike) else paths)]
    store = Store(resolve_data_dir(None if dir is None else Path(dir)))
    results = run_ingest(given, store, dataset, force, None if rejects is None else Path(rejects))
    return IngestSummary(
        rows_read=sum(r.report.rows_read for r in results),
        rows_written=sum(r.report.rows_valid for r in results),
        rows_rejected=sum(r.report.rows_rejected for r in results),
        datasets=tuple(r.stored.name for r in results),
    )


@dataclass(frozen=True)
class ValidationReport:
    """What `validate` found in one file: `ok` (no errors), every problem as a row of
    `problems` (type, severity, line, column, value, message), and the `summary` line
    `dices validate` prints."""

    ok: bool
    problems: pl.DataFrame
    rows_read: int
    rows_rejected: int
    summary: str


def validate(path: str | os.PathLike[str], dataset: str = "auto") -> ValidationReport:
    """Check one DICES CSV file (or ProsocialDialog JSON Lines file) without ingesting it
    (`dices validate`).

    >>> report = dices.validate(sample_paths()[0])
    >>> report.ok
    True
    >>> report.problems.select("type", "severity", "value").rows()
    [('incomplete-dataset', 'warning', '40 of 350 conversations'),
     ('incomplete-dataset', 'warning', '4,920 of 43,050 ratings')]
    """
    import polars as pl

    from dices_cli.problems import PROBLEM_FIELDS
    from dices_cli.validate import validate_file

    _choice("dataset", dataset, ("auto", "350", "990"))
    report = validate_file(os.fspath(path), dataset)
    records = [problem.as_record() for problem in report.problems]
    schema = {name: pl.Int64 if name == "line" else pl.String for name in PROBLEM_FIELDS}
    problems = pl.DataFrame(
        [tuple(r[name] for name in PROBLEM_FIELDS) for r in records],
        schema=schema,
        orient="row",
    )
    return ValidationReport(
        report.ok, problems, report.rows_read, report.rows_rejected, report.summary()
    )
