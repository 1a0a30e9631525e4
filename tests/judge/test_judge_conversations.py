"""The conversations a run asks about come from the stored Parquet files once per stored
version, and from their JSON copy after: the same rows, no DuckDB session; a new version, or
a copy that is not one, is read from the Parquet files again."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dices_cli.cli.main import app
from dices_cli.judge import conversations, plan
from dices_cli.judge.plan import Settings, load_items
from dices_cli.judge.prompts import load_prompt
from dices_cli.runs.demo import sample_paths
from dices_cli.store.datasets import Store


@pytest.fixture
def data(sample: Path, tmp_path: Path) -> Path:
    """A copy of the sample that has a judge cache (the copy is kept only there)."""
    target = tmp_path / "data"
    shutil.copytree(sample, target, symlinks=True)
    (target / "judge").mkdir(exist_ok=True)
    return target


def settings(dataset: str) -> Settings:
    return Settings(model="m", prompt=load_prompt("dices-safety"), dataset=dataset)


def copies(data: Path) -> list[Path]:
    return sorted((data / "judge").glob("items-*.json"))


def no_session(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Count the reads of the stored files (the DuckDB session) from now on."""
    reads: list[str] = []
    stored = plan._stored_items

    def counted(store: Store, dataset: str) -> list[conversations.Row]:
        reads.append(dataset)
        return stored(store, dataset)

    monkeypatch.setattr(plan, "_stored_items", counted)
    return reads


@pytest.mark.parametrize("dataset", ["350", "990", "all"])
def test_the_copy_gives_the_rows_the_stored_files_give(
    dataset: str, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store(data)
    reads = no_session(monkeypatch)
    first = load_items(store, settings(dataset))
    assert reads == [dataset] and len(copies(data)) == 1
    again = load_items(store, settings(dataset))
    assert reads == [dataset]  # from the copy
    assert again == first
    assert [tuple(row) for row in json.loads(copies(data)[0].read_text())["rows"]] == (
        plan._stored_items(store, dataset)
    )


@pytest.mark.parametrize(
    "damage",
    [
        b"",
        b"{",
        b'{"key": 1, "rows": []}',
        b"[" * 100_000,
        "rows",  # the right key, a row of the wrong shape
        "fifo",
    ],
)
def test_a_copy_that_is_not_one_is_read_again_from_the_stored_files(
    damage: bytes | str, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store(data)
    expected = load_items(store, settings("350"))
    [copy] = copies(data)
    if damage == "fifo":
        copy.unlink()
        os.mkfifo(copy)
    elif damage == "rows":
        written = json.loads(copy.read_text())
        written["rows"][3] = [written["rows"][3][0], True, None, None]
        copy.write_text(json.dumps(written))
    else:
        assert isinstance(damage, bytes)
        copy.write_bytes(damage)
    reads = no_session(monkeypatch)
    assert load_items(store, settings("350")) == expected
    assert reads == ["350"]
    if damage != "fifo":  # replaced by a copy of the rows read
        assert load_items(store, settings("350")) == expected
        assert reads == ["350"]


def test_a_new_version_of_the_dataset_is_read_from_its_files(
    data: Path, monkeypatch: pytest.MonkeyPatch, runner: CliRunner, tmp_path: Path
) -> None:
    store = Store(data)
    before = load_items(store, settings("350"))
    # Ingest DICES-350 again, its first conversation's response changed.
    original = next(path for path in sample_paths() if "350" in path.name)
    changed = tmp_path / original.name.removesuffix(".gz")
    text = gzip.decompress(original.read_bytes()).decode()
    first = before[0].response
    assert first and text.count(first) >= 1
    changed.write_text(text.replace(first, "A new response."))
    result = runner.invoke(app, ["ingest", str(changed), "--data", str(data), "--force", "-q"])
    assert result.exit_code == 0, result.output
    reads = no_session(monkeypatch)
    after = load_items(store, settings("350"))
    assert reads == ["350"]
    assert after[0].response == "A new response."
    assert after[1:] == before[1:]


def test_a_data_directory_without_a_judge_cache_gets_no_copy(
    sample: Path, tmp_path: Path, runner: CliRunner
) -> None:
    fresh = tmp_path / "fresh"
    shutil.copytree(sample, fresh, symlinks=True)
    shutil.rmtree(fresh / "judge", ignore_errors=True)
    store = Store(fresh)
    assert load_items(store, settings("350")) == load_items(store, settings("350"))
    result = runner.invoke(app, ["judge", "--model", "m", "--data", str(fresh), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert not (fresh / "judge").exists()


def test_a_data_directory_that_cannot_hold_a_copy_still_judges(
    data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (data / "judge").rmdir()
    (data / "judge").write_text("not a directory")
    store = Store(data)
    reads = no_session(monkeypatch)
    assert load_items(store, settings("350")) == load_items(store, settings("350"))
    assert reads == ["350", "350"]


def test_a_run_with_the_copy_imports_neither_duckdb_nor_arrow(data: Path) -> None:
    """What the copy is for: no DuckDB (nor Arrow, nor Polars) for the conversations."""
    load_items(Store(data), settings("all"))  # the copy made
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from dices_cli.judge.plan import Settings, load_items\n"
        "from dices_cli.judge.prompts import load_prompt\n"
        "from dices_cli.store.datasets import Store\n"
        "settings = Settings(model='m', prompt=load_prompt('dices-safety'), dataset='all')\n"
        "items = load_items(Store(Path(sys.argv[1])), settings)\n"
        "heavy = ('duckdb', 'pyarrow', 'polars')\n"
        "print(len(items), sorted(m for m in heavy if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(data)], capture_output=True, text=True, check=True
    )
    assert done.stdout == "120 []\n"
