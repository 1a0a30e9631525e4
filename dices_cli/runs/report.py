"""`dices report`: the HTML page, with its settings checked and its command line recorded."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from dices_cli.errors import Option, UsageError
from dices_cli.runs.common import Tell, check_choice, chooses, in_range, unsaid

if TYPE_CHECKING:
    from dices_cli.families import Family
    from dices_cli.queries.engine import RaterSelection
    from dices_cli.report.models import ModelsRequest
    from dices_cli.store.datasets import Store


# The settings a report was made with, as resolved: each parameter's name and its value (None
# for a switch that is on), in the order a command line gives them.
Recorded = list[tuple[str, str | None]]


@dataclass(frozen=True)
class ReportRun:
    """The report written, how the page says it was made (the caller's words for the
    settings), and the datasets left out with why."""

    path: Path
    command: str
    left_out: list[str]


def run_report(
    store: Store,
    target: Path,
    dataset: str = "all",
    selection: RaterSelection | None = None,
    by: Sequence[str] = (),
    *,
    permutations: int | None = None,
    seed: int | None = None,
    predictions: str | None = None,
    predictions_dataset: str | None = None,
    bootstrap: int | None = None,
    baseline: Sequence[str] | None = None,
    ties: str | None = None,
    threshold: float | None = None,
    one_means: str | None = None,
    strict: bool = False,
    force: bool = False,
    inputs: Sequence[Path] = (),
    made_by: Callable[[Recorded], str] = repr,
    tell: Tell = unsaid,
) -> ReportRun:
    """Write the HTML report of `dataset` (`dices report`) to `target`, for the raters of
    `selection`, comparing the groups of the `by` columns; with `predictions` (a file, "-"
    for stdin), also score a model with `dices evaluate`'s settings. Every setting is checked
    before any work, and `target` before anything is read (not replaced without `force`, never
    one of `inputs`). The page records `made_by` of the settings as resolved (`Recorded`),
    in the caller's words; warnings go to `tell`."""
    from dices_cli.families import declared_family, grouped_members
    from dices_cli.families.schema import DATASETS, missing_group_column
    from dices_cli.formats.dices.layouts import group_columns
    from dices_cli.output import OUTPUT, check_output, open_output
    from dices_cli.queries.catalog import ParameterError, usage_error
    from dices_cli.queries.engine import chosen_datasets
    from dices_cli.raters.selection import rater_selection
    from dices_cli.report import agreement_options, build_report, check_charts_available

    if (family := declared_family(dataset)) is not None:
        chosen = selection is not None and chooses(selection)
        return _declared_report(
            store, target, family, by, permutations, seed, force,
            refused={"predictions": predictions is not None, "selection": chosen},
            inputs=inputs, made_by=made_by, tell=tell,
        )  # fmt: skip
    check_choice("dataset", dataset, ("all", *grouped_members()))
    given = {
        "predictions_dataset": predictions_dataset,
        "bootstrap": bootstrap,
        "baseline": baseline,
        "ties": ties,
        "threshold": threshold,
        "one_means": one_means,
        "strict": strict or None,
    }
    if predictions is None:
        for name, value in given.items():
            if value is not None:
                raise UsageError(
                    Option(name), " scores predictions: give ", Option("predictions"), " FILE too"
                )
    if predictions_dataset is not None:
        check_choice("predictions_dataset", predictions_dataset, grouped_members())
    if one_means is not None:
        check_choice("one_means", one_means, ("unsafe", "safe"))
    inputs = [*inputs, *([Path(predictions)] if predictions not in (None, "-") else [])]
    check_output(target, force, inputs, option=OUTPUT)  # before the work
    check_charts_available()
    try:
        columns = group_columns(by)
        permutations, seed = agreement_options(permutations, seed)
    except ParameterError as error:
        raise usage_error(error) from None
    settings: Recorded = [("dataset", dataset), *(("by", column) for column in columns)]
    if columns:
        settings += [("permutations", str(permutations)), ("seed", str(seed))]
    models = None
    if predictions is not None:
        models = _models_request(
            predictions, predictions_dataset, bootstrap, baseline, ties, threshold, one_means, seed
        )
        scoring = models.settings
        settings.append(("predictions", predictions))
        if predictions_dataset:
            settings.append(("predictions_dataset", predictions_dataset))
        settings.append(("bootstrap", str(scoring.bootstrap)))
        settings += [("baseline", f"raters:{k}") for k in scoring.baselines]
        settings += [("ties", scoring.ties), ("threshold", f"{scoring.threshold:g}")]
        settings += [("one_means", one_means)] if one_means else []
        settings += [("strict", None)] if strict else []
        settings += [("seed", str(seed))] if not columns else []
    command = made_by(settings)
    try:
        document = build_report(
            store,
            dataset,
            selection or rater_selection(),
            columns,
            command,
            permutations,
            seed,
            models,
            warn=lambda text: tell(f"warning: {text}"),
            strict=strict,
        )
    except ParameterError as error:
        raise usage_error(error) from None
    with open_output(target, force, inputs) as handle:
        handle.write(document.encode("utf-8"))
    left_out = []
    if dataset == "all":
        shown = set(chosen_datasets(store, "all", columns=columns))
        for skipped in sorted(set(store.available()) - shown):
            left_out.append(
                f"{missing_group_column(DATASETS[skipped], columns)}, so it is left out"
            )
    return ReportRun(target, command, left_out)


def _declared_report(
    store: Store,
    target: Path,
    family: Family,
    by: Sequence[str],
    permutations: int | None,
    seed: int | None,
    force: bool,
    refused: dict[str, bool],
    inputs: Sequence[Path],
    made_by: Callable[[Recorded], str],
    tell: Tell,
) -> ReportRun:
    """`run_report` for a declared dataset: its labels, shares and agreement per group;
    `refused` says whether predictions or a rater selection (DICES's) were given."""
    from dices_cli.output import OUTPUT, check_output, open_output
    from dices_cli.queries.catalog import ParameterError, usage_error
    from dices_cli.report import agreement_options, build_declared_report
    from dices_cli.report.declared import compared_attributes

    if refused["predictions"]:
        references = f" is scored against DICES's references, not {family.title}'s"
        raise UsageError(Option("predictions"), references)
    if refused["selection"]:
        raise UsageError(
            f"{family.title}'s report shows all its raters: ",
            Option("exclude_removed"),
            ", ",
            Option("raters"),
            " and ",
            Option("min_quality"),
            " choose DICES's",
        )
    check_output(target, force, inputs, option=OUTPUT)  # before the work
    try:
        permutations, seed = agreement_options(permutations, seed, declared=True)
    except ParameterError as error:
        raise usage_error(error) from None
    settings: Recorded = [("dataset", family.members[0])]
    settings += [("by", attribute) for attribute in by]
    if compared_attributes(family, by):
        settings += [("permutations", str(permutations)), ("seed", str(seed))]
    command = made_by(settings)
    try:
        document = build_declared_report(
            store, family, by, command, permutations, seed, warn=lambda t: tell(f"warning: {t}")
        )
    except ParameterError as error:
        raise usage_error(error) from None
    with open_output(target, force, ()) as handle:
        handle.write(document.encode("utf-8"))
    return ReportRun(target, command, [])


def _models_request(
    predictions: str,
    dataset: str | None,
    bootstrap: int | None,
    baseline: Sequence[str] | None,
    ties: str | None,
    threshold: float | None,
    one_means: str | None,
    seed: int,
) -> ModelsRequest:
    """What the report scores, with `dices evaluate`'s settings and the report's defaults,
    each checked as `dices evaluate` checks it."""
    from dices_cli.evaluate.baseline import parse_baseline
    from dices_cli.evaluate.evaluation import Settings
    from dices_cli.report import BASELINES, BOOTSTRAP
    from dices_cli.report.models import ModelsRequest

    defaults = Settings()
    if ties is not None:
        check_choice("ties", ties, ("exclude", "unsafe", "safe"))
    if threshold is not None:
        in_range("threshold", threshold, 0.0, 1.0)
    if bootstrap is not None:
        in_range("bootstrap", bootstrap, 0, 100_000)
    settings = Settings(
        ties=ties or defaults.ties,
        threshold=defaults.threshold if threshold is None else threshold,
        bootstrap=BOOTSTRAP if bootstrap is None else bootstrap,
        seed=seed,
        baselines=tuple(dict.fromkeys(map(parse_baseline, baseline))) if baseline else BASELINES,
    )
    return ModelsRequest(predictions, dataset, settings, one_means)
