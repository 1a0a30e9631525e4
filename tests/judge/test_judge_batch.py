"""`dices judge --batch` / `--batch-results`: a batch written, "processed" by a fake of the
Batch API (tests/drivers/batch_api.py), read back into the cache and evaluated; and a
hostile results file read into problem records in bounded memory.

The data directory holds the shipped sample (40 conversations of DICES-350). The fake
answers as the online test server does, so a batch run's predictions equal an online run's.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from dices_cli.cli.main import app
from dices_cli.judge.batch import Limits, _split, part_paths
from tests.conftest import memory_cap
from tests.drivers.batch_api import Processed, completion, process
from tests.drivers.batch_server import running as batch_server
from tests.drivers.judge_server import JudgeServer, running

KEY = "sk-test-batch-8e21c0"
UNUSED_URL = "http://127.0.0.1:9/v1"  # batch mode talks to no server


@pytest.fixture
def data(sample: Path, tmp_path: Path) -> Path:
    target = tmp_path / "data"
    shutil.copytree(sample, target, symlinks=True)
    return target


def dices(runner: CliRunner, data: Path, *args: str, url: str = UNUSED_URL):  # type: ignore[no-untyped-def]
    command = ["judge", "--model", "m", "--base-url", url, "--data", str(data), *args]
    return runner.invoke(app, command, env={"OPENAI_API_KEY": KEY})


def rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text())))


def cache_bytes(data: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted((data / "judge").glob("calls-*.jsonl")))


def test_a_batch_line_is_the_openai_batch_format_keyed_by_the_cache_key(
    runner: CliRunner, data: Path, tmp_path: Path
) -> None:
    batch = tmp_path / "b.jsonl"
    result = dices(
        runner, data, "--limit", "3", "--samples", "2", "--seed", "7", "--batch", str(batch)
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == f"{batch}\n"
    assert "batch: 6 requests in 1 files (0 of 6 calls answered by the cache)" in result.stderr
    lines = [json.loads(line) for line in batch.read_text().splitlines()]
    assert len(lines) == 6
    assert len({line["custom_id"] for line in lines}) == 6
    for line in lines:
        assert list(line) == ["custom_id", "method", "url", "body"]
        assert line["method"] == "POST" and line["url"] == "/v1/chat/completions"
        assert len(line["custom_id"]) == 64
        body = line["body"]
        assert body["model"] == "m" and body["max_tokens"] == 16 and body["logprobs"] is True
    assert [line["body"]["seed"] for line in lines] == [7, 8] * 3  # a seed per sample
    # The key, and the endpoint's URL, never in the file.
    assert KEY not in batch.read_text() and "127.0.0.1" not in batch.read_text()


def test_the_custom_id_is_the_key_of_an_online_run(
    runner: CliRunner, data: Path, tmp_path: Path
) -> None:
    """An answer from a batch answers the same call online, and the reverse."""
    with running() as server:
        url = server.base_url
        args = ["judge", "--model", "m", "--base-url", url, "--data", str(data), "--limit", "4"]
        assert runner.invoke(app, [*args, "--limit", "2"]).exit_code == 0
        batch = tmp_path / "b.jsonl"
        result = runner.invoke(app, [*args, "--batch", str(batch)])
        assert result.exit_code == 0, result.output
        assert "batch: 2 requests in 1 files (2 of 4 calls answered by the cache)" in result.stderr
        sent = [json.loads(line) for line in batch.read_text().splitlines()]
        answered = {json.loads(line)["key"] for line in cache_bytes(data).splitlines()}
        assert not {line["custom_id"] for line in sent} & answered


@pytest.mark.parametrize(
    ("sizes", "limits", "bounds"),
    [
        ([10] * 5, Limits(2, 1000), [(0, 2), (2, 4), (4, 5)]),
        ([10] * 5, Limits(100, 25), [(0, 2), (2, 4), (4, 5)]),
        ([10, 20, 5], Limits(100, 30), [(0, 2), (2, 3)]),
        ([10] * 4, Limits(4, 40), [(0, 4)]),
        ([], Limits(), []),
    ],
)
def test_files_are_split_at_the_limits(
    sizes: list[int], limits: Limits, bounds: list[tuple[int, int]]
) -> None:
    assert _split(sizes, limits) == bounds


def test_a_split_batch_keeps_every_file_within_its_limits(
    runner: CliRunner, data: Path, tmp_path: Path
) -> None:
    batch = tmp_path / "b.jsonl"
    result = dices(
        runner,
        data,
        "--limit",
        "25",
        "--batch",
        str(batch),
        "--batch-max-requests",
        "10",
        "--batch-max-bytes",
        "9000",
    )
    assert result.exit_code == 0, result.output
    paths = [Path(p) for p in result.stdout.splitlines()]
    assert paths == part_paths(batch, len(paths)) and len(paths) >= 3
    assert paths[0].name == "b.001.jsonl"
    assert not batch.exists()
    ids = []
    for path in paths:
        content = path.read_bytes()
        assert len(content) <= 9000 and content.count(b"\n") <= 10
        ids += [json.loads(line)["custom_id"] for line in content.splitlines()]
    assert len(ids) == len(set(ids)) == 25


def test_a_request_larger_than_a_file_may_be_is_an_error(
    runner: CliRunner, data: Path, tmp_path: Path
) -> None:
    result = dices(
        runner,
        data,
        "--limit",
        "2",
        "--batch",
        str(tmp_path / "b.jsonl"),
        "--batch-max-bytes",
        "1024",
    )
    assert result.exit_code == 1
    assert "more than a batch file may hold (1,024): raise --batch-max-bytes" in result.stderr
    assert not list(tmp_path.glob("*.jsonl"))


@pytest.mark.slow
def test_a_batch_with_a_failure_and_an_expiry_completes_without_asking_twice(
    runner: CliRunner, data: Path, tmp_path: Path
) -> None:
    """Written, processed (one request fails, the batch expires after 30 of 40), read back:
    the run says what is missing; a second batch holds only those 11; read back, the
    predictions are an online run's, and evaluate reads them."""
    seen = Processed()
    batch, output, errors = (tmp_path / n for n in ("b.jsonl", "out.jsonl", "err.jsonl"))
    predictions = tmp_path / "p.csv"
    assert dices(runner, data, "--batch", str(batch), "--limit", "40").exit_code == 0
    process(batch, output, errors, fail=frozenset({3}), expire_after=30, seen=seen)
    result = dices(
        runner,
        data,
        "--limit",
        "40",
        "--batch-results",
        str(output),
        "--batch-results",
        str(errors),
        "-o",
        str(predictions),
    )
    assert result.exit_code == 1
    assert "29 answers and 11 failed requests cached, 0 already cached, 0 lines" in result.stderr
    assert "Error: 11 of 40 calls have no answer in the cache" in result.stderr
    assert "the same command with --batch FILE writes a batch of those only" in result.stderr
    assert not predictions.exists()

    again = tmp_path / "again.jsonl"
    result = dices(runner, data, "--limit", "40", "--batch", str(again))
    assert result.exit_code == 0, result.output
    assert "batch: 11 requests in 1 files (29 of 40 calls answered by the cache)" in result.stderr
    process(again, tmp_path / "out2.jsonl", seen=seen)
    results = ["--batch-results", str(tmp_path / "out2.jsonl"), "--batch-results", str(output)]
    result = dices(runner, data, "--limit", "40", *results, "-o", str(predictions), "--evaluate")
    assert result.exit_code == 0, result.output
    assert "11 answers and 0 failed requests cached, 29 already cached" in result.stderr
    assert "0 asked, 40 from the cache" in result.stderr
    # Each call processed once, but the one that failed (500), which the second batch asked.
    assert len(seen.custom_ids) == 41 and len(set(seen.custom_ids)) == 40
    assert [i for i in seen.custom_ids if seen.custom_ids.count(i) == 2] == [seen.custom_ids[3]] * 2
    assert KEY not in cache_bytes(data).decode()

    # The same predictions as an online run against a server that answers alike.
    with running() as server:
        online = tmp_path / "online.csv"
        fresh = tmp_path / "fresh"
        shutil.copytree(data, fresh, ignore=shutil.ignore_patterns("judge"))
        args = ["judge", "--model", "m", "--base-url", server.base_url, "--data", str(fresh)]
        assert runner.invoke(app, [*args, "--limit", "40", "-o", str(online)]).exit_code == 0
    assert rows(predictions) == rows(online)
    evaluated = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [(r["model"], r["conversations"], r["covered"]) for r in evaluated][:1] == [
        ("m", "40", "40")
    ]


def test_a_failed_request_is_a_judge_calls_row(
    runner: CliRunner, data: Path, tmp_path: Path
) -> None:
    batch, output = tmp_path / "b.jsonl", tmp_path / "out.jsonl"
    assert dices(runner, data, "--batch", str(batch), "--limit", "3").exit_code == 0
    process(batch, output, fail=frozenset({1}), expire_after=2)
    assert dices(runner, data, "--limit", "3", "--batch-results", str(output)).exit_code == 1
    sql = runner.invoke(
        app,
        [
            "sql",
            "SELECT ok, status, error FROM judge_calls ORDER BY ok, status NULLS FIRST",
            "--data",
            str(data),
            "-f",
            "csv",
        ],
    )
    assert sql.exit_code == 0, sql.output
    assert sql.stdout.splitlines() == [
        "ok,status,error",
        "false,,batch_expired: This request could not be executed before the completion "
        "window expired.",
        "false,500,internal error",
        "true,200,",
    ]


def test_usage_errors(runner: CliRunner, data: Path, tmp_path: Path) -> None:
    batch = str(tmp_path / "b.jsonl")
    for args, message in [
        (["--batch", batch, "--batch-results", batch], "give one"),
        (["--batch", batch, "--dry-run"], "it is no dry run"),
        (["--batch", batch, "-o", str(tmp_path / "p.csv")], "give -o (and --evaluate) with"),
        (["--batch-results", batch, "--refresh"], "it takes no --refresh"),
    ]:
        result = dices(runner, data, *args)
        assert result.exit_code == 2, args
        assert message in result.stderr
    result = runner.invoke(
        app, ["judge", "--model", "baseline:random", "--data", str(data), "--batch", batch]
    )
    assert result.exit_code == 2
    assert "needs no server, and no batch" in result.stderr


def result_line(custom_id: Any, text: str = "Yes", **extra: Any) -> bytes:
    line = {"custom_id": custom_id, "response": {"status_code": 200, "body": completion(text)}}
    return json.dumps(line | extra).encode() + b"\n"


def test_a_hostile_results_file_gives_problem_records_in_bounded_memory(
    runner: CliRunner, data: Path, tmp_path: Path
) -> None:
    batch, output = tmp_path / "b.jsonl", tmp_path / "out.jsonl"
    assert dices(runner, data, "--batch", str(batch), "--limit", "2").exit_code == 0
    first, second = (json.loads(line)["custom_id"] for line in batch.read_text().splitlines())
    hostile = [
        b"[" * 100_000 + b"\n",  # deep
        b'{"custom_id": ' + b"[" * 10 + b"]" * 10 + b"}\n",  # not too deep, a list
        b"7\n",
        b'{"custom_id": 7}\n',
        b"\xff\xfe not utf-8\n",
        b'{"custom_id": "a", "custom_id": "b"}\n',
        b'{"custom_id": "x", "response": NaN}\n',
        result_line("f" * 64),  # unknown custom_id
        result_line("\x1b[31mred"),
        b'{"custom_id": "' + b"x" * (8 << 20) + b'"}\n',  # huge line
        result_line(first, response={"status_code": "200"}),  # wrong type: no answer, no error
        result_line(first, response={"status_code": 200, "body": {"choices": 3}}),
        result_line(second),
        result_line(second, "No"),  # after its answer: the answer is kept
        b"",
    ]
    output.write_bytes(b"".join(hostile) + b'{"custom_id": "cut short')
    with memory_cap(1 << 30):
        result = dices(
            runner,
            data,
            "--limit",
            "2",
            "--batch-results",
            str(output),
            "-o",
            str(tmp_path / "p.csv"),
        )
    assert result.exit_code == 1, result.output  # `first` has no answer
    assert "1 answers and 1 failed requests cached, 0 already cached, 12 lines" in result.stderr
    problems = [line for line in result.stderr.splitlines() if line.startswith("  ")]
    reasons = [p.partition(": ")[2] for p in problems]
    assert reasons[:7] == [
        "it nests lists and objects deeper than 19 levels",
        "the line has no custom_id text",
        "the line is not a JSON object",
        "the line has no custom_id text",
        "it is not UTF-8 text (at its byte 1)",
        'the key "custom_id" appears twice in one object',
        "it holds NaN, which is not a finite number",
    ]
    assert "(ffffffff" in problems[7] and "another run's batch" in problems[7]
    assert "( [31mred)" in problems[8] and "\x1b" not in result.stderr
    assert problems[9].endswith("line 10: the line is longer than 1,114,112 bytes")
    assert "... and 2 more" in result.stderr
    records = [json.loads(line) for line in cache_bytes(data).splitlines()]
    assert [(r["ok"], r.get("answer"), r["error"]) for r in records] == [
        (False, None, "the answer is not Chat Completions JSON (the answer has no choices list)"),
        (True, "Yes", None),
    ]


def test_results_that_are_no_file_are_refused(runner: CliRunner, data: Path) -> None:
    result = dices(runner, data, "--limit", "2", "--batch-results", "/dev/zero")
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: cannot read the batch results /dev/zero: it is not a regular file (a device)\n"
    )


def test_an_answer_from_another_server_is_not_asked_again(
    runner: CliRunner, data: Path, tmp_path: Path
) -> None:
    """After the batch, an online run of the same command asks nothing."""
    batch, output = tmp_path / "b.jsonl", tmp_path / "out.jsonl"
    with running() as server:
        url = server.base_url
        assert dices(runner, data, "--limit", "5", "--batch", str(batch), url=url).exit_code == 0
        process(batch, output)
        result = dices(runner, data, "--limit", "5", "--batch-results", str(output), url=url)
        assert result.exit_code == 0, result.output
        result = dices(runner, data, "--limit", "5", url=url)
        assert result.exit_code == 0, result.output
        assert "0 asked, 5 from the cache" in result.stderr
        assert isinstance(server, JudgeServer) and server.bodies == []


# --- --submit, against a local fake of the Files and Batches endpoints -------------------


def submit(runner: CliRunner, data: Path, url: str, *args: str):  # type: ignore[no-untyped-def]
    return dices(runner, data, "--submit", "--batch-poll", "0", *args, url=url)


def data_files(data: Path) -> bytes:
    return b"".join(p.read_bytes() for p in (data / "judge").rglob("*") if p.is_file())


def test_submit_a_batch_that_expires_half_done_then_the_rest(
    runner: CliRunner, data: Path, tmp_path: Path
) -> None:
    predictions = tmp_path / "p.csv"
    with batch_server(KEY) as server:
        server.expire_after, server.fail = 20, frozenset({2})
        result = submit(runner, data, server.base_url, "--limit", "40", "-o", str(predictions))
        assert result.exit_code == 1
        assert "batch batch_0: expired" in result.stderr
        assert "19 answers and 21 failed requests cached" in result.stderr
        assert "Error: 21 of 40 calls have no answer in the cache" in result.stderr
        assert not (data / "judge" / "batches").exists() or not any(
            (data / "judge" / "batches").iterdir()
        )
        server.expire_after, server.fail = None, frozenset()
        result = submit(runner, data, server.base_url, "--limit", "40", "-o", str(predictions))
        assert result.exit_code == 0, result.output
        assert "batch batch_1: completed" in result.stderr
        assert "21 answers and 0 failed requests cached" in result.stderr
        assert "0 asked, 40 from the cache" in result.stderr
        assert len(rows(predictions)) == 40
        ids = server.seen.custom_ids
        assert len(ids) == 41 and len(set(ids)) == 40  # only the failed one asked again
        assert [r for r in server.requests if r.startswith("POST")] == [
            "POST /v1/files", "POST /v1/batches", "POST /v1/files", "POST /v1/batches"
        ]  # fmt: skip
    assert KEY not in data_files(data).decode()


def test_a_run_stopped_while_its_batch_runs_is_picked_up_by_the_next(
    runner: CliRunner, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dices_cli.judge import submit as submitting

    def interrupt(_seconds: float) -> None:
        raise KeyboardInterrupt

    with batch_server(KEY) as server:
        server.polls_before_end = 5
        monkeypatch.setattr(submitting.time, "sleep", interrupt)
        result = submit(runner, data, server.base_url, "--limit", "6")
        assert result.exit_code == 130
        assert "interrupted: the 1 batches go on at the endpoint" in result.stderr
        assert "run the same command again" in result.stderr
        (state,) = (data / "judge" / "batches").glob("*.json")
        assert json.loads(state.read_text())["batches"] == ["batch_0"]
        monkeypatch.undo()
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        result = submit(runner, data, server.base_url, "--limit", "6")
        assert result.exit_code == 0, result.output
        assert "picking up 1 batches an earlier run submitted" in result.stderr
        assert "6 answers and 0 failed requests cached" in result.stderr
        assert [r for r in server.requests if r.startswith("POST")] == [
            "POST /v1/files",
            "POST /v1/batches",
        ]
        assert not state.exists()
        assert len(server.seen.custom_ids) == 6


def test_a_refusing_batch_endpoint_is_an_error_with_its_message(
    runner: CliRunner, data: Path
) -> None:
    with batch_server("another-key") as server:
        result = submit(runner, data, server.base_url, "--limit", "2")
    assert result.exit_code == 1
    assert "POST /v1/files refused: HTTP 401: bad key" in result.stderr
    assert KEY not in result.stderr
