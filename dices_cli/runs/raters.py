"""`dices filter-raters`: every rater's quality, those kept, and the audit of the choice."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from dices_cli.errors import UsageError

if TYPE_CHECKING:
    from dices_cli.raters.audit import DatasetAudit
    from dices_cli.raters.quality import RaterQuality
    from dices_cli.store.datasets import Store


@dataclass(frozen=True)
class RaterFilterRun:
    """Every rater's quality, the (dataset, rater_id) of those kept, and the audit."""

    raters: list[RaterQuality]
    kept: set[tuple[str, int]]
    audits: list[DatasetAudit]


def run_rater_filter(
    store: Store, dataset: str, min_quality: float | None, preset: str | None
) -> RaterFilterRun:
    """Score every rater of `dataset`, keep those at `min_quality` or above (or those a
    `preset` keeps), and audit what that changes."""
    from dices_cli.families import FAMILIES
    from dices_cli.queries.engine import open_session
    from dices_cli.raters.audit import audit
    from dices_cli.raters.quality import RaterFilter, kept_raters, score_raters

    if dataset in FAMILIES:
        raise UsageError(f"{FAMILIES[dataset].lacks('rater ids')}; filter_raters needs them")
    rule = RaterFilter(min_quality=min_quality, preset=preset)  # type: ignore[arg-type]
    session = open_session(store, dataset)
    raters = score_raters(session)
    kept = kept_raters(raters, rule)
    return RaterFilterRun(raters, kept, audit(session, raters, kept))
