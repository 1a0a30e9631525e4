"""Concurrent runs on one data directory.

Two writers: the second is refused at once with a clear message (the directory's lock),
and nothing is corrupted. Readers during a replacement see the old dataset or the new
one, whole.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from drivers.datadir import (
    Paused,
    dices_command,
    leftovers,
    run_dices,
    sha256,
    subset,
    visible,
)
from drivers.repeat import Repeating
from typer.testing import CliRunner

from dices_cli.cli.main import app
from dices_cli.output import collect
from dices_cli.queries.catalog import get_query
from dices_cli.queries.engine import open_session
from dices_cli.queries.sandbox import run_sql
from dices_cli.store.datasets import Store

LOCKED = "wait for it to finish, then run this again"


@pytest.fixture(scope="module")
def new_350(replica_350: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first 40 conversations of the replica: a dataset different from the full one."""
    return subset(replica_350, tmp_path_factory.mktemp("new") / "dices_350_new.csv", 40)


@pytest.fixture(scope="module")
def other_350(replica_350: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return subset(replica_350, tmp_path_factory.mktemp("other") / "dices_350_other.csv", 41)


@pytest.fixture(scope="module")
def larger_350(replica_350: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return subset(replica_350, tmp_path_factory.mktemp("larger") / "dices_350_larger.csv", 120)


@pytest.fixture(scope="module")
def new_990(replica_990: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return subset(replica_990, tmp_path_factory.mktemp("new") / "dices_990_new.csv", 40)


def snapshot(data: Path) -> dict[str, object]:
    """Every entry under `data`: symlink targets, file sizes and the lock's note."""
    entries: dict[str, object] = {}
    for path in sorted(data.rglob("*")):
        name = str(path.relative_to(data))
        if path.is_symlink():
            entries[name] = ("link", str(path.readlink()))
        elif path.is_file():
            entries[name] = path.read_bytes() if path.name == ".lock" else path.stat().st_size
        else:
            entries[name] = "dir"
    return entries


@pytest.mark.parametrize(
    ("point", "second"),
    [("locked", "350"), ("tables", "350"), ("switched", "350"), ("tables", "990")],
)
def test_a_second_ingest_is_refused_while_one_writes(
    point: str,
    second: str,
    ingested_copy: Path,
    new_350: Path,
    other_350: Path,
    new_990: Path,
    runner: CliRunner,
) -> None:
    """The lock covers the directory: writing DICES-350 keeps out a DICES-990 ingest too."""
    data = ingested_copy
    file = {"350": other_350, "990": new_990}[second]
    with Paused(point, "ingest", str(new_350), "--force", "--data", str(data)) as holder:
        holder.wait_paused()
        before = snapshot(data)
        result = runner.invoke(app, ["ingest", str(file), "--force", "--data", str(data)])
        assert result.exit_code == 1
        assert result.stdout == ""
        assert result.stderr == (
            f"Error: {data} is being written by dices (pid {holder.pid}); {LOCKED}\n"
        )
        assert snapshot(data) == before  # the refused run changed nothing
        code, _, stderr = holder.resume()
    assert code == 0, stderr
    assert stderr.startswith("DICES-350: 4,920 rows read = 4,920 written + 0 rejected;")
    version = visible(data, "350")
    assert version is not None and version.sha256 == sha256(new_350)
    assert leftovers(data) == []
    # The lock is free again once the writer is done.
    result = runner.invoke(app, ["ingest", str(file), "--force", "--data", str(data)])
    assert result.exit_code == 0, result.output
    version = visible(data, second)
    assert version is not None and version.sha256 == sha256(file)


def test_a_lock_held_by_a_process_that_left_no_note(
    ingested_copy: Path, new_350: Path, runner: CliRunner
) -> None:
    data = ingested_copy
    hold = (
        "import fcntl, sys; handle = open(sys.argv[1], 'a'); "
        "fcntl.flock(handle, fcntl.LOCK_EX); print('locked', flush=True); sys.stdin.readline()"
    )
    holder = subprocess.Popen(
        [*dices_command()[:1], "-c", hold, str(data / ".lock")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        before = snapshot(data)
        result = runner.invoke(app, ["ingest", str(new_350), "--force", "--data", str(data)])
        assert result.exit_code == 1
        assert result.stderr == f"Error: {data} is being written by another process; {LOCKED}\n"
        assert snapshot(data) == before
    finally:
        holder.kill()
        holder.wait()
    result = runner.invoke(app, ["ingest", str(new_350), "--force", "--data", str(data)])
    assert result.exit_code == 0, result.output


def test_two_ingests_started_together(ingested_copy: Path, new_350: Path, other_350: Path) -> None:
    """Whichever gets the lock writes; the other waits for nothing: it is refused, or it
    comes second and replaces the first. Either way the dataset is one of the two, whole."""
    data = ingested_copy
    files = (new_350, other_350)
    for _ in range(3):
        processes = [
            subprocess.Popen(
                [*dices_command(), "ingest", str(file), "--force", "--data", str(data)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for file in files
        ]
        outcomes = [(p.pid, *p.communicate(timeout=120), p.returncode) for p in processes]
        refused = []
        for index, (_, stdout, stderr, code) in enumerate(outcomes):
            assert stdout == ""
            if code != 0:
                other_pid = outcomes[1 - index][0]
                assert code == 1
                assert stderr in (
                    f"Error: {data} is being written by dices (pid {other_pid}); {LOCKED}\n",
                    f"Error: {data} is being written by another process; {LOCKED}\n",
                )
                refused.append(index)
        assert len(refused) <= 1
        version = visible(data, "350")
        assert version is not None
        if refused:
            assert version.sha256 == sha256(files[1 - refused[0]])
        else:
            assert version.sha256 in {sha256(file) for file in files}
        assert leftovers(data) == []


def _core_overview(data: Path) -> tuple[object, ...]:
    session = open_session(Store(data), "350")
    try:
        return tuple(collect(session.run(get_query("overview"), {})).rows)
    finally:
        session.con.close()


def _sandbox_counts(data: Path) -> tuple[object, ...]:
    sql = "SELECT count(DISTINCT item_id), count(*), (SELECT count(*) FROM raters) FROM ratings"
    with run_sql(Store(data), "350", sql, timeout=60) as result:
        return tuple(result.head(1)[0].rows)


def _cli_arguments(data: Path) -> list[str]:
    return ["query", "overview", "-d", "350", "--data", str(data)]


def _cli_overview(data: Path) -> tuple[object, ...]:
    (run,) = Repeating(1, _cli_arguments(data)).stop()
    return (run["code"], run["stdout"], run["stderr"])


class Reader(threading.Thread):
    """Runs one kind of query over and over, recording (start, answer) until stopped."""

    def __init__(self, query: Callable[[Path], tuple[object, ...]], data: Path) -> None:
        super().__init__(daemon=True)
        self.query, self.data = query, data
        self.results: list[tuple[float, tuple[object, ...] | str]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            start = time.monotonic()
            try:
                answer: tuple[object, ...] | str = self.query(self.data)
            except Exception as error:  # recorded, so that the test shows it
                answer = f"{type(error).__name__}: {error}"
            self.results.append((start, answer))

    def started_since(self, moment: float) -> int:
        return sum(1 for start, _ in self.results if start > moment)


class CliReader:
    """`dices query overview` over and over in another process (tests/drivers/repeat.py):
    the command line, reading the data directory anew each run; as a Reader is used."""

    def __init__(self, data: Path) -> None:
        self.data, self.stop = data, threading.Event()
        self.repeating: Repeating | None = None

    def start(self) -> None:
        self.repeating = Repeating(1 << 30, _cli_arguments(self.data))

    def join(self, timeout: float | None = None) -> None:
        assert self.repeating is not None and self.stop.is_set()
        self.repeating.stop()

    @property
    def results(self) -> list[tuple[float, tuple[object, ...]]]:
        assert self.repeating is not None
        return [
            (run["start"], (run["code"], run["stdout"], run["stderr"]))
            for run in list(self.repeating.runs)
        ]

    def started_since(self, moment: float) -> int:
        return sum(1 for start, _ in self.results if start > moment)


def test_queries_during_replacements_see_the_old_or_the_new_dataset_whole(
    new_350: Path, larger_350: Path, tmp_path: Path
) -> None:
    """Ingests alternate between two files (40 and 120 conversations) while `dices query
    overview` (in another process), the same query in-process (lazy Parquet views) and `dices sql`
    (data loaded into memory) run in a loop. Every answer is one of the two complete
    ones, and each reader sees both: its queries overlapped the replacements."""
    # The data directories set up before the readers start: in this process (the processes
    # that count are the ingests that replace the dataset under the readers, below).
    runner, only = CliRunner(), {}
    for file in (new_350, larger_350):
        only[file] = tmp_path / file.stem
        result = runner.invoke(app, ["ingest", str(file), "--data", str(only[file])])
        assert result.exit_code == 0, result.output
    queries = (_cli_overview, _core_overview, _sandbox_counts)
    expected = [{query(only[new_350]), query(only[larger_350])} for query in queries]
    for answers in expected:
        assert len(answers) == 2
        assert not any("Error" in str(answer) for answer in answers)

    data = tmp_path / "data"
    result = runner.invoke(app, ["ingest", str(new_350), "--data", str(data)])
    assert result.exit_code == 0, result.output
    readers: list[Reader | CliReader] = [CliReader(data)]
    readers += [Reader(query, data) for query in queries[1:]]
    for reader in readers:
        reader.start()
    try:
        for file in (larger_350, new_350, larger_350):
            result = run_dices("ingest", str(file), "--force", "--data", str(data))
            assert result.returncode == 0, result.stderr
            done = time.monotonic()
            deadline = done + 60
            while any(r.started_since(done) == 0 for r in readers) and time.monotonic() < deadline:
                time.sleep(0.01)
            assert all(r.started_since(done) > 0 for r in readers), "a reader is stuck"
    finally:
        for reader in readers:
            reader.stop.set()
        for reader in readers:
            reader.join(120)
    for reader, answers in zip(readers, expected, strict=True):
        seen = [answer for _, answer in reader.results]
        unexpected = [answer for answer in seen if answer not in answers]
        assert unexpected == []
        assert set(seen) == answers  # both the old and the new dataset were seen
    assert leftovers(data) == []
