"""`dices evaluate -d NAME` of a declared dataset: predictions of one label scored by
LeWiDi's measures, settings checked."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from dices_cli.errors import Option, UsageError

if TYPE_CHECKING:
    from dices_cli.evaluate.scale_predictions import ScaleCheck
    from dices_cli.families.declaration import Scale
    from dices_cli.output import Table
    from dices_cli.queries.declared import DeclaredSession
    from dices_cli.store.datasets import Store


def run_scale_evaluation(
    store: Store,
    predictions: str,
    dataset: str,
    label: str | None = None,
    by: Sequence[str] = (),
    dices_only: Mapping[str, bool] | None = None,
    raters_chosen: bool = False,
) -> Table:
    """Score `predictions` (a file, "-" for stdin) of `label` (the declaration's first when
    None) of the declared `dataset` against its raters, for the pool and each group of the
    `by` rater attributes (`dices_cli.evaluate.scale_evaluation`). `dices_only`: each DICES
    option and whether it was given; one given is a usage error, as is `raters_chosen` (a
    rater selection: DICES's)."""
    from dices_cli.evaluate.scale_evaluation import chosen_label, evaluate_scale
    from dices_cli.evaluate.scale_predictions import read_scale_predictions
    from dices_cli.families import declared_family
    from dices_cli.queries.declared import DeclaredSession

    family = declared_family(dataset)
    if family is None or family.declared is None:
        raise UsageError(Option("dataset"), f" {dataset!r} is not a declared dataset")
    for name, given in (dices_only or {}).items():
        if given:
            raise UsageError(
                Option(name),
                f" is for DICES; {family.title}'s predictions are scored by "
                "LeWiDi's measures against its raters",
            )
    if raters_chosen:
        raise UsageError(
            f"{family.title}'s predictions are scored against all its raters: ",
            Option("exclude_removed"), ", ", Option("raters"), " and ", Option("min_quality"),
            " choose DICES's",
        )  # fmt: skip
    declared = family.declared
    label = chosen_label(declared.labels, label, family.title)
    session = DeclaredSession(store, dataset)
    session.check_attributes(by)
    check = _scale_check(session, declared.scales[label])
    return evaluate_scale(session, dataset, label, read_scale_predictions(predictions, check), by)


def _scale_check(session: DeclaredSession, scale: Scale) -> ScaleCheck:
    """What a prediction is checked against: the dataset's items and raters, the scale."""
    from dices_cli.evaluate.scale_predictions import ScaleCheck
    from dices_cli.queries.declared import value_text

    items = [i for (i,) in session.con.execute("SELECT item_id FROM items").fetchall()]
    raters = [r for (r,) in session.con.execute("SELECT rater_id FROM raters").fetchall()]
    numbers = tuple(float(v) for v in scale.values) if scale.numeric else None
    values = tuple(value_text(v, scale) for v in scale.values)
    return ScaleCheck(frozenset(items), frozenset(raters), values, numbers)
