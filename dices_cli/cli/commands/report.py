"""`dices report`: the canned queries drawn as one self-contained HTML file."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from dices_cli.cli.commands.options import (
    DataDir,
    ExcludeRemoved,
    Force,
    MinQuality,
    RatersFile,
    dices_only,
    rater_selection,
    read_paths,
    registered,
)
from dices_cli.cli.render import say
from dices_cli.families import coded_members, grouped_members
from dices_cli.report import BOOTSTRAP, PERMUTATIONS

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
    permutations: Annotated[
        int | None,
        typer.Option(
            "--permutations",
            help="With --by: relabellings of the raters behind the agreement p-values "
            f"(default {PERMUTATIONS}, as dices query agreement).",
        ),
    ] = None,
    seed: Annotated[
        int | None,
        typer.Option(
            "--seed",
            help="Seed of the relabellings (with --by) and of the bootstrap (with "
            "--predictions); default 0.",
        ),
    ] = None,
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
    bootstrap: Annotated[
        int | None,
        typer.Option(
            "--bootstrap",
            min=0,
            max=100_000,
            metavar="N",
            help="With --predictions: bootstrap resamples behind the intervals "
            f"(default {BOOTSTRAP}, as dices evaluate).",
        ),
    ] = None,
    baseline: Annotated[
        list[str] | None,
        typer.Option(
            "--baseline",
            metavar="raters:K",
            help="With --predictions: the human baseline, K raters drawn at random per "
            "conversation (repeat; default raters:1).",
        ),
    ] = None,
    ties: Annotated[
        Literal["exclude", "unsafe", "safe"] | None,
        typer.Option(
            "--ties",
            help="With --predictions: a crowd plurality with Yes tied for the most is left "
            "out (default), or counted as unsafe/safe (No tied with Unsure above Yes is not "
            "unsafe).",
        ),
    ] = None,
    threshold: Annotated[
        float | None,
        typer.Option(
            "--threshold",
            min=0.0,
            max=1.0,
            help="With --predictions: a score from here up is unsafe (default 0.5).",
        ),
    ] = None,
    one_means: Annotated[
        Literal["unsafe", "safe"] | None,
        typer.Option(
            "--one-means", help="With --predictions: what a numeric or boolean label 1 means."
        ),
    ] = None,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict",
            help="With --predictions: a suspected flipped polarity is an error (exit 1), as "
            "for dices evaluate.",
        ),
    ] = False,
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
    beside a human baseline, and a warning when a model's labels look flipped. The file
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
    from dices_cli.runs.report import run_report
    from dices_cli.store.datasets import Store, resolve_data_dir

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
            Store(resolve_data_dir(data)),
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
