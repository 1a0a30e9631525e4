"""`dices describe`: a draft declaration for files dices does not know."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dices_cli.cli.commands.options import DEFAULT_MAX_SIZE, Force, OutputFile
from dices_cli.cli.render import say


def describe(
    files: Annotated[
        list[Path],
        typer.Argument(
            help="The dataset's files: CSV, TSV, JSON Lines, JSON or Parquet (plain or .gz).",
            show_default=False,
        ),
    ],
    name: Annotated[
        str | None,
        typer.Option(
            "--name",
            "-n",
            help="The dataset's name in the draft (default: from the first file's name).",
            show_default=False,
        ),
    ] = None,
    output: OutputFile = None,
    force: Force = False,
    max_size: Annotated[
        str,
        typer.Option(
            "--max-size",
            metavar="SIZE",
            help="Refuse a gzip file whose text is larger (e.g. 500M, 4G).",
        ),
    ] = DEFAULT_MAX_SIZE,
) -> None:
    """Write a draft declaration (TOML) for files dices does not know yet.

    The item, rater and label columns are guessed from their names (item, comment,
    instance or text id; rater, annotator, worker or user id; label, rating, score,
    annotation, or a task such as toxicity or offensiveness); a column with one value per
    rater becomes a rater attribute, one with one value per item the item's text or an
    attribute; each label's scale (binary, nominal, ordinal) comes from its values. What
    was guessed is said on stderr and in the draft's comments. When a guess could not be
    made (no column looks like the rater id, say), the draft is written all the same, says
    UNDECIDED where it needs an edit, and the exit status is 1.

    Examples:

        dices describe ratings.csv -o my-dataset.toml

        dices ingest ratings.csv --declaration my-dataset.toml

        dices describe raters.csv items.csv ratings.csv --name my_dataset
    """
    from dices_cli.errors import DicesError
    from dices_cli.output import open_output, open_stdout
    from dices_cli.runs.describe import run_describe

    draft = run_describe(files, name, max_size=max_size)
    if output is not None:
        with open_output(output, force, files) as handle:
            handle.write(draft.text.encode())
    else:
        with open_stdout() as handle:
            handle.write(draft.text.encode())
    for guess in draft.guessed:
        say(f"guessed: {guess}")
    for open_question in draft.undecided:
        say(f"could not decide: {open_question}")
    if output is not None:
        say(f"draft declaration -> {output}")
    if not draft.complete:
        raise DicesError(
            "the draft needs an edit before it ingests: fill in what it marks UNDECIDED"
        )


def register(app: typer.Typer) -> None:
    app.command(no_args_is_help=True)(describe)
