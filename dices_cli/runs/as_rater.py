"""`dices evaluate --as-rater`: each model of a predictions file as one more rater."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from dices_cli.errors import Option, UsageError
from dices_cli.families import SCORED_BY_DEFAULT
from dices_cli.runs.common import Tell, unsaid
from dices_cli.runs.evaluation import dices_votes, evaluation_settings

if TYPE_CHECKING:
    from dices_cli.evaluate.evaluation import Evaluation
    from dices_cli.queries.engine import RaterSelection
    from dices_cli.store.datasets import Store


def run_as_rater(
    store: Store,
    predictions: str,
    dataset: str = SCORED_BY_DEFAULT,
    by: Sequence[str] | None = None,
    *,
    ties: str | None = None,
    threshold: float | None = None,
    permutations: int | None = None,
    seed: int | None = None,
    one_means: str | None = None,
    selection: RaterSelection | None = None,
    tell: Tell = unsaid,
) -> Evaluation:
    """Each model of the `predictions` file ("-": stdin) as one more rater of `dataset` (350,
    990, all), for the raters of `selection`: its agreement with the pool and with each group
    of the `by` columns (permutation tests with `permutations` relabellings from `seed`), and
    how alike the models' errors against the crowd label (its ties by `ties`) are. A score
    is a label at `threshold`. None takes evaluate's default."""
    from dices_cli.evaluate.as_rater import evaluate_as_rater
    from dices_cli.evaluate.evaluation import combined
    from dices_cli.evaluate.personas import persona_column
    from dices_cli.families import grouped_members
    from dices_cli.raters.selection import rater_selection

    settings = evaluation_settings(
        dataset,
        ties=ties or "exclude",
        threshold=0.5 if threshold is None else threshold,
        permutations=permutations,
        seed=seed,
        by=by,
    )
    if dataset != "all" and dataset not in grouped_members():
        raise UsageError(
            Option("as_rater"),
            f" places a model beside a dataset's raters: choose {', '.join(grouped_members())} "
            "or all",
        )
    datasets = list(grouped_members()) if dataset == "all" else [dataset]
    chosen = selection or rater_selection()
    votes, read = dices_votes(store, datasets, chosen, settings.by, predictions, one_means, tell)
    if persona_column(read) is not None:
        raise UsageError(
            f"{read.source} is a persona file: ",
            Option("as_rater"),
            " places one label per conversation beside the raters",
        )
    return combined([evaluate_as_rater(v, read, settings) for v in votes])


def refuse_with_as_rater(given: Mapping[str, bool]) -> None:
    """Each of evaluate's settings that does not apply to a model as a rater, given (True),
    is a usage error."""
    for name, chosen in given.items():
        if chosen:
            raise UsageError(
                Option(name), " does not apply with ", Option("as_rater"), " (its figures have "
                "permutation tests and null ranges, not references or intervals)",
            )  # fmt: skip
