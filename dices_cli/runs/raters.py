"""`dices filter-raters`: every rater's quality, those kept, and the audit of the choice."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from dices_cli.errors import Option, UsageError
from dices_cli.runs.common import check_choice

if TYPE_CHECKING:
    from dices_cli.output import Table
    from dices_cli.raters.audit import DatasetAudit
    from dices_cli.raters.quality import RaterFilter, RaterQuality
    from dices_cli.store.datasets import Store, StoredDataset

PRESETS = ("authors",)


@dataclass(frozen=True)
class RaterFilterRun:
    """Every rater's quality, the (dataset, rater_id) of those kept, the audit, the rule
    that chose them, and the filtered datasets written (with `write`)."""

    raters: list[RaterQuality]
    kept: set[tuple[str, int]]
    audits: list[DatasetAudit]
    rule: RaterFilter
    written: list[StoredDataset] = field(default_factory=list)

    @property
    def kept_ids(self) -> list[int]:
        """The ids of the raters kept, in the raters' order."""
        return [r.rater_id for r in self.raters if r.key in self.kept]

    def quality(self, explain: bool = False) -> Table:
        """One row per rater: score, components, kept, published_removed [, explanation]."""
        from dices_cli.raters.quality import quality_table

        return quality_table(self.raters, self.rule, explain)

    def audit_table(self) -> Table:
        """The audit as one row per dataset (the group tests nested as records)."""
        from dices_cli.raters.audit import audit_table

        return audit_table(self.audits, self.rule.description)


def run_rater_filter(
    store: Store,
    dataset: str = "all",
    min_quality: float | None = None,
    preset: str | None = None,
    *,
    write: Path | None = None,
    force: bool = False,
) -> RaterFilterRun:
    """Score every rater of `dataset`, keep those at `min_quality` or above (or those a
    `preset` keeps), and audit what that changes; with `write`, a data directory of its
    own, store the filtered datasets there (`force`: replacing those there)."""
    from dices_cli.families import FAMILIES, coded_members
    from dices_cli.queries.engine import open_session
    from dices_cli.raters.audit import audit
    from dices_cli.raters.quality import RaterFilter, kept_raters, score_raters, write_filtered
    from dices_cli.store.datasets import Store

    check_choice("dataset", dataset, ("all", *coded_members()))
    if preset is not None:
        check_choice("preset", preset, PRESETS)
    if dataset in FAMILIES:
        raise UsageError(f"{FAMILIES[dataset].lacks('rater ids')}; filter_raters needs them")
    rule = RaterFilter(min_quality=min_quality, preset=preset)  # type: ignore[arg-type]
    if write is not None:
        _check_write_dir(write)
    session = open_session(store, dataset)
    raters = score_raters(session)
    kept = kept_raters(raters, rule)
    run = RaterFilterRun(raters, kept, audit(session, raters, kept), rule)
    if write is not None:
        run.written.extend(write_filtered(store, Store(write), raters, rule, force))
    return run


def _check_write_dir(write: Path) -> None:
    """`write` is a data directory of its own: never inside another's `.store` or dataset
    folder (DIR/350), where the next `ingest --force` deleted it without a word."""
    from dices_cli.output import enclosing_data_dir

    enclosing = enclosing_data_dir(write)
    if enclosing is not None:
        raise UsageError(
            Option("write"),
            f" {write} is inside the data directory {enclosing}; give a directory of "
            f"its own, outside it (such as {enclosing.name}-filtered next to it)",
        )
