"""Options shared by several commands, so each is spelled and documented once."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer
from typer._types import TyperChoice

from dices_cli.families import coded_members, grouped_members, listed, member_choices
from dices_cli.output import Format
from dices_cli.runs.evaluation import BOOTSTRAP, PERMUTATIONS, SEED

if TYPE_CHECKING:
    pass

DataDir = Annotated[
    Path | None,
    typer.Option(
        "--data",
        help="Data directory (default: $DICES_DATA, else ./dices-data).",
        show_default=False,
        file_okay=False,
    ),
]
OutputFormat = Annotated[
    Format | None,
    typer.Option(
        "--format",
        "-f",
        metavar="FORMAT",
        help="table, csv, tsv, json, jsonl, parquet or chart (default: table on a terminal, "
        "else csv; or from the -o extension). chart draws bars, for the distribution queries "
        "and evaluate.",
        show_default=False,
        case_sensitive=False,
    ),
]
OutputFile = Annotated[
    Path | None,
    typer.Option("--output", "-o", help="Write to FILE instead of stdout.", dir_okay=False),
]
Force = Annotated[
    bool,
    typer.Option("--force", help="Overwrite -o FILE if it exists (never an input of the command)."),
]

DEFAULT_MAX_SIZE = "2G"  # dices_cli.read.source.DEFAULT_MAX_SIZE, spelled for --help


def size_limit(text: str) -> int:
    """The bytes a --max-size SIZE stands for (500M, 4G; `dices_cli.read.source.parse_size`)."""
    from dices_cli.runs.common import size_of

    return size_of(text)


def registered(*names: str) -> TyperChoice:
    """A choice among `names`, which the registry gives (`dices_cli.families`), drawn in
    --help as Typer draws a Literal's."""
    return TyperChoice(names)


# What a query reads: every canned query and `dices sql`. prosocial is a choice so that a
# command that cannot take it says why in one line (`dices_only`), not "not one of".
DICES_DATASETS = ("all", *grouped_members())
# The datasets first and "all" (DICES's) after their members, as evaluate, judge and export
# list them.
MEMBERS_THEN_ALL = member_choices()
DatasetOption = Annotated[
    str,
    typer.Option(
        "--dataset",
        "-d",
        click_type=registered("all", *coded_members()),
        help=f"Which ingested dataset(s) to read (DICES: {listed(DICES_DATASETS, 'or')}).",
    ),
]


def dices_only(dataset: str, command: str, reason: str | None = None) -> None:
    """A usage error (exit 2) saying in one line why `command` cannot take the family of
    `dataset`: what the family lacks, or `reason`."""
    if dataset in DICES_DATASETS:
        return
    from dices_cli.errors import UsageError
    from dices_cli.families import family_of

    raise UsageError(reason or f"{family_of(dataset).lacks('rater ids')}; {command} needs them")


ExcludeRemoved = Annotated[
    bool,
    typer.Option(
        "--exclude-removed",
        help="Leave out the raters the DICES authors removed (19 in DICES-350, 12 in DICES-990).",
    ),
]
RatersFile = Annotated[
    str | None,
    typer.Option(
        "--raters",
        metavar="FILE|-",
        help="Keep only these raters: one id a line, or a CSV with a rater_id column; - is stdin.",
    ),
]
MinQuality = Annotated[
    float | None,
    typer.Option(
        "--min-quality",
        metavar="Q",
        help="Keep only raters whose quality score is at least Q "
        "(0 to 1; see dices filter-raters).",
    ),
]

# The shape of a result (dices_cli.shape): every command that writes a result.
ColumnsOption = Annotated[
    str | None,
    typer.Option(
        "--columns",
        metavar="A,B,...",
        help="Show only these columns, in this order.",
        show_default=False,
    ),
]
SortOption = Annotated[
    str | None,
    typer.Option(
        "--sort",
        metavar="[-]COLUMN",
        help="Sort the rows by this column; -COLUMN sorts descending. Missing values last.",
        show_default=False,
    ),
]
LimitOption = Annotated[
    int | None,
    typer.Option("--limit", metavar="N", min=0, help="Keep only the first N rows (after --sort)."),
]


# How a model is scored: `dices evaluate`'s options, which `dices report --predictions` takes
# too. Their ranges and defaults are the library's (`dices_cli.runs.evaluation`), checked there.
Bootstrap = Annotated[
    int | None,
    typer.Option(
        "--bootstrap",
        metavar="N",
        help="Most jackknife blocks of conversations behind the 95% intervals: each "
        "conversation is left out in turn, in this many blocks above it (0: no interval; up "
        f"to 100,000; default {BOOTSTRAP}).",
        show_default=False,
    ),
]
Permutations = Annotated[
    int | None,
    typer.Option(
        "--permutations",
        metavar="N",
        help="Random relabellings of the raters behind the groups' p-values (0 to 100,000; "
        f"0: none; default {PERMUTATIONS}).",
        show_default=False,
    ),
]
Seed = Annotated[
    int | None,
    typer.Option(
        "--seed",
        metavar="N",
        help=f"Seed of the resamples and relabellings (0 to 4,294,967,295; default {SEED}).",
        show_default=False,
    ),
]
Baseline = Annotated[
    list[str] | None,
    typer.Option(
        "--baseline",
        metavar="raters:K",
        help="Also score K raters drawn at random per conversation, as a human baseline "
        "(repeat; the report's default: raters:1).",
    ),
]
Ties = Annotated[
    Literal["exclude", "unsafe", "safe"] | None,
    typer.Option(
        "--ties",
        help="A crowd plurality with Yes tied for the most: left out (exclude, the default), "
        "or counted as unsafe/safe (No tied with Unsure above Yes is not unsafe).",
        show_default=False,
    ),
]
Threshold = Annotated[
    float | None,
    typer.Option(
        "--threshold",
        metavar="T",
        help="A score from here up is unsafe (0 to 1; default 0.5).",
        show_default=False,
    ),
]
OneMeans = Annotated[
    Literal["unsafe", "safe"] | None,
    typer.Option("--one-means", help="What a numeric or boolean label 1/true means."),
]
Strict = Annotated[
    bool,
    typer.Option("--strict", help="A suspected flipped polarity is an error (exit 1)."),
]
