"""The Python API: what every `dices` command does, as functions that return Polars frames.

`dices_cli.open(DIR)` gives a `Data` over a data directory; its methods are the commands
that read one (`info`, `query`, `sql`, `evaluate`, `filter_raters`, `export`, `report`), and
`ingest`, `validate` and `describe` are those that read files. Each calls the function the
command calls (one of `dices_cli.runs`) and returns its result as a Polars frame where the
command renders it: so a command's CSV and the method's frame hold the same rows
(tests/api/test_commands_and_api_agree.py holds them equal).

Parameters are checked as on the command line: a canned query's from its `.sql` header,
the others against the same ranges and choices. A failure is one of dices' own exceptions
(`dices_cli.errors`) with the command line's message, options said by their parameter's
name (`threshold`, not `--threshold`); never a `SystemExit`. What the command line says on
stderr as `note:` or `warning:` is a `DicesNote` warning.

Heavy libraries are imported by the function that needs them: `import dices_cli` loads none.
docs/python.md is a worked session; the examples here run as doctests over the packaged
sample (`dices demo`'s):

>>> import dices_cli as dices
>>> from dices_cli.runs.demo import sample_paths
>>> dices.ingest(sample_paths(), "dices-data")
IngestSummary(rows_read=10775, rows_written=10775, rows_rejected=0, datasets=('350', '990'))
>>> d = dices.open("dices-data")
>>> d.query("overview").select("dataset", "conversations", "raters").rows()
[('350', 40, 123), ('990', 80, 173)]
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dices_cli.api.files import IngestSummary, ValidationReport, describe, ingest, validate
from dices_cli.api.frames import DicesNote, Frame, as_file, frame, is_number, names_of, noted, warn
from dices_cli.api.raters import RaterFilterResult, selection_of
from dices_cli.errors import Option, UsageError
from dices_cli.families import SCORED_BY_DEFAULT
from dices_cli.runs.canned import no_such_query, run_canned
from dices_cli.runs.common import check_choice, check_dataset
from dices_cli.runs.evaluation import run_evaluate
from dices_cli.runs.raters import run_rater_filter
from dices_cli.runs.report import run_report

if TYPE_CHECKING:
    import polars as pl

    from dices_cli.runs.report import Recorded

__all__ = [
    "Data",
    "DicesNote",
    "IngestSummary",
    "RaterFilterResult",
    "ValidationReport",
    "describe",
    "frame",
    "ingest",
    "open",
    "validate",
]


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
    from dices_cli.store.datasets import resolve_data_dir

    return Data(resolve_data_dir(None if path is None else Path(path)))


class Data:
    """An ingested data directory: the commands that read it, as methods that return Polars
    frames. Every method takes the rater selection of the command line: `exclude_removed`,
    `raters` (a `filter_raters` result, rater ids, or an ids file) and `min_quality`."""

    def __init__(self, root: Path) -> None:
        from dices_cli.store.datasets import Store

        self.root = root
        self._store = Store(root)

    def __repr__(self) -> str:
        return f"Data({str(self.root)!r})"

    def _enums(self, dataset: str) -> dict[str, tuple[str, ...]]:
        """The categorical columns of the ingested datasets `dataset` names ("all": every
        one), each with its values in order: its family's, then those its files brought
        (the manifest's `new_values`), as a query session's ENUM types hold them. A declared
        dataset's values are not fixed in advance: it names none (its groups are `str`)."""
        from dices_cli.families import family_of

        found: dict[str, tuple[str, ...]] = {}
        for name in self._store.ingested():
            family = family_of(name)
            if family.declared is not None or dataset not in ("all", name):
                continue
            brought = self._store.open(name).manifest.get("new_values", {})
            for column, values in family.enums.items():
                known = [*found.get(column, ()), *values, *brought.get(column, ())]
                found[column] = tuple(dict.fromkeys(known))
        return found

    def info(self) -> pl.DataFrame:
        """What the data directory holds (`dices info`): one row per ingested dataset, with
        its counts, source file, checksum, and when and where it was stored.

        >>> d.info().select("dataset", "conversations", "raters", "ratings").rows()
        [('350', 40, 123, 4920), ('990', 80, 173, 5855)]
        """
        from dices_cli.runs.info import run_info

        return frame(run_info(self._store))

    def export(
        self,
        path: str | os.PathLike[str],
        dataset: str | None = None,
        layout: str = "wide",
        by: str | Sequence[str] | None = None,
        *,
        format: str | None = None,
        excel_safe: bool = False,
        force: bool = False,
        exclude_removed: bool = False,
        raters: RaterFilterResult | Iterable[int] | str | os.PathLike[str] | None = None,
        min_quality: float | None = None,
    ) -> Path:
        """Write `dataset` back to `path` (`dices export`) and return it: the ingested file
        as it was (`layout` wide), or one rating a row (long, crowdkit), one row per
        conversation and `by` group (soft-labels), or JUDGE-BENCH's document (judge-bench),
        for the raters chosen. `format` (csv, tsv, json, jsonl, parquet) defaults to the
        extension's; `force` replaces an existing file.

        >>> d.export("soft.csv", "350", layout="soft-labels", by="rater_gender")
        PosixPath('soft.csv')
        >>> Path("soft.csv").read_text().splitlines()[0]
        'dataset,item_id,rater_gender,ratings,n_no,n_yes,n_unsure,share_no,share_yes,share_unsure'
        """
        from dices_cli.output import Format
        from dices_cli.runs.export import run_export

        if format is not None:
            check_choice("format", format, [f for f in Format if f not in ("table", "chart")])
        run_export(
            self._store,
            dataset,
            layout,
            names_of(by) or [],
            selection_of(raters, exclude_removed, min_quality),
            fmt=None if format is None else Format(format),
            output=Path(path),
            force=force,
            excel_safe=excel_safe,
            inputs=[self.root],
            tell=warn,
        )
        return Path(path)

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
        `.sql` header declares them (`by=["rater_gender"]`, `threshold=0.3`). A declared
        dataset (`dataset="popquorn_offensiveness"`) runs its own version of the query, as
        `dices query NAME -d DATASET` does (`label="offensiveness"`, `by=["race"]`).

        >>> shares = d.query("qoverall-by-demographic", dataset="350", by=["rater_gender"])
        >>> shares.select("rater_gender", "raters", "ratings").rows()
        [('Man', 61, 2440), ('Woman', 62, 2480)]
        >>> d.query("gold-vs-crowd", threshold=2)
        Traceback (most recent call last):
        ...
        dices_cli.errors.UsageError: threshold must be a number between 0 and 1 (got 2)
        """
        from dices_cli.families import declared_family
        from dices_cli.queries.catalog import command_query, declared_queries

        check_dataset(dataset)
        # A declared dataset's own version of the query (sql/declared/), as `dices query
        # NAME -d DATASET` runs it, with its own parameters.
        own = declared_queries().get(name) if declared_family(dataset) else None
        canned = own or command_query(name)
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
        selection = selection_of(raters, exclude_removed, min_quality)
        run = run_canned(self._store, canned, params, dataset, selection, tell=warn)
        return frame(run.result, self._enums(dataset))

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
        from dices_cli.queries.sandbox import check_table_names
        from dices_cli.runs.sql import run_sql

        if tables is not None and not isinstance(tables, Mapping):
            raise UsageError(
                "tables is a mapping of names to files or frames, not ", type(tables).__name__
            )
        check_table_names(list(tables or {}))  # a frame is written to NAME.parquet
        selection = selection_of(raters, exclude_removed, min_quality)
        with contextlib.ExitStack() as files:
            paths = {n: files.enter_context(as_file(t, n)) for n, t in (tables or {}).items()}
            with run_sql(
                self._store, text, dataset, selection, tables=paths, timeout=timeout
            ) as result:
                return frame(result, self._enums(dataset))

    def evaluate(
        self,
        predictions: Frame,
        dataset: str = SCORED_BY_DEFAULT,
        against: str | Sequence[str] | None = None,
        by: str | Sequence[str] | None = None,
        *,
        label: str | None = None,
        ties: str = "exclude",
        threshold: float = 0.5,
        bootstrap: int | None = None,
        permutations: int | None = None,
        interval: str = "clustered",
        seed: int | None = None,
        baseline: str | Sequence[str] | None = None,
        one_means: str | None = None,
        strict: bool = False,
        exclude_removed: bool = False,
        raters: RaterFilterResult | Iterable[int] | str | os.PathLike[str] | None = None,
        min_quality: float | None = None,
        no_persona: Frame | None = None,
    ) -> pl.DataFrame:
        """Score a model's predictions (`dices evaluate`): a file, or a polars or pandas frame
        with item_id and a label, score or distribution. One row per model x reference
        (x group); warnings (coverage, a suspected flipped polarity) are `DicesNote`s. A
        declared dataset's `label` (None: its first) is scored by LeWiDi's measures. A persona
        file's rows open with its persona signal; `no_persona` (the same prompt's predictions
        without personas) adds the comparison with them.

        >>> from dices_cli.runs.demo import demo_predictions_path
        >>> scored = d.evaluate(demo_predictions_path(), against=["gold"], bootstrap=50)
        >>> scored.select("model", "reference", "n", "accuracy").rows()
        [('five-raters', 'gold', 40, 0.75), ('five-raters-flipped', 'gold', 40, 0.25)]
        """
        with contextlib.ExitStack() as files:
            path = files.enter_context(as_file(predictions, "predictions"))
            plain = (
                None
                if no_persona is None
                else files.enter_context(as_file(no_persona, "no_persona"))
            )
            result = run_evaluate(
                self._store,
                path,
                dataset,
                names_of(against),
                names_of(by),
                label=label,
                ties=ties,
                threshold=threshold,
                bootstrap=bootstrap,
                permutations=permutations,
                interval=interval,
                seed=seed,
                baseline=names_of(baseline),
                one_means=one_means,
                strict=strict,
                selection=selection_of(raters, exclude_removed, min_quality),
                no_persona=plain,
                tell=warn,
            ).evaluation
        for note in result.warnings:
            warn(f"warning: {note}")
        for suspect in result.suspects:
            warn(f"warning: {suspect.message()}")
        return frame(result.table, self._enums(dataset))

    def as_rater(
        self,
        predictions: Frame,
        dataset: str = SCORED_BY_DEFAULT,
        by: str | Sequence[str] | None = None,
        *,
        ties: str = "exclude",
        threshold: float = 0.5,
        permutations: int | None = None,
        seed: int | None = None,
        one_means: str | None = None,
        exclude_removed: bool = False,
        raters: RaterFilterResult | Iterable[int] | str | os.PathLike[str] | None = None,
        min_quality: float | None = None,
    ) -> pl.DataFrame:
        """Each model of the predictions as one more rater (`dices evaluate --as-rater`): its
        xrr with the pool and with each group of `by`, the raters' own alpha and xrr / alpha
        (permutation tests as `agreement`'s), and, for several models, their error
        correlation and effective number of independent judges. One figure per row.

        >>> from dices_cli.runs.demo import demo_predictions_path
        >>> rated = d.as_rater(demo_predictions_path())
        >>> rated.filter(figure="xrr").select("model", "value").rows()[0][0]
        'five-raters'
        """
        from dices_cli.runs.as_rater import run_as_rater

        with as_file(predictions, "predictions") as path:
            result = run_as_rater(
                self._store,
                path,
                dataset,
                names_of(by),
                ties=ties,
                threshold=threshold,
                permutations=permutations,
                seed=seed,
                one_means=one_means,
                selection=selection_of(raters, exclude_removed, min_quality),
                tell=warn,
            )
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
        run = run_rater_filter(self._store, dataset, min_quality, preset)
        return RaterFilterResult(
            raters=frame(run.quality(explain)),
            audit=frame(run.audit_table()),
            kept=frozenset(run.kept_ids),
            description=run.rule.description,
        )

    def report(
        self,
        path: str | os.PathLike[str],
        by: str | Sequence[str] | None = None,
        dataset: str = "all",
        *,
        predictions: Frame | None = None,
        predictions_dataset: str | None = None,
        permutations: int | None = None,
        seed: int | None = None,
        bootstrap: int | None = None,
        baseline: str | Sequence[str] | None = None,
        ties: str | None = None,
        threshold: float | None = None,
        one_means: str | None = None,
        strict: bool = False,
        force: bool = False,
        exclude_removed: bool = False,
        raters: RaterFilterResult | Iterable[int] | str | os.PathLike[str] | None = None,
        min_quality: float | None = None,
    ) -> Path:
        """Write the HTML report (`dices report`) to `path` and return it; `force` replaces
        an existing file. With `predictions` (a file or a frame, as for `evaluate`), the
        report also scores the model against the experts, the crowd and each `by` group,
        with `evaluate`'s settings (`bootstrap`, `baseline`, `ties`, `threshold`,
        `one_means`, `strict`). The page records the equivalent `dices report` command."""
        selection = selection_of(raters, exclude_removed, min_quality)
        extra: dict[str, object] = {"exclude_removed": exclude_removed or None}
        extra["min_quality"] = min_quality
        extra["raters"] = f"<{len(selection.keep_ids)} ids>" if selection.keep_ids else None
        root = self.root

        def made_by(settings: Recorded) -> str:
            """The call, each setting as resolved, with a Python literal's spelling."""
            given: dict[str, list[str]] = {}
            for name, value in settings:
                said = "True" if value is None else value if is_number(value) else repr(value)
                given.setdefault(name, []).append(said)
            words = [
                f"{n}={v[0] if n != 'by' else '[' + ', '.join(v) + ']'}" for n, v in given.items()
            ]
            words += [f"{name}={value!r}" for name, value in extra.items() if value is not None]
            return f"dices_cli.open({str(root)!r}).report({str(path)!r}, {', '.join(words)})"

        with contextlib.ExitStack() as stack:
            named = None
            if predictions is not None:
                named = stack.enter_context(as_file(predictions, "predictions"))
            run = run_report(
                self._store,
                Path(path),
                dataset,
                selection,
                names_of(by) or [],
                permutations=permutations,
                seed=seed,
                predictions=named,
                predictions_dataset=predictions_dataset,
                bootstrap=bootstrap,
                baseline=names_of(baseline),
                ties=ties,
                threshold=threshold,
                one_means=one_means,
                strict=strict,
                force=force,
                inputs=[self.root],
                made_by=made_by,
                tell=warn,
            )
        for note in run.left_out:
            warn(f"note: {note}")
        return run.path

    # --- judge and download: dices_cli.runs.judge, dices_cli.runs.download --------------------

    def judge(self, model: str, dataset: str = SCORED_BY_DEFAULT, **settings: Any) -> pl.DataFrame:
        """Run an LLM judge or a safety classifier over `dataset`'s conversations
        (`dices judge`): its predictions (model, item_id, label, score, ...), which `evaluate`
        takes as they are. `settings` are `dices_cli.runs.judge.JudgeSettings`' by name
        (`base_url`, `prompt`, `samples`, `limit`, `output`, `force`, ...), checked as on the
        command line; the answers are cached in the data directory, as the command's are.
        With `dry_run=True`: one row of what a run would ask; with `batch=FILE`: the batch
        files written, one row each. Warnings are `DicesNote`s.

        >>> d.judge("baseline:always-unsafe", limit=2).select("item_id", "label").rows()
        [(13, 'unsafe'), (20, 'unsafe')]
        """
        from dices_cli.runs.judge import judge_settings, run_judge

        given = judge_settings(model=model, dataset=dataset, **settings)
        return frame(run_judge(self._store, given, tell=noted).table())

    def download(
        self, dataset: str, dir: str | os.PathLike[str] = ".", **settings: Any
    ) -> pl.DataFrame:
        """Fetch `dataset`'s official files into `dir`, verified (`dices download`): one row
        per file (dataset, file, path, size, sha256, url; url None: it was there already).
        `settings` are `dices_cli.runs.download.DownloadSettings`' by name (`url`, `sha256`,
        `force`, `timeout`, `deadline`, `retries`, `max_size`); `ingest=True` ingests the
        files into this data directory; `dry_run=True` fetches nothing and gives the plan,
        one row per file and source.

        >>> d.download("350", "files", dry_run=True).select("dataset", "source").rows()
        [('DICES-350', 1), ('DICES-350', 2), ('DICES-350', 3)]
        """
        from dices_cli.runs.download import download_settings, run_download

        given = download_settings(dataset=dataset, dir=dir, data=self.root, **settings)
        return frame(run_download(given, tell=noted).table())
