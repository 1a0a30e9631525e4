"""`dices report`: the canned queries drawn as one self-contained HTML file."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from dices_cli.cli.commands.answers import rater_selection, read_paths
from dices_cli.cli.commands.options import (
    Baseline,
    Bootstrap,
    DataDir,
    ExcludeRemoved,
    Force,
    MinQuality,
    OneMeans,
    Permutations,
    RatersFile,
    Seed,
    Strict,
    Threshold,
    Ties,
    dices_only,
    registered,
)
from dices_cli.cli.render import say
from dices_cli.families import coded_members, grouped_members

if TYPE_CHECKING:
    from dices_cli.runs.report import Recorded

ReportDataset = Annotated[
    str,
    typer.Option(
        "--dataset",
        "-d",
        help="Which ingested dataset(s) to report on: DICES's "
        f"({', '.join(('all', *grouped_members()))}), or a declared dataset's name (dices info "
        "lists them) for the report over its labels and rater attributes.",
    ),
]


def report(
    output: Annotated[
        Path,
        typer.Option(
            "--output", "-o", help="The HTML file to write.", dir_okay=False, show_default=False
        ),
    ],
    dataset: ReportDataset = "all",
    by: Annotated[
        list[str] | None,
        typer.Option(
            "--by",
            "-b",
            help="Compare the groups of this rater column (repeat for several: their "
            "intersection as a heatmap). Adds agreement and the conversations groups disagree on.",
        ),
    ] = None,
    permutations: Permutations = None,
    seed: Seed = None,
    predictions: Annotated[
        str | None,
        typer.Option(
            "--predictions",
            metavar="FILE",
            help="Also score a model's predictions (the input of dices evaluate; - for stdin) "
            "against the experts, the crowd and each --by group, beside a human baseline.",
        ),
    ] = None,
    predictions_dataset: Annotated[
        str | None,
        typer.Option(
            "--predictions-dataset",
            click_type=registered(*grouped_members()),
            help="The dataset the predictions are for (default: 350 when the report shows it).",
        ),
    ] = None,
    bootstrap: Bootstrap = None,
    baseline: Baseline = None,
    ties: Ties = None,
    threshold: Threshold = None,
    one_means: OneMeans = None,
    strict: Strict = False,
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
    --by, agreement per group and the conversations the groups disagree on most; with
    --predictions, each model's metrics against the experts, the crowd and each --by group,
    beside a human baseline, and a warning when a model's labels look flipped
    (--bootstrap, --baseline, --ties, --threshold, --one-means and --strict score the
    predictions, as for dices evaluate; --permutations and --seed are the agreement
    section's with --by, the bootstrap's too with --predictions). The file
    needs no network: charts are inline SVG, there are no scripts, fonts or links to load.
    The report ends with how it was made: the command, the dataset checksums, the date.

    Examples:

        dices report -o report.html

        dices report --by rater_race --by rater_gender -o report.html

        dices report -d 350 --exclude-removed -o dices350.html

        dices report --by rater_gender --predictions judge.csv -o judge.html

        dices report -d popquorn_offensiveness --by race --by gender -o popquorn.html
    """
    from dices_cli.cli.commands.evaluate import one_means_hinted
    from dices_cli.cli.commands.wording import flag
    from dices_cli.errors import Option, UsageError
    from dices_cli.runs.common import data_store
    from dices_cli.runs.report import run_report

    if dataset in coded_members():
        dices_only(dataset, "dices report")
    if predictions == "-" and raters == "-":
        raise UsageError("only one of --predictions and --raters can be - (stdin)")
    chosen = ["--exclude-removed"] if exclude_removed else []
    chosen += ["--raters", raters] if raters is not None else []
    chosen += ["--min-quality", f"{min_quality:g}"] if min_quality is not None else []

    def made_by(settings: Recorded) -> str:
        words = ["dices", "report"]
        for name, value in settings:
            words += [flag(Option(name)), *([value] if value is not None else [])]
        return shlex.join([*words, *chosen, "-o", str(output)])

    with one_means_hinted():
        run = run_report(
            data_store(data),
            output,
            dataset,
            rater_selection(exclude_removed, raters, min_quality),
            by or [],
            permutations=permutations,
            seed=seed,
            predictions=predictions,
            predictions_dataset=predictions_dataset,
            bootstrap=bootstrap,
            baseline=baseline,
            ties=ties,
            threshold=threshold,
            one_means=one_means,
            strict=strict,
            force=force,
            inputs=read_paths(data, raters),
            made_by=made_by,
            tell=say,
        )
    for note in run.left_out:
        say(f"note: {note}")
    say(f"wrote {output}")


def register(app: typer.Typer) -> None:
    app.command()(report)
