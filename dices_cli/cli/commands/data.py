"""Commands that move data in and out: ingest, validate, info, export, demo."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from dices_cli.cli.commands.options import (
    DEFAULT_MAX_SIZE,
    MEMBERS_THEN_ALL,
    ColumnsOption,
    DataDir,
    ExcludeRemoved,
    Force,
    LimitOption,
    MinQuality,
    OutputFile,
    OutputFormat,
    RatersFile,
    SortOption,
    rater_selection,
    read_paths,
    registered,
    show_shaped,
    size_limit,
)
from dices_cli.cli.render import progress_bar, say
from dices_cli.families import grouped_members, listed
from dices_cli.formats.dices.layouts import Layout
from dices_cli.queries.catalog import GROUP_COLUMNS

if TYPE_CHECKING:
    from dices_cli.output import Format
    from dices_cli.store.datasets import StoredDataset

DatasetChoice = Annotated[
    str,
    typer.Option(
        "--dataset",
        "-d",
        click_type=registered("auto", *grouped_members()),
        help="Which DICES file this is: auto (from the header), "
        f"{listed(grouped_members(), 'or')}.",
    ),
]
Files = Annotated[
    list[Path],
    # A directory is refused by `_inputs`, which says how to give a data directory.
    typer.Argument(help="DICES CSV files (plain or .gz); - reads stdin.", show_default=False),
]
# Ingest reads any registered dataset: DICES's two, ProsocialDialog, the declared ones.
IngestDataset = Annotated[
    str,
    typer.Option(
        "--dataset",
        "-d",
        help="Which dataset the files are: auto (by their content), 350, 990, or a declared "
        "dataset's name (dices download --dry-run lists the built-in ones).",
    ),
]
Declaration = Annotated[
    Path | None,
    typer.Option(
        "--declaration",
        help="A TOML file declaring your dataset: files, column roles, label scales "
        "(docs/datasets.md; dices describe FILE writes a draft).",
        dir_okay=False,
    ),
]
MaxSize = Annotated[
    str,
    typer.Option(
        "--max-size",
        metavar="SIZE",
        help="Refuse a gzip file or piped input whose CSV text is larger (e.g. 500M, 4G).",
    ),
]
EXCEL_SAFE_IS_FOR_CSV = "--excel-safe is for CSV, which spreadsheets open; leave it out"


def _inputs(files: list[Path], max_size: str, store: bool = False) -> tuple[list[Path], int]:
    """The files, checked as a usage matter (each exists and is not a directory, stdin at
    most once), and the limit. `store`: the command writes to a data directory, which a
    directory given among the files may have been meant as."""
    from dices_cli.errors import UsageError
    from dices_cli.read.source import STDIN

    for path in files:
        if str(path) != STDIN and not path.exists() and not path.is_symlink():
            raise UsageError(f"'{path}' does not exist")
        if path.is_dir():
            meant = f"; a data directory is given as --data {path}" if store else ""
            raise UsageError(f"'{path}' is a directory: give the files to read{meant}")
    if sum(str(path) == STDIN for path in files) > 1:
        raise UsageError("- (stdin) can be given once")
    return files, size_limit(max_size)


@contextlib.contextmanager
def _max_size_named() -> Iterator[None]:
    """Point the user to --max-size when an input is over the limit."""
    from dices_cli.errors import DicesError
    from dices_cli.read.source import TooLargeError

    try:
        yield
    except TooLargeError as error:
        raise DicesError(f"{error}; --max-size raises the limit") from error


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Run inside without Python's cycle collector, and leave what was made inside in its
    oldest generation, unscanned. Importing Polars made it go over the new modules' objects
    some 50 times (DICES-990: 8-12 ms of an ingest's CPU); an ingest makes no cycles worth
    collecting (its rows are Polars', its few Python objects freed as it goes)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()  # every tracked object to the permanent generation...
        gc.unfreeze()  # ...and back to the oldest one: the young ones, uncollected
        if enabled:
            gc.enable()


def ingest(
    files: Files,
    data: DataDir = None,
    dataset: IngestDataset = "auto",
    declaration: Declaration = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Replace a dataset that is already ingested, and a --rejects FILE that exists.",
        ),
    ] = False,
    rejects: Annotated[
        Path | None,
        typer.Option(
            "--rejects",
            help="Write valid rows; put each rejected row, verbatim, with its problems in FILE.",
            dir_okay=False,
        ),
    ] = None,
    max_size: MaxSize = DEFAULT_MAX_SIZE,
    split: Annotated[
        str | None,
        typer.Option(
            "--split",
            metavar="NAME",
            help="The split the files hold, when their names do not say it (ProsocialDialog: "
            "train, valid or test; a file named train.json is the train split).",
        ),
    ] = None,
) -> None:
    """Validate DICES CSV files and store them as typed Parquet.

    Each file becomes DIR/350 or DIR/990 (items, raters, ratings and a manifest).
    ProsocialDialog's JSON Lines files (train.json, valid.json, test.json; any of them,
    recognised by their content) become one DIR/prosocial (items, ratings, manifest).
    A declared dataset's files (the built-in POPQUORN, LeWiDi and D3CODE sets, or your own
    with --declaration FILE) become DIR/NAME (items, raters, ratings, manifest).
    Invalid input is refused whole unless --rejects is given. Writing is atomic: an
    interrupted ingest leaves the previous data as it was.

    Examples:

        dices ingest diverse_safety_adversarial_dialog_350.csv

        dices ingest dices_350.csv dices_990.csv --data ~/dices --force

        dices ingest messy.csv --rejects rejected.csv

        gunzip -c dices_990.csv.gz | dices ingest -

        dices ingest ratings.csv --declaration my-dataset.toml
    """
    from dices_cli.read import checksum

    files, limit = _inputs(files, max_size, store=True)
    checksum.prefetch(files)  # hashes and counts on a spare core while Polars is imported
    with _collector_paused():
        from dices_cli.formats.ingest import ingest as run_ingest
        from dices_cli.store.datasets import Store, resolve_data_dir

        store = Store(resolve_data_dir(data))
        with progress_bar(enabled=True) as progress, _max_size_named():
            results = run_ingest(
                files, store, dataset, force, rejects, progress, limit, declaration, split
            )
    for result in results:
        for note in result.notes:
            say(note)


# What a problem is and where: kept on a narrow screen with the file, type and severity.
PROBLEM_ANSWER = ("line", "column", "message")


def validate(
    files: Files,
    dataset: DatasetChoice = "auto",
    fmt: OutputFormat = None,
    output: OutputFile = None,
    force: Force = False,
    max_size: MaxSize = DEFAULT_MAX_SIZE,
    keep_columns: ColumnsOption = None,
    sort: SortOption = None,
    limit: LimitOption = None,
) -> None:
    """Check DICES CSV files without ingesting them; list every problem found.

    Each problem is a record (file, type, severity, line, column, value, message).
    Exit status 1 when any file has errors; warnings alone do not fail.

    Examples:

        dices validate dices_350.csv

        dices validate dices_350.csv --format csv -o problems.csv

        curl -s https://example.org/dices_350.csv | dices validate -
    """
    from dices_cli.cli.focus import Focus
    from dices_cli.formats.validate import validate_file
    from dices_cli.output import Output, Table
    from dices_cli.problems import PROBLEM_FIELDS
    from dices_cli.read import checksum
    from dices_cli.shape import Shape

    shape = Shape.parse(keep_columns, sort, limit)
    files, size_limit = _inputs(files, max_size)
    out = Output.build(fmt, output, force, files)  # before reading: the files may be large
    checksum.prefetch(files)  # counts each file's bytes on a spare core while Polars is imported
    reports = []
    with progress_bar(enabled=True) as progress, _max_size_named():
        for path in files:
            reports.append(validate_file(path, dataset, size_limit, progress))
    columns = ["file", *PROBLEM_FIELDS]
    rows = [
        (report.path, *(problem.as_record()[f] for f in PROBLEM_FIELDS))
        for report in reports
        for problem in report.problems
    ]
    table = Table(columns, [c == "line" for c in columns], rows)
    show_shaped(table, shape, out, "Problems", focus=Focus(answer=PROBLEM_ANSWER))
    for report in reports:
        say(report.summary())
    if not all(report.ok for report in reports):
        raise typer.Exit(1)


def info(
    data: DataDir = None,
    fmt: OutputFormat = None,
    output: OutputFile = None,
    force: Force = False,
    verify: Annotated[
        bool,
        typer.Option(
            "--verify",
            help="Also check every stored file against its recorded SHA-256 (as `dices verify`).",
        ),
    ] = False,
    keep_columns: ColumnsOption = None,
    sort: SortOption = None,
    limit: LimitOption = None,
) -> None:
    """Show what is ingested: per dataset, conversations, raters, ratings, source and checksum.

    Examples:

        dices info --data ~/dices

        dices info --verify
    """
    from dices_cli.cli.commands.verify import report_damage
    from dices_cli.cli.focus import Focus
    from dices_cli.errors import NotIngestedError
    from dices_cli.output import Output, table_from_rows
    from dices_cli.shape import Shape
    from dices_cli.store.datasets import UNITS, Store, inventory, resolve_data_dir

    shape = Shape.parse(keep_columns, sort, limit)
    store = Store(resolve_data_dir(data))
    out = Output.build(fmt, output, force, [store.root])
    records = inventory(store)
    if not records:
        raise NotIngestedError(
            f"nothing is ingested in {store.root}; run `dices ingest FILE` first"
        )
    table = table_from_rows(list(records[0]), [tuple(r.values()) for r in records])
    # What the help promises: the counts, where each dataset came from and its checksum.
    counts = tuple(unit for units in UNITS.values() for unit in units)
    answer = Focus(answer=(*counts, "source", "sha256"))
    show_shaped(table, shape, out, f"Datasets in {store.root}", focus=answer)
    if verify and not report_damage(store):
        raise typer.Exit(1)


def export(
    dataset: Annotated[
        str | None,
        typer.Option(
            "--dataset",
            "-d",
            click_type=registered(*MEMBERS_THEN_ALL),
            help="The dataset to write; all (DICES-350 and 990, the default of the long and "
            "soft-labels layouts); prosocial (wide only) writes ProsocialDialog's JSON Lines "
            "back. The wide and judge-bench layouts write one: name it.",
            show_default=False,
        ),
    ] = None,
    layout: Annotated[
        Layout,
        typer.Option(
            "--layout",
            help="wide (the ingested file), long, crowdkit, soft-labels or judge-bench: see above.",
            case_sensitive=False,
        ),
    ] = Layout.WIDE,
    by: Annotated[
        list[str] | None,
        typer.Option(
            "--by",
            "-b",
            metavar="COLUMN",
            help="soft-labels: one row per conversation and group of this rater column "
            "(repeat: their intersection). One of: " + ", ".join(GROUP_COLUMNS) + ".",
        ),
    ] = None,
    exclude_removed: ExcludeRemoved = False,
    raters: RatersFile = None,
    min_quality: MinQuality = None,
    data: DataDir = None,
    fmt: OutputFormat = None,
    output: OutputFile = None,
    force: Force = False,
    excel_safe: Annotated[
        bool,
        typer.Option(
            "--excel-safe",
            help="For spreadsheets (CSV, any layout): put ' before text that starts with "
            "= + - @, a tab or a CR.",
        ),
    ] = False,
) -> None:
    """Write an ingested dataset back as the original wide CSV, or in a layout other tools read.

    --layout wide (the default): same columns in the same order, same rows in the same
    order, same cell strings as the file that was ingested. --excel-safe defuses text
    cells that a spreadsheet would run as formulas (CSV injection) by prefixing a single
    quote; the file is then for reading in a spreadsheet, no longer an exact copy. Other
    formats (--format, or -o's extension) hold the same rows and columns typed as stored:
    ENUMs, integers, UTC times.

    --layout long: one row per rating (ordered by dataset and id, DICES's row number):
    dataset, item_id, rater_id, label (Q_overall: Yes = unsafe, No, Unsure) and the
    rater's demographics.

    --layout crowdkit: the long layout under crowd-kit's names, what its aggregators
    (MajorityVote, DawidSkene...) read as they are: task (the item_id; with -d all,
    dataset/item_id, as 350/13: the ids repeat across the datasets), worker (rater_id), label.

    --layout soft-labels: one row per conversation, or with --by per conversation and
    rater group: dataset, item_id, the --by columns, ratings, n_no, n_yes, n_unsure,
    share_no, share_yes, share_unsure.

    --layout judge-bench: the JSON document the JUDGE-BENCH harness reads, for one
    dataset: per conversation, its context (user_prompt) and response, every rater's
    answer (individual_human_scores) and the most frequent (majority_human; on a tie the
    one given first, as JUDGE-BENCH does; tied_items lists them). The labels are DICES's,
    never flipped: Yes = unsafe, No = safe. JUDGE-BENCH's own DICES files ask "Is the
    model response safe?" over these same labels; this file's prompt asks whether it is
    unsafe, and its label_meaning field says so.

    The rater selection options (--exclude-removed, --raters, --min-quality) apply to the
    long, soft-labels and judge-bench layouts.

    --excel-safe applies to every CSV: wide, long and soft-labels.

    -d prosocial writes ProsocialDialog back as the JSON Lines it was ingested from.

    Examples:

        dices export --dataset 350 -o dices_350_roundtrip.csv

        dices export -d 990 --excel-safe -o dices_990_for_excel.csv

        dices export -d 350 -o dices_350.parquet

        dices export -d all --layout long --exclude-removed -o ratings.parquet

        dices export -d 350 --layout soft-labels --by rater_gender -o soft.csv

        dices export -d 990 --layout judge-bench -o dices_990.json

        dices export -d 990 | csvlook | less -S
    """
    from dices_cli.errors import UsageError
    from dices_cli.formats.dices.export import source_path, typed_table, write_csv
    from dices_cli.output import Format, Output
    from dices_cli.store.datasets import Store, resolve_data_dir

    if fmt is Format.TABLE:
        raise UsageError("export writes data: pick --format csv, tsv, json, jsonl or parquet")
    if dataset is None:  # the layouts that take both DICES datasets default to all of them
        if layout in (Layout.WIDE, Layout.JUDGE_BENCH):
            raise UsageError(
                f"--layout {layout} writes one dataset: give --dataset 350, 990"
                f"{' or prosocial' if layout is Layout.WIDE else ''}"
            )
        dataset = "all"
    _check_layout_options(layout, dataset, by, excel_safe, exclude_removed, raters, min_quality)
    if layout is not Layout.WIDE:
        _export_layout(
            layout,
            dataset,
            by or [],
            exclude_removed,
            raters,
            min_quality,
            data,
            fmt,
            output,
            force,
            excel_safe,
        )
        return
    store = Store(resolve_data_dir(data))
    stored = store.open(dataset)
    if dataset == "prosocial":
        _export_prosocial(stored, fmt, output, force, store.root)
        return
    source = source_path(stored)
    inputs = [store.root, *([source] if source is not None else [])]
    # The original file is CSV: a terminal gets it too, not a table.
    out = Output.build(fmt or (None if output else Format.CSV), output, force, inputs)
    if out.format is Format.CSV:
        with out.open() as handle:
            write_csv(stored, handle, excel_safe)
    elif excel_safe:
        raise UsageError(EXCEL_SAFE_IS_FOR_CSV)
    else:
        out.write(typed_table(stored))


def _check_layout_options(
    layout: Layout,
    dataset: str,
    by: list[str] | None,
    excel_safe: bool,
    exclude_removed: bool,
    raters: str | None,
    min_quality: float | None,
) -> None:
    """The export options that the chosen layout does not take, as usage errors."""
    from dices_cli.errors import UsageError

    if dataset == "prosocial" and layout is not Layout.WIDE:
        raise UsageError(
            f"ProsocialDialog has no rater ids or demographics; --layout {layout} needs them"
        )
    if dataset == "prosocial" and excel_safe:
        raise UsageError("--excel-safe is for the DICES CSV; ProsocialDialog is JSON Lines")
    if by and layout is not Layout.SOFT_LABELS:
        raise UsageError(f"--by applies to --layout soft-labels, not {layout}")
    if dataset == "all" and layout in (Layout.WIDE, Layout.JUDGE_BENCH):
        raise UsageError(f"--layout {layout} writes one dataset: choose --dataset 350 or 990")
    selecting = {
        "--exclude-removed": exclude_removed,
        "--raters": raters is not None,
        "--min-quality": min_quality is not None,
    }
    given = [flag for flag, value in selecting.items() if value]
    if given and layout is Layout.WIDE:
        raise UsageError(
            f"{given[0]} selects raters; --layout wide writes the ingested file as it was "
            "(the long, soft-labels and judge-bench layouts take a rater selection)"
        )


def _export_layout(
    layout: Layout,
    dataset: str,
    by: list[str],
    exclude_removed: bool,
    raters: str | None,
    min_quality: float | None,
    data: Path | None,
    fmt: Format | None,
    output: Path | None,
    force: bool,
    excel_safe: bool,
) -> None:
    """`dices export --layout long|soft-labels|judge-bench`, written through the one Output;
    with `excel_safe`, a CSV's formula-looking text defused as the wide CSV's is."""
    import json

    from dices_cli.cli.commands.canned import checked_by
    from dices_cli.errors import UsageError
    from dices_cli.families.schema import DATASETS, missing_group_column
    from dices_cli.formats.dices.export import defused, source_path
    from dices_cli.formats.dices.layouts import (
        crowdkit_ratings,
        judge_bench,
        long_ratings,
        soft_labels,
    )
    from dices_cli.output import Format, Output
    from dices_cli.queries.engine import chosen_datasets, open_session
    from dices_cli.raters.selection import resolve
    from dices_cli.store.datasets import Store, resolve_data_dir

    by = checked_by(by)
    store = Store(resolve_data_dir(data))
    names = chosen_datasets(store, dataset, columns=by)
    sources = [source_path(store.open(name)) for name in names]
    inputs = [*read_paths(data, raters), *(source for source in sources if source is not None)]
    # Data, not a table: CSV on a terminal too (JSON for judge-bench, a JSON document).
    document = layout is Layout.JUDGE_BENCH
    default = Format.JSON if document else Format.CSV
    out = Output.build(fmt or (None if output else default), output, force, inputs)
    if document and out.format is not Format.JSON:
        raise UsageError(
            "--layout judge-bench writes one JSON document: use --format json or -o FILE.json"
        )
    if excel_safe and out.format is not Format.CSV:
        raise UsageError(EXCEL_SAFE_IS_FOR_CSV)
    selection = rater_selection(exclude_removed, raters, min_quality)
    selection = resolve(store, dataset, selection, columns=by)
    session = open_session(store, dataset, selection, columns=by)
    for skipped in sorted(set(store.available()) - set(names) if dataset == "all" else ()):
        say(f"note: {missing_group_column(DATASETS[skipped], by)}, so it is left out")
    if selection.description:
        say(f"raters: {'; '.join(selection.description)}")
    if document:
        with out.open() as handle:
            handle.write(json.dumps(judge_bench(session), ensure_ascii=False).encode() + b"\n")
    else:
        rows = {
            Layout.LONG: long_ratings,
            Layout.CROWDKIT: crowdkit_ratings,
        }.get(layout, lambda session: soft_labels(session, by))(session)
        out.write(defused(rows) if excel_safe else rows)


def _export_prosocial(
    stored: StoredDataset, fmt: Format | None, output: Path | None, force: bool, root: Path
) -> None:
    """ProsocialDialog goes back as the JSON Lines it came as: its lines, in their order."""
    from dices_cli.errors import UsageError
    from dices_cli.formats.prosocial.tables import write_jsonl
    from dices_cli.output import Format, Output

    inputs = [root, *(Path(s["path"]) for s in stored.manifest["sources"] if s["path"])]
    out = Output.build(fmt or (None if output else Format.JSONL), output, force, inputs)
    if out.format is not Format.JSONL:
        raise UsageError("ProsocialDialog is written back as JSON Lines: pick --format jsonl")
    with out.open() as handle:
        write_jsonl(stored, handle)


def demo(
    keep: Annotated[
        Path,
        typer.Option(
            "--keep",
            help="Ingest into DIR and keep it there for the suggested commands.",
            file_okay=False,
        ),
    ] = Path("dices-demo"),
) -> None:
    """Ingest the small sample that ships with dices and show a short tour. Works offline.

    The sample is ingested into ./dices-demo (or --keep DIR), which stays so that the
    commands the tour suggests work as printed; running the demo again replaces the
    sample there, and a directory holding other data is refused. Remove it when done.

    The sample is the first conversations of each DICES replica file, with all their
    raters (DICES: CC BY 4.0, Google LLC). Content warning: the conversations are
    adversarial and can be offensive; the tour shows numbers only.

    Examples:

        dices demo

        dices demo --keep ~/dices-demo
    """
    from dices_cli.cli.demo import tour
    from dices_cli.cli.render import print_table
    from dices_cli.output import open_stdout

    with open_stdout():
        say(f"Ingesting the bundled sample into {keep} ...")
        for section in tour(keep):
            say("")
            print_table(section.table, title=section.title)
            say(f"  {section.explanation}")
            say(f"  try: {section.command}")
        say("")
        say(f"The sample stays in {keep}; remove that directory when you are done.")


def register(app: typer.Typer) -> None:
    for command in (ingest, validate, info, export, demo):
        app.command(no_args_is_help=command in (ingest, validate))(command)
