"""`dices sql`: one read-only SQL statement of your own over the ingested data (the canned
queries are `dices_cli.cli.commands.canned`'s `dices query`)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from dices_cli.cli.commands.options import (
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
    no_rater_selection,
    rater_selection,
    read_paths,
    show_shaped,
)
from dices_cli.errors import DicesError

# The families are never mixed: all is DICES's two datasets.
SqlDataset = Annotated[
    str,
    typer.Option(
        "--dataset",
        "-d",
        help="Which ingested dataset(s) to read: all (DICES-350 and DICES-990), 350, 990, "
        "prosocial (ProsocialDialog), or a declared dataset's name (dices info lists what is "
        "ingested); another family's views are its own, never mixed with DICES.",
    ),
]


def sql(
    statement: Annotated[
        str | None,
        typer.Argument(
            help="One SELECT over the views: items, raters, ratings, ratings_wide "
            "(-d prosocial: items, ratings), and judge_calls (dices judge's requests).",
            show_default=False,
        ),
    ] = None,
    schema: Annotated[
        bool,
        typer.Option(
            "--schema", help="List the views' columns, types and ENUM values instead of a query."
        ),
    ] = False,
    dataset: SqlDataset = "all",
    exclude_removed: ExcludeRemoved = False,
    raters: RatersFile = None,
    min_quality: MinQuality = None,
    table: Annotated[
        list[str] | None,
        typer.Option(
            "--table",
            metavar="NAME=FILE",
            help="Load your own CSV, TSV, JSON Lines or Parquet file (- for stdin) as table "
            "NAME, e.g. predictions to join with ratings_wide. Repeatable.",
        ),
    ] = None,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            help="Stop the query after this many seconds (at least 0.1; inf: no limit).",
            min=0.1,
        ),
    ] = 60.0,
    keep_columns: ColumnsOption = None,
    sort: SortOption = None,
    limit: LimitOption = None,
    data: DataDir = None,
    fmt: OutputFormat = None,
    output: OutputFile = None,
    force: Force = False,
) -> None:
    """Run your own read-only SQL over the ingested data.

    Views: items, raters, ratings, ratings_wide (ratings joined to raters and items) and
    published_removed, each with a `dataset` column. The connection is locked: one SELECT
    only, no file but the stored ones its views read, no extensions, no settings.

    With -d prosocial, ProsocialDialog's views instead, in the same sandbox: items (one row per
    utterance) and ratings (one row per annotation: item_id, annotator_slot, annotation,
    reason). It has no raters, so no rater selection.

    --schema lists every column of the views: view, column, type and, for an ENUM, its
    values joined by '|'.

    Examples:

        dices sql --schema

        dices sql "SELECT rater_age, count(*) FROM ratings_wide GROUP BY ALL ORDER BY ALL"

        dices sql "SELECT * FROM items WHERE dataset = '350' AND safety_gold = 'Yes'" -f jsonl

        dices sql "SELECT * FROM ratings_wide" --columns item_id,rater_age --limit 20

        dices sql --table p=predictions.csv \\
            "SELECT label, safety_gold, count(*) FROM p JOIN items USING (item_id) GROUP BY ALL"

        dices sql -d prosocial "SELECT source, count(*) FROM items GROUP BY 1 ORDER BY 1"
    """
    from dices_cli.families import FAMILIES
    from dices_cli.output import SMALL_CELLS, TEXT_FORMATS, Output
    from dices_cli.runs.common import data_store
    from dices_cli.runs.sql import run_sql
    from dices_cli.shape import Shape

    if dataset in FAMILIES:  # the library's refusal, before --raters FILE is read
        no_rater_selection(FAMILIES[dataset], exclude_removed, raters, min_quality)
    shape = Shape.parse(keep_columns, sort, limit)
    tables = [_table(spec) for spec in table or []]
    inputs = read_paths(data, raters) + [Path(f) for _, f in tables if f != "-"]
    written = Output.build(fmt, output, force, inputs)  # -o FILE checked before the work
    store = data_store(data)  # registers the datasets declared there
    selection = rater_selection(exclude_removed, raters, min_quality)
    # A small answer to a text format is written through Python: Arrow is not loaded.
    small = SMALL_CELLS if written.format in TEXT_FORMATS else None
    with run_sql(
        store,
        statement,
        dataset,
        selection,
        schema=schema,
        tables=tables,
        timeout=timeout,
        small_cells=small,
        stuck=_end,
    ) as result:
        show_shaped(result, shape, written, "sql")


def _table(spec: str) -> tuple[str, str]:
    """--table NAME=FILE as (NAME, FILE)."""
    from dices_cli.errors import UsageError

    name, equals, given = spec.partition("=")
    if not equals or not given:
        raise UsageError(f"give a table as NAME=FILE, not {spec!r}")
    return name, given


def _end(error: DicesError) -> NoReturn:
    """End the process: a query stuck in one call DuckDB cannot interrupt (run_sql's
    `stuck`, called from its timer thread) would run on for as long as the call takes."""
    import os
    import sys

    from dices_cli.output import abandon_writes

    abandon_writes()
    with contextlib.suppress(OSError):
        sys.stderr.write(f"Error: {error}\n")
        sys.stderr.flush()
    os._exit(1)


def register(app: typer.Typer) -> None:
    app.command(no_args_is_help=True)(sql)
