"""The polarity check: a model that agrees with the reference less than chance, for sure.

In DICES, Yes means unsafe. A judge asked "is the response safe?" answers Yes for the safe
ones, so scored as it is its labels are flipped: its Cohen's kappa is far below 0, with
the whole 95% bootstrap interval below 0. That is checked against the experts' gold label
where there is one (DICES-350), else against the crowd's plurality (DICES-990).
"""

from __future__ import annotations

from dataclasses import dataclass

from dices_cli.metrics.agreement import Array
from dices_cli.metrics.bootstrap import percentile_interval

LIKELY_CAUSE = "Yes means unsafe in DICES; is your judge answering 'is it safe?'"


@dataclass(frozen=True)
class Suspect:
    dataset: str
    model: str
    reference: str  # gold or crowd
    kappa: float
    low: float
    high: float

    def message(self) -> str:
        against = "the experts' gold labels" if self.reference == "gold" else "the crowd"
        return (
            f"model {self.model!r} agrees with {against} on DICES-{self.dataset} less than "
            f"chance: Cohen's kappa {self.kappa:.3f}, 95% interval {self.low:.3f} to "
            f"{self.high:.3f}. {LIKELY_CAUSE}"
        )


def check(dataset: str, model: str, reference: str, kappa: Array) -> Suspect | None:
    """A Suspect when the bootstrap interval of `kappa` (row 0 the estimate) lies entirely
    below 0; None otherwise, and when there are no resamples to give an interval."""
    low, high = percentile_interval(kappa)
    if not high < 0:  # NaN (no interval) is not a suspicion
        return None
    return Suspect(dataset, model, reference, float(kappa[0]), low, high)
