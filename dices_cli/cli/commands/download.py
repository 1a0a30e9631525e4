"""`dices download`: fetch the official dataset files, verified, and optionally ingest them."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer._click import core as click_core
from typer._click import types as click_types
from typer.core import TyperArgument, TyperCommand, TyperOption

from dices_cli.cli.commands.options import (
    DEFAULT_MAX_SIZE,
    ColumnsOption,
    DataDir,
    LimitOption,
    OutputFormat,
    SortOption,
)
from dices_cli.cli.render import progress_bar, say

if TYPE_CHECKING:
    from dices_cli.errors import DicesError
    from dices_cli.output import Format, Table
    from dices_cli.runs.download import Fetched

DEFAULT_TIMEOUT = 30.0  # dices_cli.download.DEFAULT_TIMEOUT, spelled for --help
DEFAULT_DEADLINE = 3600.0  # dices_cli.download.DEFAULT_DEADLINE
DEFAULT_RETRIES = 4  # dices_cli.download.DEFAULT_RETRIES


def _choices() -> tuple[str, ...]:
    from dices_cli.families import all_members

    return (*all_members(), "all")


class _Declared(click_types.ParamType):
    """A dataset some family declares files of, or "all": a choice read from the
    declarations when the command runs, so that a new family needs no edit here."""

    name = "dataset"

    def get_metavar(
        self, param: click_core.Parameter, ctx: click_core.Context | None = None
    ) -> str:
        return f"<{'|'.join(_choices())}>"

    def convert(
        self, value: str, param: click_core.Parameter | None, ctx: click_core.Context | None
    ) -> str:
        choices = _choices()
        if value not in choices:
            self.fail(f"{value!r} is not one of {', '.join(map(repr, choices))}.", param, ctx)
        return value


# How many files a dataset is published as, in the help's words (digits from 10).
_COUNTS = ("", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")


class _DownloadCommand(TyperCommand):
    """`dices download`, whose DATASET argument and --url help are drawn from the families'
    declarations each time the command is built (every run), so that a new family shows in
    --help with no edit here: Typer takes help text as fixed strings."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        from dices_cli.families import listed, single_file_members

        super().__init__(*args, **kwargs)
        for param in self.params:
            if isinstance(param, TyperArgument) and param.name == "dataset":
                param.metavar = "|".join(_choices())
                param.help = f"What to fetch: {listed([*_published(), 'all'], 'or')}."
            elif isinstance(param, TyperOption) and param.name == "url":
                param.help = (
                    f"Fetch the one file of {listed(single_file_members(), 'or')} from URL "
                    "(a mirror): it must still be the published file, unless --sha256 is given."
                )


def _published() -> list[str]:
    """Each dataset published as files, with how many when more than one."""
    from dices_cli.families import FAMILIES

    counts = [(m, len(f.files_of(m))) for f in FAMILIES.values() for m in f.members]
    return [_files_of(member, files) for member, files in counts if files]


def _files_of(member: str, files: int) -> str:
    """`member`, with its number of files in words when it has several: 990 (two files)."""
    if files == 1:
        return member
    return f"{member} ({_COUNTS[files] if files < len(_COUNTS) else files} files)"


def download(
    dataset: Annotated[
        str,
        typer.Argument(click_type=_Declared()),  # its metavar and help: _DownloadCommand
    ],
    directory: Annotated[
        Path,
        typer.Option("--dir", help="Put the files in DIR.", file_okay=False),
    ] = Path("."),
    ingest: Annotated[
        bool,
        typer.Option(
            "--ingest", help="Ingest the fetched files into --data DIR, as `dices ingest` does."
        ),
    ] = False,
    data: DataDir = None,
    url: Annotated[
        str | None,
        typer.Option("--url", show_default=False),  # its help: _DownloadCommand
    ] = None,
    sha256: Annotated[
        str | None,
        typer.Option(
            "--sha256",
            metavar="HEX",
            help="Expect this SHA-256 instead of the published one (a newer release).",
            show_default=False,
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Fetch again over a file in DIR that is not the published one or has no "
            "published checksum; with --ingest, replace datasets already ingested.",
        ),
    ] = False,
    timeout: Annotated[
        float,
        typer.Option("--timeout", metavar="SECONDS", min=0.01, help="Give up on a silent server."),
    ] = DEFAULT_TIMEOUT,
    deadline: Annotated[
        float,
        typer.Option(
            "--deadline",
            metavar="SECONDS",
            min=0.01,
            help="Give each source this long to serve a whole file, tries included (a server "
            "can be slow without ever being silent).",
        ),
    ] = DEFAULT_DEADLINE,
    retries: Annotated[
        int,
        typer.Option(
            "--retries",
            metavar="N",
            min=0,
            max=20,
            help="Try again N times after a network failure or a 5xx answer, waiting 1, 2, 4 "
            "... s, before moving to the next source.",
        ),
    ] = DEFAULT_RETRIES,
    max_size: Annotated[
        str,
        typer.Option(
            "--max-size",
            metavar="SIZE",
            help="Refuse a file without a published size (--sha256, ProsocialDialog) that is "
            "larger (e.g. 500M, 4G).",
        ),
    ] = DEFAULT_MAX_SIZE,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="List each file's sources in order, size and SHA-256, and whether it is in "
            "DIR and verified, one row per source (a table, or --format csv|json...); fetch "
            "nothing.",
        ),
    ] = False,
    fmt: OutputFormat = None,
    keep_columns: ColumnsOption = None,
    sort: SortOption = None,
    limit: LimitOption = None,
) -> None:
    """Fetch the official files, verify their size and SHA-256, print their paths.

    DICES comes from github.com/google-research-datasets/dices-dataset, tried at three
    sources in order: the pinned commit, the last commit that changed the data files, and
    the branch main; the first to serve the published size and SHA-256 wins, and what each
    earlier one did is said. ProsocialDialog comes from
    huggingface.co/datasets/allenai/prosocial-dialog (into DIR/prosocial; it publishes no
    checksums, so each file's own SHA-256 is shown to check). A declared dataset's files
    come from the commit its declaration pins, into DIR/NAME. A file is written as
    NAME.SOURCE.part and renamed only once verified; a broken download resumes from the
    same source where the server allows it. A file already in DIR that is the published one
    is not fetched again. Proxies come from http_proxy, https_proxy and no_proxy;
    DICES_DOWNLOAD_BASE=URL fetches every file from a mirror with the same paths, and only
    from there.

    Examples:

        dices download all --ingest

        dices download 350 --dir ~/datasets

        dices download 990 --url https://mirror.example.org/dices_990.csv
    """
    from dices_cli.runs.download import DownloadSettings, run_download

    shaped = (fmt, keep_columns, sort, limit) != (None, None, None, None)
    settings = DownloadSettings(
        dataset,
        directory,
        url,
        sha256,
        force,
        timeout,
        deadline,
        retries,
        max_size,
        dry_run,
        ingest,
        data,
    )
    if shaped and not dry_run:
        from dices_cli.errors import UsageError

        raise UsageError(
            "--format, --columns, --sort and --limit shape the --dry-run listing; a download "
            "prints the paths of its files"
        )
    with progress_bar(enabled=not dry_run) as progress, ways_round():
        result = run_download(settings, progress, say, retrying=_say_retry, fetched=_report)
    if result.plan is not None:
        _show_plan(result.plan, fmt, keep_columns, sort, limit)


def _say_retry(title: str, failed: DicesError, wait: float) -> None:
    from dices_cli.cli.commands.wording import worded

    say(f"{title}: {worded(failed)}; trying again in {wait:.3g} s")


WAYS_ROUND = (
    "hint: no source could be reached. Without a network here, fetch the files from a "
    "mirror (--url URL for one file, DICES_DOWNLOAD_BASE=URL for all of them), or download "
    "them by hand (dices download all --dry-run lists their addresses and SHA-256) and run "
    "dices ingest FILE"
)


@contextlib.contextmanager
def ways_round() -> Iterator[None]:
    """A download whose sources could not be reached ends with the other ways to the files."""
    from dices_cli.errors import DicesError
    from dices_cli.runs.download import unreachable

    try:
        yield
    except DicesError as error:
        if unreachable(error):
            say(WAYS_ROUND)
        raise


def _report(done: Fetched) -> None:
    """A file's path on stdout; what became of it, and which source served it, on stderr."""
    from dices_cli.cli.commands.wording import worded
    from dices_cli.output import open_stdout
    from dices_cli.terminal_text import printable

    title = done.wanted.title
    for failed in done.passed:
        say(f"{title}: {worded(failed)}; tried the next source")
    how = f"downloaded from {printable(done.url)}" if done.url else "already there"
    known = "SHA-256 verified" if done.wanted.sha256 else "no published checksum"
    say(f"{title}: {how}, {done.digest.size:,} bytes, {known} -> {done.path}")
    if done.wanted.sha256 is None:
        say(f"  warning: {done.path.name} has SHA-256 {done.digest.sha256}")
    with open_stdout() as stdout:
        stdout.write(os.fsencode(done.path) + b"\n")


def _show_plan(
    table: Table,
    fmt: Format | None,
    keep_columns: str | None,
    sort: str | None,
    limit: int | None,
) -> None:
    """The dry run's listing, shaped, one row per file and source."""
    from dices_cli.cli.commands.answers import show_shaped
    from dices_cli.cli.focus import Focus
    from dices_cli.output import Output
    from dices_cli.shape import Shape

    shape = Shape.parse(keep_columns, sort, limit)
    focus = Focus(keys=("dataset",), answer=("source", "url", "here"))
    show_shaped(table, shape, Output.build(fmt, None, False, []), "Download plan", focus=focus)


def register(app: typer.Typer) -> None:
    app.command(cls=_DownloadCommand, no_args_is_help=True)(download)
