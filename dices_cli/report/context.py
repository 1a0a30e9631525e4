"""What the report's sections are made of, and what they read.

`Context` runs canned queries through the engine for the sections (one session per set of
datasets); a section returns `Figure`s (a chart, its table, how to read it) in a `Section`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dices_cli.families.schema import DATASETS, missing_group_column
from dices_cli.output import Table, collect, table_from_rows
from dices_cli.queries.catalog import get_query
from dices_cli.queries.engine import RaterSelection, Session, chosen_datasets
from dices_cli.raters.audit import MISSING_GROUP

if TYPE_CHECKING:
    from dices_cli.report.models import ScoredModels
    from dices_cli.store.datasets import Store


@dataclass(frozen=True)
class Figure:
    """A chart, the numbers behind it (also its text alternative) and how to read it."""

    spec: dict[str, Any]  # Vega-Lite, holding only rows of `table`
    table: Table
    how_to_read: str


@dataclass(frozen=True)
class Section:
    key: str  # the HTML id
    title: str
    figures: list[Figure]
    tables: list[tuple[str, Table]] = field(default_factory=list)  # (caption, numbers)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # shown prominently, also atop the page


@dataclass
class Context:
    """What every section reads: the store, the datasets asked for, the rater selection
    (resolved), the `by` columns, the models scored (if any), and one engine session per
    set of datasets."""

    store: Store
    dataset: str  # '350', '990' or 'all'
    selection: RaterSelection
    by: list[str]
    permutations: int
    seed: int
    models: ScoredModels | None = None  # the predictions scored, when there are some
    datasets: list[str] = field(default_factory=list)
    _sessions: dict[tuple[str, ...], Session] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.by:  # unknown names refused as every query refuses them
            by = get_query("qoverall-by-demographic").parameter("by")
            assert by is not None
            by.convert(self.by)
        self.datasets = chosen_datasets(self.store, self.dataset, columns=self.by)

    def session(self, datasets: Sequence[str]) -> Session:
        key = tuple(datasets)
        if key not in self._sessions:
            self._sessions[key] = Session(self.store, key, self.selection)
        return self._sessions[key]

    def run(self, name: str, **given: Any) -> Table | None:
        """The canned query's result over the report's datasets it applies to (and that
        have its group columns); None when there are none."""
        query = get_query(name)
        parameters = {p.name: p.convert(given.get(p.name)) for p in query.parameters}
        columns = query.group_columns(parameters)
        datasets = [
            d
            for d in self.datasets
            if d in query.datasets and missing_group_column(DATASETS[d], columns) is None
        ]
        if not datasets:
            return None
        return collect(self.session(datasets).run(query, parameters))  # frees the session


def dataset_title(dataset: str) -> str:
    return DATASETS[dataset].title


def select(columns: Sequence[str], rows: Sequence[dict[str, Any]]) -> Table:
    """`columns` of `rows` (records) as a table."""
    return table_from_rows(list(columns), [tuple(r[c] for c in columns) for r in rows])


def stacked(ctx: Context, name: str, columns: Sequence[str], keep: Sequence[str]) -> Table:
    """`name --by COLUMN` for each of `columns`, stacked: dataset, column, group, `keep`."""
    rows = []
    for column in columns:
        result = ctx.run(name, by=[column])
        for record in [] if result is None else result.records():
            group = record[column] if record[column] is not None else MISSING_GROUP
            rows.append(
                (dataset_title(record["dataset"]), column, group, *(record[k] for k in keep))
            )
    return table_from_rows(["dataset", "column", "group", *keep], rows)


def panels(table: Table) -> list[dict[str, Any]]:
    """The rows of a `_long` table as chart data, each with its panel: dataset and column."""
    return [{**r, "panel": f"{r['dataset']} · {r['column']}"} for r in table.records()]
