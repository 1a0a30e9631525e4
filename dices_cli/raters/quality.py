"""Rater quality: five explainable signals, each in [0, 1], and a score that is their minimum.

Built on the `rater-quality` query (the raw per-rater signals). Each component is 1 when
nothing is suspicious and 0 at its failure point, linear in between; docs/rater-quality.md
gives the formulas and the reasons for the default threshold. The score is the lowest
component, so a rater is kept only when no single signal is past the threshold, and the
explanation of a score is the component that set it.

Also here: the filter rule (a threshold or the authors' published list) and writing a
filtered copy of the data that every other command can read with `--data`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from dices_cli import __version__
from dices_cli.errors import Option, UsageError
from dices_cli.families.schema import ANSWER, PUBLISHED_REMOVED
from dices_cli.output import Table, collect, table_from_rows
from dices_cli.queries.own_sql import internal_sql

if TYPE_CHECKING:
    from dices_cli.queries.engine import RaterSelection, Session
    from dices_cli.store.datasets import Store, StoredDataset

DEFAULT_MIN_QUALITY = 0.45
# Failure and "fine" points of the components (see docs/rater-quality.md).
STRAIGHTLINE_FINE = 0.01  # share of answers differing from the rater's usual one
INCONSISTENT_FAILED = 0.5  # share of ratings whose Q_overall contradicts the sub-questions
AGREEMENT_FINE = 0.1  # Gwet's AC1 with the others' plurality; about 3 standard errors
NOT_UNDERSTOOD_FAILED = 0.5  # share of Q1 answers saying "not understood"

Preset = Literal["authors"]


@dataclass(frozen=True)
class Signals:
    """The raw measurements behind one rater's components."""

    ratings: int
    median_answer_ms: float | None  # None: the dataset has no timings
    pool_median_ms: float | None  # the median of the raters' medians in the same dataset
    modal_answer: str
    modal_answer_share: float
    straightline_share: float
    inconsistent_share: float
    agreement_loo: float | None  # None: nobody else rated the rater's conversations
    chance_agreement: float  # Gwet's AC1 chance term for this rater and the plurality
    q1_not_understood_share: float

    @property
    def ac1(self) -> float | None:
        if self.agreement_loo is None:
            return None
        return (self.agreement_loo - self.chance_agreement) / (1 - self.chance_agreement)


def _clip(value: float) -> float:
    return min(1.0, max(0.0, value))


def speed(s: Signals) -> float | None:
    """The rater's median time per conversation as a fraction of the pool's (1 at or above)."""
    if s.median_answer_ms is None or not s.pool_median_ms:
        return None
    return _clip(s.median_answer_ms / s.pool_median_ms)


def straightlining(s: Signals) -> float:
    """Share of answers differing from the rater's usual one, 1 from STRAIGHTLINE_FINE up."""
    usual = max(s.modal_answer_share, s.straightline_share)
    return _clip((1 - usual) / STRAIGHTLINE_FINE)


def consistency(s: Signals) -> float:
    """1 minus the share of self-contradicting ratings, scaled to 0 at INCONSISTENT_FAILED."""
    return _clip(1 - s.inconsistent_share / INCONSISTENT_FAILED)


def agreement(s: Signals) -> float | None:
    """Gwet's AC1 against the others' plurality: 0 at chance, 1 from AGREEMENT_FINE up."""
    ac1 = s.ac1
    return None if ac1 is None else _clip(ac1 / AGREEMENT_FINE)


def comprehension(s: Signals) -> float:
    """1 minus the share of 'not understood' Q1 answers, scaled to 0 at NOT_UNDERSTOOD_FAILED."""
    return _clip(1 - s.q1_not_understood_share / NOT_UNDERSTOOD_FAILED)


COMPONENTS: dict[str, Callable[[Signals], float | None]] = {
    "speed": speed,
    "straightlining": straightlining,
    "consistency": consistency,
    "agreement": agreement,
    "comprehension": comprehension,
}


def _percent(share: float) -> str:
    return f"{share:.0%}"


def describe(component: str, s: Signals) -> str:
    """What the component measured for this rater, in words."""
    if component == "speed":
        assert s.median_answer_ms is not None and s.pool_median_ms is not None
        ratio = s.pool_median_ms / s.median_answer_ms if s.median_answer_ms else float("inf")
        pace = f"{ratio:.1f}x faster than" if ratio > 1 else "no faster than"
        return (
            f"answers {pace} the pool (median {s.median_answer_ms / 1000:.0f} s "
            f"vs {s.pool_median_ms / 1000:.0f} s per conversation)"
        )
    if component == "straightlining":
        if s.straightline_share > s.modal_answer_share:
            same = round(s.straightline_share * s.ratings)
            return f"gave the same answer to every sub-question in {same} of {s.ratings} ratings"
        same = round(s.modal_answer_share * s.ratings)
        return f"gave the same Q_overall ({s.modal_answer}) to {same} of {s.ratings} conversations"
    if component == "consistency":
        return (
            f"Q_overall contradicts the rater's own sub-questions in "
            f"{_percent(s.inconsistent_share)} of ratings"
        )
    if component == "agreement":
        assert s.agreement_loo is not None and s.ac1 is not None
        return (
            f"agrees with the other raters' plurality {_percent(s.agreement_loo)} of the time, "
            f"AC1 {s.ac1:.2f} beyond chance"
        )
    return f"said {_percent(s.q1_not_understood_share)} of conversations were not understood"


@dataclass(frozen=True)
class RaterQuality:
    dataset: str
    rater_id: int
    published_removed: bool
    demographics: dict[str, Any]
    signals: Signals
    components: dict[str, float | None]  # None: the signal does not exist for this rater

    @property
    def score(self) -> float:
        return min(v for v in self.components.values() if v is not None)

    @property
    def key(self) -> tuple[str, int]:
        return (self.dataset, self.rater_id)

    def explanation(self, threshold: float = DEFAULT_MIN_QUALITY) -> str:
        """The component that set the score, then any other that is below `threshold`."""
        ranked = sorted(
            ((value, name) for name, value in self.components.items() if value is not None),
        )
        lowest_value, lowest = ranked[0]
        if lowest_value >= 1:
            return "no signal is below its best"
        parts = [f"{lowest} {lowest_value:.2f}: {describe(lowest, self.signals)}"]
        parts += [
            f"{name} {value:.2f}: {describe(name, self.signals)}"
            for value, name in ranked[1:]
            if value < threshold
        ]
        return "; ".join(parts)


def _chance_agreement(shares: Sequence[float], plurality: Sequence[float]) -> float:
    """Gwet's AC1 chance term: sum of p(1 - p) / (K - 1) over the averaged answer shares."""
    averaged = [(a + b) / 2 for a, b in zip(shares, plurality, strict=True)]
    return sum(p * (1 - p) for p in averaged) / (len(ANSWER) - 1)


DEMOGRAPHICS = ("rater_gender", "rater_race", "rater_age", "rater_education", "rater_locale")


def score_raters(session: Session) -> list[RaterQuality]:
    """Every rater of the session's datasets, scored against the pool of its own dataset."""
    import statistics

    from dices_cli.queries.catalog import get_query

    signals = collect(session.run(get_query("rater-quality"), {})).records()
    answers = {
        (r["dataset"], r["rater_id"]): r
        for r in session.execute(internal_sql("rater-answer-shares")).records()
    }
    pool_medians = {}
    for dataset in {r["dataset"] for r in signals}:
        times = [
            r["median_answer_ms"]
            for r in signals
            if r["dataset"] == dataset and r["median_answer_ms"] is not None
        ]
        pool_medians[dataset] = statistics.median(times) if times else None
    scored = []
    for row in signals:
        shares = answers[(row["dataset"], row["rater_id"])]
        answer_shares = [float(shares[f"share_{a.lower()}"]) for a in ANSWER]
        plurality = [float(shares[f"plurality_{a.lower()}"]) for a in ANSWER]
        measured = Signals(
            ratings=row["ratings"],
            median_answer_ms=_float_or_none(row["median_answer_ms"]),
            pool_median_ms=pool_medians[row["dataset"]],
            modal_answer=ANSWER[answer_shares.index(max(answer_shares))],
            modal_answer_share=float(row["modal_answer_share"]),
            straightline_share=float(row["straightline_share"]),
            inconsistent_share=float(row["inconsistent_share"]),
            agreement_loo=_float_or_none(row["agreement_loo"]),
            chance_agreement=_chance_agreement(answer_shares, plurality),
            q1_not_understood_share=float(row["q1_not_understood_share"]),
        )
        scored.append(
            RaterQuality(
                dataset=row["dataset"],
                rater_id=row["rater_id"],
                published_removed=bool(row["published_removed"]),
                demographics={c: row.get(c) for c in DEMOGRAPHICS},
                signals=measured,
                components={name: measure(measured) for name, measure in COMPONENTS.items()},
            )
        )
    return scored


def _float_or_none(value: Any) -> float | None:
    return None if value is None else float(value)


@dataclass(frozen=True)
class RaterFilter:
    """Which raters to keep: a quality threshold, or a published list (a preset)."""

    min_quality: float | None = None
    preset: Preset | None = None

    def __post_init__(self) -> None:
        if self.min_quality is not None and self.preset is not None:
            raise UsageError("give ", Option("min_quality"), " or ", Option("preset"), ", not both")
        if self.min_quality is not None and not 0 <= self.min_quality <= 1:
            raise UsageError(
                Option("min_quality"), f" must be between 0 and 1 (got {self.min_quality:g})"
            )

    @property
    def threshold(self) -> float:
        """The quality threshold in force (the default one under a preset, for explanations)."""
        return DEFAULT_MIN_QUALITY if self.min_quality is None else self.min_quality

    def keeps(self, rater: RaterQuality) -> bool:
        if self.preset == "authors":
            return rater.rater_id not in PUBLISHED_REMOVED[rater.dataset]
        return rater.score >= self.threshold

    @property
    def description(self) -> str:
        if self.preset == "authors":
            return "the raters the DICES authors removed (preset authors)"
        return f"raters with a quality score below {self.threshold:g} (docs/rater-quality.md)"

    def record(self) -> dict[str, Any]:
        """The filter as written into a filtered dataset's manifest."""
        return {
            "description": f"removed {self.description}",
            "min_quality": None if self.preset else self.threshold,
            "preset": self.preset,
        }


def kept_raters(raters: Sequence[RaterQuality], rule: RaterFilter) -> set[tuple[str, int]]:
    """(dataset, rater_id) of every rater the rule keeps."""
    return {r.key for r in raters if rule.keeps(r)}


def quality_table(
    raters: Sequence[RaterQuality], rule: RaterFilter, explain: bool = False
) -> Table:
    """One row per rater: score, components, kept, published_removed [, explanation]."""
    columns = ["dataset", "rater_id", "score", *COMPONENTS, "kept", "published_removed"]
    rows = [
        (
            r.dataset,
            r.rater_id,
            r.score,
            *r.components.values(),
            rule.keeps(r),
            r.published_removed,
            *([r.explanation(rule.threshold)] if explain else []),
        )
        for r in raters
    ]
    return table_from_rows([*columns, *(["explanation"] if explain else [])], rows)


def select_by_quality(
    store: Store, datasets: Sequence[str], selection: RaterSelection
) -> RaterSelection:
    """`selection` with its min_quality turned into the ids of the raters it keeps.

    Raters are scored against the whole pool of their dataset, as `dices filter-raters`
    does, so `--min-quality Q` on a query equals piping `filter-raters --ids-only` into it;
    other selection options (--raters, --exclude-removed) then narrow the result further.
    """
    from dices_cli.queries.engine import Session

    assert selection.min_quality is not None
    rule = RaterFilter(min_quality=selection.min_quality)
    raters = score_raters(Session(store, datasets))
    kept = frozenset(r.rater_id for r in raters if rule.keeps(r))
    return replace(
        selection,
        min_quality=None,
        keep_ids=kept if selection.keep_ids is None else selection.keep_ids & kept,
        description=[
            *selection.description,
            f"{len(kept)} of {len(raters)} raters with a quality score of at least "
            f"{rule.threshold:g}",
        ],
    )


def write_filtered(
    source: Store,
    target: Store,
    raters: Sequence[RaterQuality],
    rule: RaterFilter,
    force: bool = False,
) -> list[StoredDataset]:
    """A complete copy of each scored dataset without the removed raters, in `target`.

    Same layout as ingest; conversations are all kept (one may end up with no ratings);
    the manifest is the source's with the counts updated and the filter recorded.
    """
    import polars as pl

    if target.root.resolve() == source.root.resolve():
        raise UsageError(
            Option("write"), " must name another data directory, not the one being read"
        )
    datasets = sorted({r.dataset for r in raters})
    for name in datasets:
        target.check_replaceable(name, force)
    written = []
    with target.locked():
        for name in datasets:
            target.check_replaceable(name, force)
            stored = source.open(name)
            pool = [r for r in raters if r.dataset == name]
            kept = [r.rater_id for r in pool if rule.keeps(r)]
            keep = pl.col("rater_id").is_in(kept)
            tables = {
                "items": stored.read("items"),
                "raters": stored.read("raters").filter(keep),
                "ratings": stored.read("ratings").filter(keep),
            }
            manifest = _filtered_manifest(stored, tables, rule, pool, kept)
            written.append(target.publish(name, tables, manifest))
    return written


def _filtered_manifest(
    stored: StoredDataset,
    tables: dict[str, Any],
    rule: RaterFilter,
    pool: Sequence[RaterQuality],
    kept: Sequence[int],
) -> dict[str, Any]:
    from datetime import UTC, datetime

    manifest = stored.manifest
    removed = sorted({r.rater_id for r in pool} - set(kept))
    return {
        **manifest,
        "counts": {
            "conversations": tables["items"].height,
            "raters": tables["raters"].height,
            "ratings": tables["ratings"].height,
        },
        "filter": {
            **rule.record(),
            "raters_kept": len(kept),
            "raters_removed": len(removed),
            "removed_rater_ids": removed,
            "source_data": str(stored.path),
            "source_filter": manifest.get("filter"),
        },
        "tool_version": __version__,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }
