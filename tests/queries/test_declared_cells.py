"""label-by-group's clustered interval needs sums over rater x item cells; when the ingest
counted no repeated (item, rater) pair (the manifest's repeated_ratings is 0) each cell is
one rating and those sums are the group's counts, so the query skips the cell aggregate.
The figures are the same either way, and a dataset with a repeated pair (or a manifest
without the count) takes the aggregate."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from dices_cli.cli.main import app
from dices_cli.families import FAMILIES
from dices_cli.output import Table
from dices_cli.queries.catalog import family_queries
from dices_cli.queries.declared import DeclaredSession
from dices_cli.runs.common import data_store
from tests.drivers.ordinal import ordinal_ratings, write_dataset

NAME = "cells_toy"
pytestmark = pytest.mark.usefixtures("registry_as_it_was")


def ingested(folder: Path, repeat: bool) -> Path:
    """The toy ratings ingested (with one rating repeated when `repeat`): the data folder."""
    declaration = write_dataset(
        ordinal_ratings((6, 7), items=14, per_rater=9, seed=5), folder, NAME
    )
    csv = folder / f"{NAME}.csv"
    if repeat:
        lines = csv.read_text(encoding="utf-8").splitlines()
        csv.write_text("\n".join([*lines, lines[1]]) + "\n", encoding="utf-8")
    data = folder / "data"
    args = ["ingest", str(csv), "--declaration", str(declaration), "--data", str(data)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    FAMILIES.pop(NAME)
    return data


def by_group(data: Path, one_rating_per_cell: bool | None = None) -> list[dict[str, Any]]:
    """label-by-group by grp with the clustered interval; `one_rating_per_cell` overrides
    what the session read from the manifest."""
    session = DeclaredSession(data_store(data), NAME)
    if one_rating_per_cell is not None:
        session.one_rating_per_cell = one_rating_per_cell
    query = family_queries(NAME)["label-by-group"]
    parameters = query.bind({"by": ["grp"], "interval": "clustered", "permutations": 50})
    result = session.run(query, parameters, typed=False)
    assert isinstance(result, Table)
    return result.records()


def same(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> bool:
    return len(a) == len(b) and all(
        row_a[k] == row_b[k]
        or (isinstance(row_a[k], float) and math.isclose(row_a[k], row_b[k], rel_tol=1e-12))
        for row_a, row_b in zip(a, b, strict=True)
        for k in row_a
    )


def test_without_a_repeated_pair_the_cells_are_the_ratings(tmp_path: Path) -> None:
    data = ingested(tmp_path, repeat=False)
    manifest = json.loads((data / NAME / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["repeated_ratings"] == 0
    assert DeclaredSession(data_store(data), NAME).one_rating_per_cell
    fast, aggregated = by_group(data), by_group(data, one_rating_per_cell=False)
    assert same(fast, aggregated)
    assert all(not row["interval_note"] for row in fast)  # the intervals are there
    assert all(row["share_positive_ci_low"] < row["share_positive_ci_high"] for row in fast)


def test_a_repeated_pair_takes_the_cell_aggregate(tmp_path: Path) -> None:
    data = ingested(tmp_path, repeat=True)
    manifest = json.loads((data / NAME / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["repeated_ratings"] == 1
    assert not DeclaredSession(data_store(data), NAME).one_rating_per_cell
    # The shortcut would be wrong here: one cell holds two ratings.
    assert not same(by_group(data), by_group(data, one_rating_per_cell=True))


def test_a_manifest_without_the_count_takes_the_cell_aggregate(tmp_path: Path) -> None:
    data = ingested(tmp_path, repeat=False)
    path = data / NAME / "manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    del manifest["repeated_ratings"]
    path.write_text(json.dumps(manifest), encoding="utf-8")
    assert not DeclaredSession(data_store(data), NAME).one_rating_per_cell
