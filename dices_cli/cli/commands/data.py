"""Commands that move data in and out: ingest, validate, info, export, demo."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from typer._types import TyperChoice

from dices_cli.cli.commands.answers import rater_selection, read_paths, show_shaped
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
    registered,
)
from dices_cli.cli.render import progress_bar, say
from dices_cli.families import grouped_members, listed
from dices_cli.queries.catalog import GROUP_COLUMNS
from dices_cli.runs.export import LAYOUTS

if TYPE_CHECKING:
    pass

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
    # A directory is refused by the library, which says how to give a data directory.
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


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Run inside without Python's cycle collector, and leave what was made inside in its
    oldest generation, unscanned. Importing Polars made it go over the new modules' objects
    some 50 times (bench/ingest.py times an ingest); an ingest makes no cycles worth
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
    from dices_cli.runs.common import data_store
    from dices_cli.runs.ingest import run_ingest

    with _collector_paused(), progress_bar(enabled=True) as progress:
        results = run_ingest(
            data_store(data),
            files,
            dataset,
            force=force,
            rejects=rejects,
            declaration=declaration,
            max_size=max_size,
            progress=progress,
            split=split,
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
    from dices_cli.output import Output
    from dices_cli.runs.validate import run_validate
    from dices_cli.shape import Shape

    shape = Shape.parse(keep_columns, sort, limit)
    inputs = [path for path in files if str(path) != "-"]
    out = Output.build(fmt, output, force, inputs)  # before reading: the files may be large
    with progress_bar(enabled=True) as progress:
        run = run_validate(files, dataset, max_size=max_size, progress=progress)
    show_shaped(run.problems, shape, out, "Problems", focus=Focus(answer=PROBLEM_ANSWER))
    for report in run.reports:
        say(report.summary())
    if not run.ok:
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
    from dices_cli.output import Output
    from dices_cli.runs.common import data_store
    from dices_cli.runs.info import info_answer, run_info
    from dices_cli.shape import Shape

    shape = Shape.parse(keep_columns, sort, limit)
    store = data_store(data)
    out = Output.build(fmt, output, force, [store.root])
    table = run_info(store)
    focus = Focus(answer=info_answer())
    show_shaped(table, shape, out, f"Datasets in {store.root}", focus=focus)
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
        str,
        typer.Option(
            "--layout",
            click_type=TyperChoice(LAYOUTS, case_sensitive=False),
            help="wide (the ingested file), long, crowdkit, soft-labels or judge-bench: see above.",
        ),
    ] = "wide",
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
    from dices_cli.runs.common import data_store
    from dices_cli.runs.export import run_export

    run_export(
        data_store(data),
        dataset,
        layout,
        by or [],
        rater_selection(exclude_removed, raters, min_quality),
        fmt=fmt,
        output=output,
        force=force,
        excel_safe=excel_safe,
        inputs=read_paths(data, raters),
        tell=say,
    )


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
    from dices_cli.cli.render import print_table
    from dices_cli.output import open_stdout
    from dices_cli.runs.demo import tour

    with open_stdout():
        say(f"Ingesting the bundled sample into {keep} ...")
        for section in tour(keep):
            say("")
            print_table(section.table, title=section.title)
            say(f"  {section.explanation}")
            say(f"  try: {demo_command(section.name, keep)}")
        say("")
        say(f"The sample stays in {keep}; remove that directory when you are done.")


def demo_command(section: str, workdir: Path) -> str:
    """What the user types to see the demo's `section` on the data in `workdir`."""
    import shlex

    from dices_cli.runs.demo import MOST_CONTESTED, demo_predictions_path

    data = f"--data {shlex.quote(str(workdir))}"
    predictions = shlex.quote(str(demo_predictions_path()))
    return {
        "ingested": f"dices info {data}",
        "overview": f"dices query overview {data}",
        "by-age": f"dices query qoverall-by-demographic --by rater_age {data}",
        "gold": f"dices query gold-vs-crowd {data}",
        "contested": (
            f"dices query item-distribution --sort -entropy_bits --limit {MOST_CONTESTED} {data}"
        ),
        "evaluate": f"dices evaluate {predictions} {data}",
        "judge": f"dices judge --model baseline:random --seed 1 {data} -o judge.csv --evaluate",
    }[section]


def register(app: typer.Typer) -> None:
    for command in (ingest, validate, info, export, demo):
        app.command(no_args_is_help=command in (ingest, validate))(command)
