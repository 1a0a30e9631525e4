"""Ordinal ratings with crossed effects: the known truth of the ordinal calibration tests.

Each rater rates a random subset of the items on a 1..`levels` scale: a latent score
item effect + rater effect + the rater's group shift + noise, cut at equally spaced
thresholds. Items and raters are crossed (every rater meets many items, every item many
raters), so ratings of one item, and of one rater, are correlated, as in POPQUORN. With
every group shift 0 the groups carry no information: the null of a group test.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from dices_cli.output import Table


@dataclass(frozen=True)
class OrdinalRatings:
    """One rating per row: rater, item (codes from 0) and value (1..levels); each rater's
    group (codes from 0)."""

    rater: NDArray[np.intp]
    item: NDArray[np.intp]
    value: NDArray[np.intp]
    group: NDArray[np.intp]
    levels: int

    def answers(self) -> NDArray[np.float64]:
        """[rater, category, item] one-hot answers (category = value - 1)."""
        counts = np.zeros((len(self.group), self.levels, int(self.item.max()) + 1))
        counts[self.rater, self.value - 1, self.item] = 1.0
        return counts


def ordinal_ratings(
    group_sizes: tuple[int, ...],
    items: int,
    per_rater: int,
    seed: int,
    levels: int = 5,
    item_sd: float = 1.0,
    rater_sd: float = 0.5,
    shifts: tuple[float, ...] | None = None,
) -> OrdinalRatings:
    """Ratings by sum(group_sizes) raters, each rating `per_rater` of `items` items."""
    rng = np.random.default_rng(seed)
    group = np.repeat(np.arange(len(group_sizes)), group_sizes).astype(np.intp)
    raters = len(group)
    shift = np.zeros(len(group_sizes)) if shifts is None else np.asarray(shifts, dtype=float)
    item_effect = rng.normal(0.0, item_sd, items)
    rater_effect = rng.normal(0.0, rater_sd, raters) + shift[group]
    rater = np.repeat(np.arange(raters), per_rater).astype(np.intp)
    item = np.concatenate(
        [rng.choice(items, per_rater, replace=False) for _ in range(raters)]
    ).astype(np.intp)
    latent = item_effect[item] + rater_effect[rater] + rng.normal(0.0, 1.0, len(item))
    cuts = np.linspace(-1.5, 1.5, levels - 1)
    value = (np.searchsorted(cuts, latent) + 1).astype(np.intp)
    return OrdinalRatings(rater, item, value, group, levels)


DECLARATION = """[[dataset]]
name = "{name}"
title = "Ordinal toy"

[[dataset.file]]
role = "ratings"
item = "item_id"
rater = "rater_id"
labels = ["score", "colour"]
rater_attributes = ["grp", "half"]{text_role}

[dataset.scales.score]
kind = "ordinal"
values = [{values}]
positive = [{positive}]

[dataset.scales.colour]
kind = "nominal"
values = ["red", "green", "blue"]
"""


def item_text(item: int) -> str:
    """An item's text, when `write_dataset` is asked for one."""
    return f"Comment number {item} about the weather"


def write_dataset(
    ratings: OrdinalRatings, folder: Path, name: str = "ordinal_toy", text: bool = False
) -> Path:
    """A long CSV of `ratings` (with a nominal second label, `colour`, and a second rater
    attribute, `half`) and its declaration in `folder`; the declaration's path. With `text`
    each item has a text field, `text` (`item_text`): a last column of the CSV."""
    colours = ("red", "green", "blue")
    lines = ["item_id,rater_id,score,colour,grp,half" + (",text" if text else "")]
    for rater, item, value in zip(ratings.rater, ratings.item, ratings.value, strict=True):
        group = ratings.group[rater]
        lines.append(
            f"i{item:03d},r{rater:03d},{value},{colours[(item + value) % 3]},"
            f"g{group},{'ab'[rater % 2]}" + (f",{item_text(item)}" if text else "")
        )
    (folder / f"{name}.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    levels = range(1, ratings.levels + 1)
    path = folder / f"{name}.toml"
    path.write_text(
        DECLARATION.format(
            name=name,
            values=", ".join(map(str, levels)),
            positive=", ".join(str(v) for v in levels if v >= 3),
            text_role='\ntext = ["text"]' if text else "",
        ),
        encoding="utf-8",
    )
    return path


def ingest_dataset(ratings: OrdinalRatings, folder: Path, name: str = "ordinal_toy") -> Path:
    """`ratings` written (`write_dataset`) and ingested by `dices ingest --declaration` into
    `folder`/data, whose path this is. The family is left out of the process's registry: a
    `Store` of the directory registers it again from the declaration it keeps."""
    from typer.testing import CliRunner

    from dices_cli.cli.main import app
    from dices_cli.families import FAMILIES

    declaration = write_dataset(ratings, folder, name)
    data = folder / "data"
    args = ["ingest", str(folder / f"{name}.csv"), "--declaration", str(declaration)]
    result = CliRunner().invoke(app, [*args, "--data", str(data)])
    assert result.exit_code == 0, result.output
    FAMILIES.pop(name)
    return data


def label_by_group(ratings: OrdinalRatings, parameters: dict[str, Any]) -> Table:
    """`label-by-group --by grp` of `ratings` (a 1..levels scale, positive from 3), its SQL
    and compute step run as a declared dataset's session runs them, over the family views
    it reads (`raters`, `asked_label_values`) made in an in-memory DuckDB: the figures the
    command gives, without a CSV to ingest. `parameters` adds to or overrides the
    defaults (clustered, 0 permutations, seed 0, two-sided)."""
    import duckdb
    import pyarrow as pa

    from dices_cli.metrics.any_family import share_intervals
    from dices_cli.queries.catalog import declared_queries, render_sql
    from dices_cli.queries.declared import mean_codes
    from dices_cli.queries.engine import arrow_table

    positions = tuple(float(v) for v in range(1, ratings.levels + 1))
    rater_ids = np.array([f"r{r:04d}" for r in range(len(ratings.group))])
    raters = pa.table(
        {
            "dataset": ["ordinal"] * len(ratings.group),
            "rater_id": rater_ids,
            "grp": [f"g{g}" for g in ratings.group],
        }
    )
    values = pa.table(
        {
            "dataset": ["ordinal"] * len(ratings.value),
            "item_id": [f"i{i:04d}" for i in ratings.item],
            "rater_id": rater_ids[ratings.rater],
            "label": ["score"] * len(ratings.value),
            "kind": ["ordinal"] * len(ratings.value),
            "value": ratings.value.astype(str),
            "rank": ratings.value - 1,
            "number": ratings.value.astype(np.float64),
            "positive": ratings.value >= 3,
        }
    )
    origin, unit = mean_codes(positions)
    bound: dict[str, Any] = {
        "by": ["grp"], "label": "score", "kind": "ordinal", "positions": positions,
        "positive_values": ", ".join(str(v) for v in range(3, ratings.levels + 1)),
        "mean_origin": origin, "mean_unit": unit, "interval": "clustered",
        "permutations": 0, "seed": 0, "alternative": "two-sided", **parameters,
        # as a session knows it from the manifest: no (rater, item) pair rated twice
        "one_rating_per_cell": len(set(zip(ratings.rater, ratings.item, strict=True)))
        == len(ratings.rater),
    }  # fmt: skip
    query = declared_queries()["label-by-group"]
    sql = render_sql(query)
    con = duckdb.connect()
    con.register("raters", raters)
    con.register("asked_label_values", values)
    named = {k: v for k, v in bound.items() if f"${k}" in sql}
    return share_intervals(arrow_table(con.execute(sql, named)), bound)
