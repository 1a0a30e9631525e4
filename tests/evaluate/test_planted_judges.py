"""The judge-as-rater table and the persona null test on the DICES-350 replica, against a
local 127.0.0.1 server whose answers are planted (tests/drivers/planted_judge.py): the judge
that follows its persona group is found, the random one is not. scripts/planted_judges.py
prints the same figures with more permutations."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from dices_cli.cli.main import app
from tests.conftest import built_once
from tests.drivers.planted_judge import Planted, evaluated, judge_planted, planted_server

COLUMN = "rater_race"
PLAIN_GROUP = "Multiracial"
PERMUTATIONS = ["--permutations", "199"]
SIGNAL_FIRST = ["persona_signal", "fit_persona", "fit_no_persona", "fit_gain"]


@pytest.fixture(scope="module")
def judged(
    tmp_path_factory: pytest.TempPathFactory, replica_350: Path
) -> tuple[Path, dict[str, Path]]:
    """DICES-350 ingested, and the planted judges' predictions, with and without personas."""

    def build(data: Path) -> None:
        result = CliRunner().invoke(app, ["ingest", str(replica_350), "--data", str(data), "-q"])
        assert result.exit_code == 0, result.output

    data = built_once(tmp_path_factory, "ingested_350", build)
    folder = tmp_path_factory.mktemp("planted")
    with planted_server(Planted(data, "350", COLUMN, PLAIN_GROUP)) as server:
        files = judge_planted(data, server, folder, COLUMN)
        assert len(server.bodies) == 2 * 350 * (1 + 5)  # each call once: 5 groups, no persona
    return data, files


def _figures(rows: list[dict[str, str]], model: str | None = None) -> dict[tuple[str, str], dict]:
    return {
        (row["group"], row["figure"]): row for row in rows if model is None or row["model"] == model
    }


def test_the_persona_null_test_finds_the_group_follower_and_not_the_random_judge(
    judged: tuple[Path, dict[str, Path]],
) -> None:
    data, files = judged
    follower = evaluated(
        data, files["follows-group-personas"], "--no-persona", files["follows-group"],
        *PERMUTATIONS,
    )  # fmt: skip
    assert [row["figure"] for row in follower[:4]] == SIGNAL_FIRST  # before any group's row
    signal, gain = follower[0], follower[3]
    assert float(signal["value"]) > 0.3
    assert float(signal["p_value"]) == pytest.approx(2 / 200)  # the floor of 199 shuffles
    assert abs(float(signal["null"])) < 0.02
    assert float(gain["value"]) > 0 and float(gain["low"]) > 0 and float(gain["p_value"]) < 1e-6
    random = evaluated(
        data, files["random-personas"], "--no-persona", files["random"], *PERMUTATIONS
    )
    assert [row["figure"] for row in random[:4]] == SIGNAL_FIRST
    assert abs(float(random[0]["value"])) < 0.1 and float(random[0]["p_value"]) > 0.05
    assert float(random[3]["low"]) < 0 < float(random[3]["high"])
    assert float(random[3]["p_value"]) > 0.05


def test_the_judges_as_raters_table_places_each_judge_beside_the_groups(
    judged: tuple[Path, dict[str, Path]],
) -> None:
    data, files = judged
    rows = evaluated(data, files["judges"], "--as-rater", "--by", COLUMN, *PERMUTATIONS)
    follower, random = _figures(rows, "follows-group"), _figures(rows, "random")
    assert float(follower["", "xrr"]["value"]) > 0.25
    assert abs(float(random["", "xrr"]["value"])) < 0.05
    # The follower answers as PLAIN_GROUP's plurality: beside that group it agrees far more
    # than the group's raters with each other, beyond what random groups of its size give.
    followed = follower[PLAIN_GROUP, "xrr_over_irr"]
    assert float(followed["value"]) > float(followed["null_high"])
    assert float(followed["p_value"]) < 0.05
    assert all(float(r["p_adjusted"]) > 0.05 for (g, f), r in random.items() if g and f == "xrr")
    joint = _figures(rows)
    assert abs(float(joint["", "error_correlation"]["value"])) < 0.1
    assert 1.8 < float(joint["", "effective_judges"]["value"]) < 2.2
