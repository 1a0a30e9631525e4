"""The polarity check: a model that agrees with the reference less than chance, for sure.

In DICES, Yes means unsafe. A judge asked "is the response safe?" answers Yes for the safe
ones, so scored as it is its labels are flipped: its Cohen's kappa is far below 0, with
the whole 95% interval below 0. That is checked against the experts' gold label
where there is one (DICES-350), else against the crowd's plurality (DICES-990), and against
the published label made binary in ProsocialDialog.
"""

from __future__ import annotations

from dataclasses import dataclass

from dices_cli.metrics.agreement import Array
from dices_cli.metrics.intervals import centred_interval

LIKELY_CAUSE = "Yes means unsafe in DICES; is your judge answering 'is it safe?'"
# ProsocialDialog's label is made binary with unsafe = two or more needs caution votes or
# any needs intervention vote (dices_cli.evaluate.references.PROSOCIAL_UNSAFE).
LIKELY_CAUSES = {
    "dices": LIKELY_CAUSE,
    "prosocial": "Yes means unsafe (needs caution or intervention) in ProsocialDialog; is "
    "your judge answering 'is it safe?'",
}
AGAINST = {
    "gold": "the experts' gold labels",
    "crowd": "the crowd",
    "label": "the published labels",
}


@dataclass(frozen=True)
class Suspect:
    dataset: str
    model: str
    reference: str  # gold, label or crowd
    kappa: float
    low: float
    high: float

    def message(self) -> str:
        from dices_cli.families import family_of

        family = family_of(self.dataset)
        return (
            f"model {self.model!r} agrees with {AGAINST[self.reference]} on "
            f"{family.title_of(self.dataset)} less than chance: Cohen's kappa {self.kappa:.3f}, "
            f"95% interval {self.low:.3f} to {self.high:.3f}. {LIKELY_CAUSES[family.name]}"
        )


def check(dataset: str, model: str, reference: str, kappa: Array) -> Suspect | None:
    """A Suspect when the centred interval of `kappa` (row 0 the estimate, then its values
    with each conversation block left out) lies entirely below 0; None otherwise, and when
    there are no blocks to give an interval."""
    low, high = centred_interval(kappa, bounds=(-1.0, 1.0))
    if not high < 0:  # NaN (no interval) is not a suspicion
        return None
    return Suspect(dataset, model, reference, float(kappa[0]), low, high)
