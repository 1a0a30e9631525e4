"""`dices sql`: one read-only SQL statement of your own over the ingested data (the canned
queries are `dices_cli.cli.commands.canned`'s `dices query`)."""

from __future__ import annotations

from typing import Annotated

import typer

from dices_cli.cli.commands.answers import answer_sql
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
)

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
    answer_sql(
        statement,
        schema,
        dataset,
        exclude_removed,
        raters,
        min_quality,
        table,
        timeout,
        keep_columns,
        sort,
        limit,
        data,
        fmt,
        output,
        force,
    )


def register(app: typer.Typer) -> None:
    app.command(no_args_is_help=True)(sql)
