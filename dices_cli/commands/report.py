"""`dices report`: the canned queries drawn as one self-contained HTML file."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated

import typer

from dices_cli.commands.options import (
    DataDir,
    DatasetOption,
    ExcludeRemoved,
    Force,
    MinQuality,
    RatersFile,
    rater_selection,
    read_paths,
)
from dices_cli.render import say
from dices_cli.report import PERMUTATIONS


def report(
    output: Annotated[
        Path,
        typer.Option(
            "--output", "-o", help="The HTML file to write.", dir_okay=False, show_default=False
        ),
    ],
    dataset: DatasetOption = "all",
    by: Annotated[
        list[str] | None,
        typer.Option(
            "--by",
            "-b",
            help="Compare the groups of this rater column (repeat for several: their "
            "intersection as a heatmap). Adds agreement and the conversations groups disagree on.",
        ),
    ] = None,
    permutations: Annotated[
        int | None,
        typer.Option(
            "--permutations",
            help="With --by: relabellings of the raters behind the agreement p-values "
            f"(default {PERMUTATIONS}; dices query agreement's is 1000).",
        ),
    ] = None,
    seed: Annotated[
        int | None,
        typer.Option("--seed", help="With --by: seed of the relabellings (default 0)."),
    ] = None,
    exclude_removed: ExcludeRemoved = False,
    raters: RatersFile = None,
    min_quality: MinQuality = None,
    data: DataDir = None,
    force: Force = False,
) -> None:
    """Write one HTML report: charts of the canned queries, with the numbers behind each.

    Sections: the datasets and rater pool; Q_overall per group with 95% intervals (and the
    intersection of the --by columns as a heatmap); experts against the crowd
    (DICES-350); disagreement per conversation; rater quality and the filter audit; with
    --by, agreement per group and the conversations the groups disagree on most. The file
    needs no network: charts are inline SVG, there are no scripts, fonts or links to load.
    The report ends with how it was made: the command, the dataset checksums, the date.

    Examples:

        dices report -o report.html

        dices report --by rater_race --by rater_gender -o report.html

        dices report -d 350 --exclude-removed -o dices350.html
    """
    from dices_cli.commands.canned import worded
    from dices_cli.output import check_output, open_output
    from dices_cli.queries.catalog import ParameterError, missing_group_column
    from dices_cli.queries.engine import chosen_datasets
    from dices_cli.report import agreement_options, build_report, check_charts_available
    from dices_cli.schema import DATASETS
    from dices_cli.selection import resolve
    from dices_cli.store import Store, resolve_data_dir

    inputs = read_paths(data, raters)
    check_output(output, force, inputs)  # before the work
    check_charts_available()
    store = Store(resolve_data_dir(data))
    selection = resolve(store, dataset, rater_selection(exclude_removed, raters, min_quality))
    command = ["dices", "report", "--dataset", dataset]
    command += [part for column in by or [] for part in ("--by", column)]
    try:
        permutations, seed = agreement_options(permutations, seed)
    except ParameterError as error:
        raise worded(error) from None
    if by:
        command += ["--permutations", str(permutations), "--seed", str(seed)]
    command += ["--exclude-removed"] if exclude_removed else []
    command += ["--raters", raters] if raters is not None else []
    command += ["--min-quality", f"{min_quality:g}"] if min_quality is not None else []
    command += ["-o", str(output)]
    try:
        document = build_report(
            store, dataset, selection, by or [], shlex.join(command), permutations, seed
        )
    except ParameterError as error:
        raise worded(error) from None
    with open_output(output, force, inputs) as handle:
        handle.write(document.encode("utf-8"))
    if dataset == "all":
        for skipped in sorted(
            set(store.available()) - set(chosen_datasets(store, "all", columns=by or []))
        ):
            say(f"note: {missing_group_column(DATASETS[skipped], by or [])}, so it is left out")
    say(f"wrote {output}")


def register(app: typer.Typer) -> None:
    app.command()(report)
