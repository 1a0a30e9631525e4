"""A `dices ingest` killed (SIGKILL) while it writes leaves the old dataset or the new one,
whole, never a mix; the next ingest works without manual clean-up.

The kills are deterministic: tests/drivers/pause_at.py runs the real command line and
stops it at a named point of `Store.publish` (see the list there), where the test kills
it. One test also kills a plain `python -m dices_cli ingest` when it sees the write
under way on disk, wherever that lands.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest
from drivers.datadir import (
    Paused,
    dices_command,
    leftovers,
    sha256,
    subset,
    versions,
    visible,
)
from drivers.pause_at import POINTS
from typer.testing import CliRunner

from dices_cli.cli.main import app

pytestmark = pytest.mark.slow  # ingests killed in fresh processes

# From "switched" on, the new version is the one readers see.
SWITCHED = ("switched", "pruned")
# What a kill at each point leaves behind for the next ingest to remove.
LEFT_BEHIND = {
    "temp-dir": [".store/.tmp-"],
    "ratings-half": [".store/.tmp-"],
    "tables": [".store/.tmp-"],
    "fsynced": [".store/.tmp-"],
    "linked": [".tmp-"],
}


@pytest.fixture(scope="module")
def new_350(replica_350: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The dataset that replaces the full replica: its first 40 conversations."""
    return subset(replica_350, tmp_path_factory.mktemp("new") / "dices_350_new.csv", 40)


@pytest.fixture(scope="module")
def new_990(replica_990: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return subset(replica_990, tmp_path_factory.mktemp("new") / "dices_990_new.csv", 40)


def overview(data: Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["query", "overview", "-d", "350", "--data", str(data)])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def answers(
    ingested: Path, new_350: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, str]:
    """`dices query overview -d 350` of the old (full) and of the new (subset) dataset."""
    fresh = tmp_path_factory.mktemp("fresh")
    result = CliRunner().invoke(app, ["ingest", str(new_350), "--data", str(fresh)])
    assert result.exit_code == 0, result.output
    old, new = overview(ingested), overview(fresh)
    assert old[0] == new[0] == 0
    assert old[1] != new[1]
    return {"old": old[1], "new": new[1]}


def info(data: Path) -> list[dict[str, object]]:
    result = CliRunner().invoke(app, ["info", "--data", str(data), "-f", "json"])
    assert result.exit_code == 0, result.output
    records: list[dict[str, object]] = json.loads(result.stdout)
    return records


def kinds(names: list[str]) -> list[str]:
    """`.store/.tmp-350-...` -> `.store/.tmp-`: what kind of leftover, not which."""
    return [name.split("350-")[0] for name in names]


@pytest.mark.parametrize("point", POINTS)
def test_a_killed_ingest_leaves_the_old_or_the_new_dataset_whole(
    point: str,
    ingested_copy: Path,
    replica_350: Path,
    new_350: Path,
    answers: dict[str, str],
    runner: CliRunner,
) -> None:
    data = ingested_copy
    before = visible(data, "350")
    assert before is not None and before.sha256 == sha256(replica_350)
    other = visible(data, "990")

    with Paused(point, "ingest", str(new_350), "--force", "--data", str(data)) as driver:
        driver.wait_paused()
        driver.kill()

    after = visible(data, "350")  # whole, or this fails
    assert after is not None
    if point in SWITCHED:
        assert after.sha256 == sha256(new_350)
        assert after.counts == {"conversations": 40, "raters": 123, "ratings": 4920}
    else:
        assert after == before
    assert visible(data, "990") == other  # the other dataset is not touched
    assert overview(data) == (0, answers["new" if point in SWITCHED else "old"], "")
    shown = {record["dataset"]: record for record in info(data)}
    assert shown["350"]["ratings"] == after.counts["ratings"]
    assert shown["350"]["path"] == str(after.path)
    assert kinds(leftovers(data)) == LEFT_BEHIND.get(point, [])

    # The next ingest needs no clean-up by hand, and removes what the crash left.
    result = runner.invoke(app, ["ingest", str(new_350), "--force", "--data", str(data)])
    assert result.exit_code == 0, result.output
    assert leftovers(data) == []
    recovered = visible(data, "350")
    assert recovered is not None and recovered.sha256 == sha256(new_350)
    # The new version and the one readers saw before it; an orphan of the crash is gone.
    assert versions(data, "350") == sorted([recovered.path.name, after.path.name])
    assert overview(data) == (0, answers["new"], "")


@pytest.mark.parametrize("point", ["locked", "ratings-half", "renamed", "linked"])
def test_a_killed_first_ingest_leaves_nothing_ingested(
    point: str, tmp_path: Path, new_350: Path, answers: dict[str, str], runner: CliRunner
) -> None:
    data = tmp_path / "data"
    with Paused(point, "ingest", str(new_350), "--data", str(data)) as driver:
        driver.wait_paused()
        driver.kill()

    assert visible(data, "350") is None
    assert overview(data) == (
        1,
        "",
        f"Error: nothing is ingested in {data}; run `dices ingest FILE --data {data}` first\n",
    )
    result = runner.invoke(app, ["info", "--data", str(data)])
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: nothing is ingested in {data}; run `dices ingest FILE --data {data}` first\n"
    )
    # No --force needed: nothing was ingested.
    result = runner.invoke(app, ["ingest", str(new_350), "--data", str(data)])
    assert result.exit_code == 0, result.output
    assert leftovers(data) == []
    recovered = visible(data, "350")
    assert recovered is not None
    assert versions(data, "350") == [recovered.path.name]
    assert overview(data) == (0, answers["new"], "")


@pytest.mark.parametrize(
    ("point", "replaced"),
    [
        ("temp-dir:2", ["350"]),
        ("switched:1", ["350"]),
        ("linked:2", ["350"]),
        ("pruned:2", ["350", "990"]),
    ],
)
def test_each_dataset_of_a_killed_two_file_ingest_is_whole(
    point: str,
    replaced: list[str],
    ingested_copy: Path,
    new_350: Path,
    new_990: Path,
    runner: CliRunner,
) -> None:
    """Each dataset is replaced atomically on its own: a kill between the two leaves the
    first one new and the second one old, each whole."""
    data = ingested_copy
    before = {name: visible(data, name) for name in ("350", "990")}
    new = {"350": sha256(new_350), "990": sha256(new_990)}
    arguments = ["ingest", str(new_350), str(new_990), "--force", "--data", str(data)]
    with Paused(point, *arguments) as driver:
        driver.wait_paused()
        driver.kill()

    for name in ("350", "990"):
        after = visible(data, name)
        assert after is not None
        if name in replaced:
            assert after.sha256 == new[name]
        else:
            assert after == before[name]
    result = runner.invoke(app, arguments)
    assert result.exit_code == 0, result.output
    assert leftovers(data) == []
    for name in ("350", "990"):
        version = visible(data, name)
        assert version is not None and version.sha256 == new[name]


def _first_table(data: Path) -> bool:
    return any((data / ".store").glob(".tmp-*/items.parquet"))


def _last_table(data: Path) -> bool:
    return any((data / ".store").glob(".tmp-*/ratings.parquet"))


def _switched(data: Path, old: Path) -> bool:
    return (data / "350").resolve() != old


@pytest.mark.parametrize("moment", ["temp dir", "first table", "last table", "switched"])
def test_a_plain_ingest_killed_while_it_writes(
    moment: str,
    ingested_copy: Path,
    replica_350: Path,
    new_350: Path,
    answers: dict[str, str],
    runner: CliRunner,
) -> None:
    """No driver: kill the real command as soon as its write shows on disk. Where exactly
    the kill lands depends on timing; whatever it is, the dataset is old or new, whole."""
    data = ingested_copy
    old = (data / "350").resolve()
    seen = {
        "temp dir": lambda: any((data / ".store").glob(".tmp-*")),
        "first table": lambda: _first_table(data),
        "last table": lambda: _last_table(data),
        "switched": lambda: _switched(data, old),
    }[moment]
    command = [*dices_command(), "ingest", str(new_350), "--force", "--data", str(data)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while process.poll() is None and not seen() and time.monotonic() < deadline:
        time.sleep(0.0005)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert process.returncode in (0, -signal.SIGKILL)

    after = visible(data, "350")
    assert after is not None
    assert after.sha256 in (sha256(replica_350), sha256(new_350))
    state = "new" if after.sha256 == sha256(new_350) else "old"
    assert overview(data) == (0, answers[state], "")
    result = runner.invoke(app, ["ingest", str(new_350), "--force", "--data", str(data)])
    assert result.exit_code == 0, result.output
    assert leftovers(data) == []
    assert overview(data) == (0, answers["new"], "")
