"""A run reads only the cache it can use: the segments of its own tag (the key fields all its
calls share) and those written before tags, and in them parses only its own calls' lines.
Another run's segment is never opened (a FIFO there would hang a run that read it)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dices_cli.cli.main import app
from dices_cli.errors import DicesError
from dices_cli.store import judge_cache
from dices_cli.store.judge_cache import RUN_FIELDS, completed, run_tag
from tests.drivers.judge_server import running


@pytest.fixture
def data(sample: Path, tmp_path: Path) -> Path:
    target = tmp_path / "data"
    shutil.copytree(sample, target, symlinks=True)
    return target


def judge(runner: CliRunner, data: Path, url: str, *args: str) -> str:
    result = runner.invoke(
        app, ["judge", "--base-url", url, "--data", str(data), "--limit", "3", *args]
    )
    assert result.exit_code == 0, result.output
    return result.stderr


def segments(data: Path) -> list[Path]:
    return sorted((data / "judge").glob("calls-*.jsonl"))


def test_a_segment_is_named_with_its_runs_tag(runner: CliRunner, data: Path) -> None:
    with running() as server:
        judge(runner, data, server.base_url, "--model", "m")
    [segment] = segments(data)
    records = [json.loads(line) for line in segment.read_text().splitlines()]
    tags = {run_tag({name: r[name] for name in RUN_FIELDS}) for r in records}
    assert len(records) == 3 and len(tags) == 1
    assert segment.name.endswith(f"-{tags.pop()}.jsonl")
    assert all(line.startswith('{"key":"') for line in segment.read_text().splitlines())


def test_another_runs_segment_is_never_opened(runner: CliRunner, data: Path) -> None:
    with running() as server:
        judge(runner, data, server.base_url, "--model", "m")
        [mine] = segments(data)
        # Another run's segment (another model: another tag) that hangs whoever opens it.
        other = data / "judge" / f"calls-{'9' * 20}-1-{'0' * 16}.jsonl"
        os.mkfifo(other)
        assert "0 asked, 3 from the cache" in judge(runner, data, server.base_url, "-m", "m")
        assert len(server.bodies) == 3
    assert segments(data) == [mine, other]


def test_a_segment_written_before_tags_still_answers(runner: CliRunner, data: Path) -> None:
    with running() as server:
        judge(runner, data, server.base_url, "--model", "m")
        [segment] = segments(data)
        time_part, pid, _ = segment.name[6:-6].split("-")
        segment.rename(segment.with_name(f"calls-{time_part}-{pid}.jsonl"))
        assert "0 asked, 3 from the cache" in judge(runner, data, server.base_url, "-m", "m")
        assert "3 asked" in judge(runner, data, server.base_url, "--model", "m2")
        assert len(server.bodies) == 6


def test_only_the_lines_of_the_calls_asked_for_are_parsed(
    runner: CliRunner, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with running() as server:
        judge(runner, data, server.base_url, "--model", "m", "--samples", "4")
    [segment] = segments(data)
    records = [json.loads(line) for line in segment.read_text().splitlines()]
    tag = segment.name[6:-6].split("-")[2]
    # A line written by hand (not as Segment writes it) is parsed whatever its key.
    with segment.open("a") as handle:
        handle.write(json.dumps(records[5]) + "\n")
    parsed: list[bytes | str] = []
    loads_json = judge_cache.loads_json

    def counted(line: bytes | str, *args: int) -> object:
        parsed.append(line)
        return loads_json(line, *args)

    monkeypatch.setattr(judge_cache, "loads_json", counted)
    wanted = {records[1]["key"], records[5]["key"]}
    found = completed(data, tag, wanted)
    assert set(found) == wanted
    assert found[records[5]["key"]] == records[5]
    assert len(parsed) == 3  # records 1 and 5, and the line written by hand
    assert completed(data, "0" * 16, wanted) == {}
    assert len(completed(data)) == 12


def test_segments_are_read_newest_first_until_every_call_has_its_answer(
    runner: CliRunner, data: Path
) -> None:
    with running() as server:
        judge(runner, data, server.base_url, "--model", "m")
        [first] = segments(data)
        judge(runner, data, server.base_url, "--model", "m", "--refresh")
        [_, second] = segments(data)
        tag = second.name[6:-6].split("-")[2]
        records = [json.loads(line) for line in second.read_text().splitlines()]
        keys = {record["key"] for record in records}
        # The later segment answers every call: the older one is not opened.
        first.unlink()
        os.mkfifo(first)
        assert completed(data, tag, keys) == {r["key"]: r for r in records}
        # Within a segment, and across segments, the latest answer wins.
        later = {**records[0], "answer": "No", "asked_at": records[0]["asked_at"] + 1}
        newest = data / "judge" / f"calls-{'9' * 20}-1-{tag}.jsonl"
        newest.write_text(json.dumps(records[0]) + "\n" + json.dumps(later) + "\n")
        assert completed(data, tag, keys)[records[0]["key"]] == later
        # One call none of the newer segments answers: the older one is read (and refused).
        second.write_text("\n".join(json.dumps(r) for r in records[1:]) + "\n")
        newest.unlink()
        with pytest.raises(DicesError, match="it is not a regular file"):
            completed(data, tag, keys)


def test_a_segment_is_a_data_file_never_executable(runner: CliRunner, data: Path) -> None:
    with running() as server:
        judge(runner, data, server.base_url, "--model", "m")
    [segment] = segments(data)
    umask = os.umask(0)
    os.umask(umask)
    assert segment.stat().st_mode & 0o777 == 0o666 & ~umask
    assert segment.stat().st_mode & 0o111 == 0
