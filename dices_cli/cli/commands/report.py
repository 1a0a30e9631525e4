"""`dices report`: the canned queries drawn as one self-contained HTML file."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from dices_cli.cli.commands.options import (
    DataDir,
    DatasetOption,
    ExcludeRemoved,
    Force,
    MinQuality,
    RatersFile,
    dices_only,
    rater_selection,
    read_paths,
)
from dices_cli.cli.render import say
from dices_cli.report import BOOTSTRAP, PERMUTATIONS

if TYPE_CHECKING:
    from dices_cli.report.models import ModelsRequest


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
        Literal["350", "990"] | None,
        typer.Option(
            "--predictions-dataset",
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
    """
    from dices_cli.cli.commands.evaluate import one_means_hinted
    from dices_cli.errors import UsageError
    from dices_cli.families.schema import DATASETS, missing_group_column
    from dices_cli.output import check_output, open_output
    from dices_cli.queries.catalog import ParameterError, usage_error
    from dices_cli.queries.engine import chosen_datasets
    from dices_cli.report import agreement_options, build_report, check_charts_available
    from dices_cli.store.datasets import Store, resolve_data_dir

    dices_only(dataset, "dices report")
    given = {
        "--predictions-dataset": predictions_dataset,
        "--bootstrap": bootstrap,
        "--baseline": baseline,
        "--ties": ties,
        "--threshold": threshold,
        "--one-means": one_means,
        "--strict": strict or None,
    }
    if predictions is None:
        for flag, value in given.items():
            if value is not None:
                raise UsageError(f"{flag} scores predictions: give --predictions FILE too")
    if predictions == "-" and raters == "-":
        raise UsageError("only one of --predictions and --raters can be - (stdin)")
    inputs = read_paths(data, raters)
    inputs += [Path(predictions)] if predictions not in (None, "-") else []
    check_output(output, force, inputs)  # before the work
    check_charts_available()
    store = Store(resolve_data_dir(data))
    selection = rater_selection(exclude_removed, raters, min_quality)
    command = ["dices", "report", "--dataset", dataset]
    command += [part for column in by or [] for part in ("--by", column)]
    try:
        permutations, seed = agreement_options(permutations, seed)
    except ParameterError as error:
        raise usage_error(error) from None
    if by:
        command += ["--permutations", str(permutations), "--seed", str(seed)]
    models = None
    if predictions is not None:
        models = _models_request(
            predictions, predictions_dataset, bootstrap, baseline, ties, threshold, one_means, seed
        )
        command += ["--predictions", predictions]
        command += ["--predictions-dataset", predictions_dataset] if predictions_dataset else []
        settings = models.settings
        command += ["--bootstrap", str(settings.bootstrap)]
        command += [part for k in settings.baselines for part in ("--baseline", f"raters:{k}")]
        command += ["--ties", settings.ties, "--threshold", f"{settings.threshold:g}"]
        command += ["--one-means", one_means] if one_means else []
        command += ["--strict"] if strict else []
        command += ["--seed", str(seed)] if not by else []
    command += ["--exclude-removed"] if exclude_removed else []
    command += ["--raters", raters] if raters is not None else []
    command += ["--min-quality", f"{min_quality:g}"] if min_quality is not None else []
    command += ["-o", str(output)]
    try:
        with one_means_hinted():
            document = build_report(
                store,
                dataset,
                selection,
                by or [],
                shlex.join(command),
                permutations,
                seed,
                models,
                warn=lambda text: say(f"warning: {text}"),
                strict=strict,
            )
    except ParameterError as error:
        raise usage_error(error) from None
    with open_output(output, force, inputs) as handle:
        handle.write(document.encode("utf-8"))
    if dataset == "all":
        for skipped in sorted(
            set(store.available()) - set(chosen_datasets(store, "all", columns=by or []))
        ):
            say(f"note: {missing_group_column(DATASETS[skipped], by or [])}, so it is left out")
    say(f"wrote {output}")


def _models_request(
    predictions: str,
    dataset: str | None,
    bootstrap: int | None,
    baseline: list[str] | None,
    ties: str | None,
    threshold: float | None,
    one_means: str | None,
    seed: int,
) -> ModelsRequest:
    """What to score, with dices evaluate's settings and the report's defaults."""
    from dices_cli.evaluate.baseline import parse_baseline
    from dices_cli.evaluate.evaluation import Settings
    from dices_cli.report import BASELINES
    from dices_cli.report.models import ModelsRequest

    defaults = Settings()
    settings = Settings(
        ties=ties or defaults.ties,
        threshold=defaults.threshold if threshold is None else threshold,
        bootstrap=BOOTSTRAP if bootstrap is None else bootstrap,
        seed=seed,
        baselines=tuple(dict.fromkeys(map(parse_baseline, baseline))) if baseline else BASELINES,
    )
    return ModelsRequest(predictions, dataset, settings, one_means)


def register(app: typer.Typer) -> None:
    app.command()(report)
