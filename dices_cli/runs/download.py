"""`dices download`: the official dataset files fetched and verified, their plan listed
without fetching (a dry run), or fetched and ingested into a data directory.

`run_download` is the command, its settings checked first; messages name parameters as
`Option`s. Each file is handed to the caller as soon as it is verified, so that the files
fetched before a failure are known all the same.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dices_cli.download import DEFAULT_DEADLINE, DEFAULT_RETRIES, DEFAULT_TIMEOUT
from dices_cli.errors import Option, UsageError
from dices_cli.read.source import DEFAULT_MAX_SIZE
from dices_cli.runs.common import Tell, check_names, in_range, size_of, unsaid

if TYPE_CHECKING:
    from dices_cli.download import Fetched, Progress, Retrying, WantedFile
    from dices_cli.formats.ingest import IngestResult
    from dices_cli.output import Table

MOST_RETRIES = 20
LEAST_SECONDS = 0.01  # the shortest timeout and deadline
# The dry run's listing: one row per file and source, in the order the sources are tried.
PLAN_COLUMNS = ("dataset", "file", "size", "sha256", "source", "url", "here")
# The files fetched: one row each, `path` where it is (what the command line prints).
FETCHED_COLUMNS = ("dataset", "file", "path", "size", "sha256", "url")


@dataclass(frozen=True)
class DownloadSettings:
    """A download as plain values: `dataset` (a dataset some family publishes, or "all"),
    into the directory `dir`; `url` a mirror of a single-file dataset's file, `sha256` the
    checksum a newer release has; `max_size` (bytes, or a size such as "4G") bounds a file
    without a published size. `dry_run` lists the plan and fetches nothing; `ingest` stores
    the fetched files in the data directory `data` (None: $DICES_DATA, else ./dices-data).
    """

    dataset: str
    dir: Path = Path(".")
    url: str | None = None
    sha256: str | None = None
    force: bool = False
    timeout: float = DEFAULT_TIMEOUT
    deadline: float = DEFAULT_DEADLINE
    retries: int = DEFAULT_RETRIES
    max_size: int | str = DEFAULT_MAX_SIZE
    dry_run: bool = False
    ingest: bool = False
    data: Path | None = None


@dataclass(frozen=True)
class DownloadResult:
    """What `run_download` did: the `plan` of a dry run, else the `files` fetched (or found
    verified in place) and what `ingest` stored of them."""

    plan: Table | None = None
    files: tuple[Fetched, ...] = ()
    ingested: tuple[IngestResult, ...] = ()

    def table(self) -> Table:
        """The plan of a dry run, else the files fetched."""
        return self.plan if self.plan is not None else self.fetched_table()

    def fetched_table(self) -> Table:
        """The files fetched, one row each (`FETCHED_COLUMNS`; `url` None: it was there)."""
        from dices_cli.output import table_from_rows

        rows = [
            (f.wanted.title, f.wanted.file_name, str(f.path), f.digest.size, f.digest.sha256, f.url)
            for f in self.files
        ]
        return table_from_rows(list(FETCHED_COLUMNS), rows)


def download_settings(**given: Any) -> DownloadSettings:
    """`DownloadSettings` from a Python caller's keyword arguments (`dir` and `data` a
    string or a path)."""
    from dataclasses import fields

    check_names("download", given, {f.name for f in fields(DownloadSettings)})
    for name in ("dir", "data"):
        if given.get(name) is not None:
            given[name] = Path(given[name])
    return DownloadSettings(**given)


def run_download(
    settings: DownloadSettings,
    progress: Progress | None = None,
    tell: Tell = unsaid,
    *,
    retrying: Retrying | None = None,
    fetched: Callable[[Fetched], None] | None = None,
) -> DownloadResult:
    """Fetch the files of `settings` (or list them, for a dry run), then ingest them if
    asked. `progress` hears how far each file (and each ingest) is; `retrying` of each fault
    tried again; `fetched` of each file as soon as it is verified; `tell` gets the ingest's
    notes. Every setting is checked before any request."""
    from dices_cli.download import download

    wanted, most = download_plan(settings)
    if settings.dry_run:
        return DownloadResult(plan=plan_table(wanted, settings.dir))
    done = []
    fetching = download(
        wanted,
        settings.dir,
        force=settings.force,
        timeout=settings.timeout,
        deadline=settings.deadline,
        retries=settings.retries,
        max_size=most,
        progress=progress,
        retrying=retrying,
    )
    for file in fetching:
        done.append(file)
        if fetched is not None:
            fetched(file)
    ingested = ingest_fetched(done, settings, progress, tell) if settings.ingest else ()
    return DownloadResult(files=tuple(done), ingested=ingested)


def download_plan(settings: DownloadSettings) -> tuple[list[WantedFile], int]:
    """The files to fetch, each with its sources, and the most bytes a file without a
    published size may have: every setting checked."""
    from dices_cli.download import plan
    from dices_cli.families import all_members
    from dices_cli.runs.common import check_choice

    check_choice("dataset", settings.dataset, (*all_members(), "all"))
    check_seconds(settings)
    in_range("retries", settings.retries, 0, MOST_RETRIES)
    wanted = plan(settings.dataset, settings.url, settings.sha256)
    most = size_of(settings.max_size)
    if settings.dir.exists() and not settings.dir.is_dir():
        raise UsageError(Option("dir"), f" {settings.dir} is not a directory")
    if settings.dry_run and settings.ingest:
        raise UsageError(
            Option("dry_run"), " fetches nothing, so there is nothing to ", Option("ingest")
        )
    return wanted, most


def check_seconds(settings: DownloadSettings) -> None:
    """A timeout is finite (a socket cannot wait forever); each at least LEAST_SECONDS."""
    if not math.isfinite(settings.timeout):
        raise UsageError(
            Option("timeout"), f" is a finite number of seconds, not {settings.timeout:g}"
        )
    if math.isnan(settings.deadline):
        raise UsageError(Option("deadline"), f" is a number of seconds, not {settings.deadline:g}")
    for name in ("timeout", "deadline"):
        if getattr(settings, name) < LEAST_SECONDS:
            raise UsageError(
                Option(name),
                f" must be at least {LEAST_SECONDS:g} s (got {getattr(settings, name):g})",
            )


def unreachable(error: BaseException) -> bool:
    """Whether `error` ended a download because no source could be reached at all (no
    network, a wrong host, a firewall): other ways to the files may help."""
    from dices_cli.download import NoSourceServed, SourceFailed

    return isinstance(error, NoSourceServed | SourceFailed) and error.unreachable


def plan_table(wanted: Sequence[WantedFile], directory: Path) -> Table:
    """Per file and source, in the order they are tried: what the file must be, where it is
    fetched from, and what is in `directory` now. Nothing is fetched."""
    from dices_cli.download import status
    from dices_cli.output import table_from_rows

    rows = []
    for file in wanted:
        here = status(file, directory)
        for number, url in enumerate(file.urls, 1):
            rows.append((file.title, file.file_name, file.size, file.sha256, number, url, here))
    return table_from_rows(list(PLAN_COLUMNS), rows)


def ingest_fetched(
    files: Sequence[Fetched], settings: DownloadSettings, progress: Progress | None, tell: Tell
) -> tuple[IngestResult, ...]:
    """The fetched files ingested into `settings.data` (`run_ingest`): one ingest per
    dataset, as `dices ingest -d DATASET` would be run on its files (each dataset stands
    alone: two declared datasets may share their columns)."""
    from itertools import groupby

    from dices_cli.runs.ingest import run_ingest
    from dices_cli.store.datasets import Store, resolve_data_dir

    store = Store(resolve_data_dir(settings.data))
    results: list[IngestResult] = []
    for dataset, group in groupby(files, key=lambda done: done.wanted.dataset):
        paths = [done.path for done in group]
        for result in run_ingest(store, paths, dataset, force=settings.force, progress=progress):
            results.append(result)
            for note in result.notes:
                tell(note)
    return tuple(results)
