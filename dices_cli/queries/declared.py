"""The canned queries of every declared dataset (`sql/declared/NAME.sql`), over its one model.

A declared dataset's session (`DeclaredSession`) has the family views (items, raters,
ratings) and two more, made from its declaration:

    scale_values  one row per label and value of its scale: label, kind, value (text),
                  rank (0-based, in the scale's order), number (the value; a scale of
                  named values: rank + 1), positive (in the declared positive class;
                  NULL when none is declared), label_order
    label_values  one row per rating and label that has a value (a missing code is
                  none): dataset, item_id, rater_id, label, kind, value, rank, number,
                  positive

so that one SQL file answers for every label, whatever its name or scale. A query of one
label (a `label` parameter) reads `asked_label_values`, made for it before it runs: the
rows of label_values of that label alone, read from the label's own column by its stored
type and joined to its scale there, not cast to text and unpivoted with every other label
(which costs every rating a string); `asked_ratings` and `asked_scale` are its two sides,
for a query that counts per stored value first (`ask`). A session holds one dataset: its
queries join ratings to raters by rater_id alone. Before a query
runs its parameters are checked against the declaration: the label it asks for is one of
the dataset's and of a scale the query takes (its `scales:` line), the rater attributes
it groups by are the dataset's, and the distance metric fits the scale; each mistake is a
usage error that says why.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dices_cli.errors import Option, UsageError
from dices_cli.families import family_of, listed
from dices_cli.queries.engine import INTERNAL, create_view, run_script
from dices_cli.queries.family import FamilySession
from dices_cli.queries.reference import reference_label, reference_parameters

if TYPE_CHECKING:
    from dices_cli.families.declaration import DatasetDeclaration, Scale
    from dices_cli.output import Result
    from dices_cli.queries.catalog import Query
    from dices_cli.store.datasets import Store

# The columns of label_values, which a query joins to raters: no rater attribute may share
# a name with one.
LABEL_VALUE_COLUMNS = ("item_id", "label", "kind", "value", "rank", "number", "positive")


def value_text(value: object, scale: Scale) -> str:
    """A scale value as the stored column reads cast to text (3, 1.5, 'offensive')."""
    if scale.integral:
        return str(int(float(str(value))))
    return str(value)


def scale_rows(declared: DatasetDeclaration) -> list[tuple[Any, ...]]:
    """The rows of `scale_values`."""
    rows = []
    for order, label in enumerate(declared.labels):
        scale = declared.scales[label]
        for rank, value in enumerate(scale.values):
            number = float(value) if scale.numeric else float(rank + 1)
            positive = (value in scale.positive) if scale.positive else None
            rows.append(
                (label, scale.kind, value_text(value, scale), rank, number, positive, order)
            )
    return rows


def positions(scale: Scale) -> tuple[float, ...]:
    """The number each value of `scale` stands for, in order (named values: 1, 2, ...)."""
    if scale.numeric:
        return tuple(float(v) for v in scale.values)
    return tuple(float(rank + 1) for rank in range(len(scale.values)))


def mean_codes(positions: tuple[float, ...]) -> tuple[float, int]:
    """The lowest of a scale's `positions` and the unit that makes each (position -
    lowest) x unit a whole number, the code label-by-group sums for the mean
    (`dices_cli.metrics.mean_sums`): the least common denominator of the positions."""
    from fractions import Fraction
    from math import lcm

    return min(positions), lcm(*(Fraction(repr(p)).denominator for p in positions))


# What DuckDB may hold in memory in a declared dataset's session before it spills to a
# temporary folder of the session's own: a query's sums over 10^7 ratings (the rater x
# item cells of label-by-group's clustered interval) would take gigabytes.
MEMORY_LIMIT = "640MB"


class DeclaredSession(FamilySession):
    """A declared dataset's session: the family views, `scale_values` and `label_values`."""

    def __init__(self, store: Store, name: str) -> None:
        import tempfile

        super().__init__(store, name)
        self._spill = tempfile.TemporaryDirectory(prefix="dices-spill-")
        self.con.execute(f"SET memory_limit = '{MEMORY_LIMIT}'")
        self.con.execute("SET temp_directory = $folder", {"folder": self._spill.name})
        declared = family_of(name).declared
        assert declared is not None
        self.declared = declared
        # Whether no rater rated an item twice, as its ingest counted (a manifest written
        # before it counted: unknown, so not).
        manifest = next(iter(self._stored.values()))[0].manifest
        self.one_rating_per_cell = manifest.get("repeated_ratings") == 0
        self.con.execute(
            "CREATE TABLE scale_values (label VARCHAR, kind VARCHAR, value VARCHAR, "
            "rank INTEGER, number DOUBLE, positive BOOLEAN, label_order INTEGER)"
        )
        rows = scale_rows(declared)
        if rows:
            self.con.executemany("INSERT INTO scale_values VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
        self.stored_types: dict[str, str] = dict(
            self.con.execute(
                f"SELECT column_name, column_type FROM (DESCRIBE {INTERNAL}.ratings_{name})"
            ).fetchall()
        )
        stored = set(self.stored_types)
        # Declared names are letters, digits and _ (`declaration.NAME_OF_COLUMN`).
        labels = [label for label in declared.labels if label in stored]
        if labels:
            quoted = [f'"{label}"' for label in labels]
            cells = ", ".join(f"CAST({q} AS VARCHAR) AS {q}" for q in quoted)
            unpivoted = (
                f"UNPIVOT (SELECT dataset, item_id, rater_id, {cells} FROM ratings) "
                f"ON {', '.join(quoted)} INTO NAME label VALUE value"
            )
        else:
            unpivoted = (
                "SELECT dataset, item_id, rater_id, NULL::VARCHAR AS label, "
                "NULL::VARCHAR AS value FROM ratings WHERE false"
            )
        run_script(
            self.con,
            [
                create_view(
                    "label_values",
                    "SELECT u.dataset, u.item_id, u.rater_id, u.label, s.kind, u.value, "
                    f"s.rank, s.number, s.positive FROM ({unpivoted}) AS u "
                    "JOIN scale_values AS s USING (label, value)",
                )
            ],
        )

    def run(self, query: Query, parameters: dict[str, Any], typed: bool = True) -> Result:
        """The query's result, its parameters checked against the declaration first; a
        `compute:` step gets every parameter, with the label's scale."""
        import re

        from dices_cli.queries.catalog import compute_step, render_sql
        from dices_cli.queries.engine import arrow_table

        bound = self.checked(query, parameters)
        if "label" in bound:
            self.ask(bound["label"])
        compute = compute_step(query)
        if compute is None:
            return super().run(query, bound, typed)
        sql = render_sql(query)
        named = {k: v for k, v in bound.items() if re.search(rf"\${k}\b", sql)}
        return compute(self._fetch(sql, named, arrow_table), bound)

    def ask(self, label: str) -> None:
        """Make the views of `label` (a declared label): `asked_scale`, its scale's values
        with `key`, each cast to the stored column's type; `asked_ratings`, each rating
        that has a value (dataset, item_id, rater_id, value: as stored); and
        `asked_label_values`, the rows of label_values of `label`, the two joined. A query
        that counts ratings per value counts `asked_ratings` and joins the scale to the
        counts, not to every rating."""
        column_type = self.stored_types.get(label)
        # The type is DuckDB's own name of it; the label a declared name (letters, digits, _).
        key = "VARCHAR" if column_type is None else column_type
        column = "NULL" if column_type is None else f'"{label}"'
        self.con.execute(
            "CREATE OR REPLACE TEMP TABLE asked_scale AS SELECT "
            f"CAST(value AS {key}) AS key, label, kind, value, rank, number, positive "
            "FROM scale_values WHERE label = $label",
            {"label": label},
        )
        run_script(
            self.con,
            [
                "CREATE OR REPLACE TEMP VIEW asked_ratings AS SELECT dataset, item_id, "
                f"rater_id, CAST({column} AS {key}) AS value FROM ratings "
                f"WHERE {column} IS NOT NULL",
                "CREATE OR REPLACE TEMP VIEW asked_label_values AS SELECT r.dataset, "
                "r.item_id, r.rater_id, s.label, s.kind, s.value, s.rank, s.number, s.positive "
                "FROM asked_ratings AS r JOIN asked_scale AS s ON r.value = s.key",
            ],
        )

    def checked(self, query: Query, parameters: dict[str, Any]) -> dict[str, Any]:
        """`parameters` checked against the declaration, with what the SQL and a compute
        step read of the label's scale (kind, categories, positions, positive_values)."""
        from dices_cli.queries.catalog import render_sql

        declared = self.declared
        bound = dict(parameters)
        if "by" in bound:
            self.check_attributes(bound["by"])
        if query.parameter("label") is None:
            return bound
        if not declared.labels:
            raise UsageError(f"{declared.title} declares no label; {query.name} needs one")
        # A query over the items' reference label (its own SQL, or the query it uses).
        references = "$reference" in render_sql(query)
        if references and not bound.get("label"):
            bound["label"] = reference_label(declared, query.name)
        label = bound.get("label") or declared.labels[0]
        if label not in declared.labels:
            raise UsageError(
                f"{declared.title} has no label {label!r}; choose ",
                Option("label"),
                f" from: {', '.join(declared.labels)}",
            )
        scale = declared.scales[label]
        if scale.kind not in query.scales:
            others = [n for n in declared.labels if declared.scales[n].kind in query.scales]
            choose = f"; its {listed(others, 'and')} fit" if others else ""
            raise UsageError(
                f"{query.name} takes a label of a {listed(list(query.scales), 'or')} scale; "
                f"{declared.title}'s {label} is {scale.kind}{choose}"
            )
        if "$positive_values" in query.body and not scale.positive:
            raise UsageError(
                f"{declared.title}'s {label} declares no positive class; {query.name} "
                "reports the share in it (declare positive = [...] in its scale)"
            )
        bound["label"] = label
        bound["kind"] = scale.kind
        bound["categories"] = len(scale.values)
        bound["positions"] = positions(scale)
        bound["mean_origin"], bound["mean_unit"] = mean_codes(bound["positions"])
        bound["positive_values"] = ", ".join(value_text(v, scale) for v in scale.positive)
        if "$one_rating_per_cell" in query.body:
            bound["one_rating_per_cell"] = self.one_rating_per_cell
        if "metric" in bound:
            bound["metric"] = self._metric(bound["metric"], label, scale)
        if references:
            bound |= reference_parameters(declared, label, bound, query.name)
        return bound

    def check_attributes(self, by: Sequence[str]) -> None:
        """A usage error unless each of `by` is one rater attribute of the dataset, once."""
        declared = self.declared
        attributes = [
            c
            for (c,) in self.con.execute("SELECT column_name FROM (DESCRIBE raters)").fetchall()
            if c not in ("dataset", "rater_id")
        ]
        for name in by:
            if name in LABEL_VALUE_COLUMNS:
                raise UsageError(
                    f"{declared.title}'s rater attribute {name!r} has the name of a column of "
                    "label_values; store it under another in the declaration "
                    f'(rater_attributes = {{ rater_{name} = "..." }})'
                )
            if name not in attributes:
                have = (
                    f"its raters' attributes are: {', '.join(attributes)}"
                    if attributes
                    else "its raters have no attributes"
                )
                raise UsageError(
                    f"{declared.title} has no rater attribute {name!r} for ",
                    Option("by"),
                    f"; {have}",
                )
        if len(set(by)) < len(by):
            raise UsageError(Option("by"), " names an attribute twice")

    def _metric(self, metric: str, label: str, scale: Scale) -> str:
        """The distance metric for `label`: auto is ordinal for an ordinal scale, else
        nominal; the ordinal and interval metrics need ordered values, interval numbers."""
        if metric == "auto":
            return "ordinal" if scale.kind == "ordinal" else "nominal"
        title = self.declared.title
        if metric in ("ordinal", "interval") and scale.kind == "nominal":
            raise UsageError(
                f"{title}'s {label} is nominal: its values have no order for the {metric} "
                "metric; use ",
                Option("metric"),
                " nominal",
            )
        if metric == "interval" and not scale.numeric and scale.kind != "binary":
            raise UsageError(
                f"{title}'s {label} has named values: the interval metric needs numbers; use ",
                Option("metric"),
                " ordinal",
            )
        return metric
