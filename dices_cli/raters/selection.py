"""Which raters a command sees: the rater selection options resolved once, above the engine.

A minimum quality is a score computed over each dataset's whole pool (`dices_cli.raters.quality`),
which itself runs queries; resolving it here, into the ids of the raters it keeps, lets the
query engine know nothing of quality.
"""

from __future__ import annotations

from collections.abc import Sequence

from dices_cli.families.schema import DATASETS
from dices_cli.queries.engine import RaterSelection, chosen_datasets
from dices_cli.store.datasets import Store


def rater_selection(
    exclude_removed: bool = False,
    ids: frozenset[int] | None = None,
    source: str | None = None,
    min_quality: float | None = None,
) -> RaterSelection:
    """The rater selection every query honours: without the raters the DICES authors
    removed, only the rater `ids` (read from `source`), and a minimum quality score (to be
    resolved by `resolve`)."""
    selection = RaterSelection(exclude_removed=exclude_removed, min_quality=min_quality)
    if exclude_removed:
        selection.description.append("without the raters the DICES authors removed")
    if ids is not None:
        selection.keep_ids = ids
        selection.description.append(f"{len(ids)} raters from {source}")
    return selection


def resolve(
    store: Store,
    dataset: str,
    selection: RaterSelection,
    needs: Sequence[str] = tuple(DATASETS),
    columns: Sequence[str] = (),
) -> RaterSelection:
    """`selection` with a minimum quality turned into rater ids, over the datasets a query
    over `dataset` reads (see `chosen_datasets`)."""
    if selection.min_quality is None:
        return selection
    from dices_cli.raters.quality import select_by_quality  # scores in a session of its own

    return select_by_quality(store, chosen_datasets(store, dataset, needs, columns), selection)
