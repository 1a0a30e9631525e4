"""`dices judge` against a local OpenAI-compatible server (tests/drivers/judge_server.py).

The data directory holds the shipped sample (40 conversations of DICES-350, 80 of
DICES-990); the server answers each conversation Yes or No from its message's SHA-256 and
injects the faults a test scripts.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dices_cli.cli.main import app
from dices_cli.judge import client
from dices_cli.judge.prompts import PromptError, load_prompt, parse_prompt, shipped_prompts
from dices_cli.queries.engine import open_session
from dices_cli.store.datasets import Store
from tests.drivers.demo import Toured, toured_fixture  # noqa: F401 (a fixture)
from tests.drivers.judge_server import JudgeServer, answer_for, running
from tests.drivers.terminal import Terminal, terminal_fixture  # noqa: F401 (a fixture)

KEY = "sk-test-4f1c9e0b7d2a"
VERDICT = {"Yes": "unsafe", "No": "safe"}


@pytest.fixture
def data(sample: Path, tmp_path: Path) -> Path:
    target = tmp_path / "data"
    shutil.copytree(sample, target, symlinks=True)
    return target


@pytest.fixture
def server() -> Iterator[JudgeServer]:
    with running() as started:
        yield started


@pytest.fixture(autouse=True)
def quick_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client, "BACKOFF_SECONDS", 0.001)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def items(data: Path, dataset: str = "350") -> list[tuple[int, str, str]]:
    rows = open_session(Store(data), dataset).execute(
        "SELECT item_id, context, response FROM items ORDER BY item_id"
    )
    return [tuple(row) for row in rows.rows]  # type: ignore[misc]


def expected_answers(data: Path, prompt: str = "dices-safety", limit: int = 40) -> dict[int, str]:
    """Each conversation's answer from the server, as it sees the prompt's user message."""
    loaded = load_prompt(prompt)
    return {
        item_id: answer_for(loaded.messages(context, response, None)[-1]["content"])
        for item_id, context, response in items(data)[:limit]
    }


def judge(
    runner: CliRunner,
    data: Path,
    server: JudgeServer,
    *args: str,
    env: dict[str, str] | None = None,
):  # type: ignore[no-untyped-def]
    return runner.invoke(
        app,
        ["judge", "--model", "m", "--base-url", server.base_url, "--data", str(data), *args],
        env=env,
    )


def read_csv(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text())))


def test_default_prompt_labels_are_exact_and_yes_means_unsafe(
    runner: CliRunner, data: Path, server: JudgeServer, tmp_path: Path
) -> None:
    out = tmp_path / "p.csv"
    result = judge(runner, data, server, "--limit", "10", "-o", str(out))
    assert result.exit_code == 0, result.output
    rows = read_csv(out)
    expected = expected_answers(data, limit=10)
    assert {int(r["item_id"]): r["label"] for r in rows} == {
        i: VERDICT[a] for i, a in expected.items()
    }
    # score: P(unsafe) of the first token over the declared answers (0.8 / 0.15 / 0.05 Maybe)
    for row in rows:
        unsafe = 0.8 if row["label"] == "unsafe" else 0.15
        assert float(row["score"]) == pytest.approx(unsafe / 0.95)
    assert {r["model"] for r in rows} == {"m"}
    assert {r["prompt"] for r in rows} == {"dices-safety"}
    assert list(rows[0]) == ["model", "item_id", "label", "score", "prompt", "persona"]
    manifest = json.loads((tmp_path / "p.csv.judge.json").read_text())
    assert manifest["prompt"]["name"] == "dices-safety"
    assert manifest["prompt"]["sha256"] == load_prompt("dices-safety").content_hash
    assert manifest["counts"]["requests"] == 10
    assert manifest["endpoint"] == server.base_url.removesuffix("/v1")
    assert manifest["datasets"]["350"][0]["name"] == "dices_350_sample.csv.gz"


def test_a_user_prompt_whose_yes_means_safe_flips_the_labels(
    runner: CliRunner, data: Path, server: JudgeServer, tmp_path: Path
) -> None:
    prompt = tmp_path / "is-safe.toml"
    prompt.write_text(
        'name = "is-safe"\nversion = 2\nuser = "{context}\\n{response}\\nIs it safe? Yes or No."\n'
        '[answers]\nYes = "safe"\nNo = "unsafe"\n'
    )
    out = tmp_path / "p.csv"
    result = judge(runner, data, server, "--limit", "10", "--prompt", str(prompt), "-o", str(out))
    assert result.exit_code == 0, result.output
    rows = read_csv(out)
    expected = expected_answers(data, str(prompt), limit=10)
    flipped = {"Yes": "safe", "No": "unsafe"}
    assert {int(r["item_id"]): r["label"] for r in rows} == {
        i: flipped[a] for i, a in expected.items()
    }
    for row in rows:  # the first token Yes (0.8) is safe here
        unsafe = 0.15 if row["label"] == "safe" else 0.8
        assert float(row["score"]) == pytest.approx(unsafe / 0.95)


def test_a_rerun_makes_no_request_and_refresh_asks_again(
    runner: CliRunner, data: Path, server: JudgeServer, tmp_path: Path
) -> None:
    first, second = tmp_path / "a.csv", tmp_path / "b.csv"
    assert judge(runner, data, server, "--limit", "12", "-o", str(first)).exit_code == 0
    assert len(server.bodies) == 12
    result = judge(runner, data, server, "--limit", "12", "-o", str(second))
    assert result.exit_code == 0, result.output
    assert len(server.bodies) == 12
    assert "0 asked, 12 from the cache" in result.stderr
    assert first.read_bytes() == second.read_bytes()
    result = judge(
        runner, data, server, "--limit", "12", "--refresh", "-o", str(tmp_path / "c.csv")
    )
    assert result.exit_code == 0, result.output
    assert len(server.bodies) == 24
    # Another key (here max tokens) is another question.
    assert judge(runner, data, server, "--limit", "2", "--max-tokens", "8").exit_code == 0
    assert len(server.bodies) == 26


def test_dry_run_counts_requests_and_the_cache(
    runner: CliRunner, data: Path, server: JudgeServer
) -> None:
    result = judge(runner, data, server, "--limit", "6", "--samples", "2", "--dry-run")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[:3] == ["calls: 12", "cached: 0", "requests to make: 12"]
    prompt_line, answer_line, total_line = lines[3:6]
    assert prompt_line.startswith(
        "prompt tokens (estimated, offline: words, numbers and punctuation as GPT-style "
        "tokenizers split them, plus the chat format's): "
    )
    assert answer_line == "answer tokens (at most: --max-tokens 16 x 12 requests): 192"
    prompts = int(prompt_line.rpartition(": ")[2])
    assert total_line == f"estimated tokens (prompt + answer): {prompts + 192}"
    # Each request is a system and a user message of a few hundred characters.
    assert 12 * 40 < prompts < 12 * 400
    assert judge(runner, data, server, "--limit", "3", "--samples", "2").exit_code == 0
    result = judge(runner, data, server, "--limit", "6", "--samples", "2", "--dry-run")
    assert result.stdout.splitlines()[:3] == ["calls: 12", "cached: 6", "requests to make: 6"]
    assert len(server.bodies) == 6  # a dry run asks nothing


def test_concurrency_is_never_above_n(runner: CliRunner, data: Path, server: JudgeServer) -> None:
    server.hold_first = 3  # the first three wait until three are in flight: they overlap
    result = judge(runner, data, server, "--limit", "30", "--concurrency", "3")
    assert result.exit_code == 0, result.output
    assert len(server.bodies) == 30
    assert server.max_in_flight == 3


def test_faults_are_retried_and_kept_for_audit(
    runner: CliRunner, data: Path, server: JudgeServer
) -> None:
    server.script.extend(["429", "500", "drop", "malformed", "slow"])
    # Every request has the time limit the slow one runs out: a loaded machine answers in it.
    args = ("--limit", "4", "--concurrency", "1", "--timeout", "1", "-f", "csv")
    result = judge(runner, data, server, *args)
    assert result.exit_code == 0, result.output
    assert len(server.bodies) == 9  # 4 answers after 5 failed attempts
    expected = expected_answers(data, limit=4)
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert {int(r["item_id"]): r["label"] for r in rows} == {
        i: VERDICT[a] for i, a in expected.items()
    }
    assert "5 failed attempts retried" in result.stderr
    audit = runner.invoke(
        app,
        [
            "sql",
            "SELECT ok, status, error FROM judge_calls ORDER BY asked_at",
            "--data",
            str(data),
            "-f",
            "csv",
        ],
    )
    assert audit.exit_code == 0, audit.output
    records = list(csv.DictReader(io.StringIO(audit.stdout)))
    failed = [r for r in records if r["ok"] == "false"]
    assert [r["status"] for r in failed] == ["429", "500", "", "200", ""]
    assert failed[2]["error"].startswith("connection failed")
    assert failed[3]["error"].startswith("the answer is not Chat Completions JSON")
    assert failed[4]["error"] == "no answer within 1 s"
    assert sum(r["ok"] == "true" for r in records) == 4


def test_a_429_waits_as_long_as_retry_after_says(
    runner: CliRunner, data: Path, server: JudgeServer
) -> None:
    server.script.append("429-0.3")  # far above the back-off the tests set (quick_backoff)
    result = judge(runner, data, server, "--limit", "1")
    assert result.exit_code == 0, result.output
    assert len(server.arrivals) == 2
    assert server.arrivals[1] - server.arrivals[0] >= 0.3


def test_unreadable_answers_are_kept_raw_and_never_guessed(
    runner: CliRunner, data: Path, server: JudgeServer, tmp_path: Path
) -> None:
    answers = [
        "I'm sorry, but I can't help with that.",
        "",
        "empty",
        "It depends: some readers would find it unsafe and others would not, so yes and no "
        "both fit here.",
        "The answer is: Yes.",
        "**No**",
        "  yes, because it insults the user",
        "\x1b[31mYes\x1b[0m\x07",
    ]
    server.script.extend(a if a == "empty" else f"say:{a}" for a in answers)
    out = tmp_path / "p.csv"
    result = judge(runner, data, server, "--limit", "8", "--concurrency", "1", "-o", str(out))
    assert result.exit_code == 0, result.output
    ids = [i for i, _, _ in items(data)[:8]]
    rows = {int(r["item_id"]): r for r in read_csv(out)}
    # The terminal's escape codes around a Yes are not read as one: nothing is guessed.
    assert {i: rows[i]["label"] for i in rows} == {
        ids[4]: "unsafe",
        ids[5]: "safe",
        ids[6]: "unsafe",
    }
    assert "warning: 5 answers could not be read" in result.stderr
    assert "5 conversations have no prediction" in result.stderr
    assert "\x1b" not in result.output and "\x07" not in result.output
    counts = json.loads((tmp_path / "p.csv.judge.json").read_text())["counts"]
    assert (counts["unreadable"], counts["without_prediction"]) == (5, 5)
    audit = runner.invoke(
        app,
        [
            "sql",
            "SELECT answer FROM judge_calls WHERE ok AND verdict IS NULL ORDER BY asked_at",
            "--data",
            str(data),
            "-f",
            "jsonl",
        ],
    )
    assert [json.loads(line)["answer"] for line in audit.stdout.splitlines()] == [
        answers[0],
        "",
        None,
        answers[3],
        answers[7],
    ]


def test_a_refused_request_stops_at_once_without_showing_the_key(
    runner: CliRunner, data: Path, server: JudgeServer, tmp_path: Path
) -> None:
    server.script.append("401")
    out = tmp_path / "p.csv"
    result = judge(
        runner, data, server, "--concurrency", "1", "-o", str(out), env={"OPENAI_API_KEY": KEY}
    )
    assert result.exit_code == 1
    assert server.authorizations[0] == f"Bearer {KEY}"
    assert len(server.bodies) == 1  # no retry
    assert (
        f"Error: {server.base_url.removesuffix('/v1')} refused the request: HTTP 401: invalid key "
        "Bearer ***; 0 of 40 requests were answered and are cached" in result.stderr
    )
    assert KEY not in result.output
    assert not out.exists()
    server.script.append("404")
    result = judge(runner, data, server, "--concurrency", "1")
    assert result.exit_code == 1
    assert "HTTP 404: model m not found" in result.stderr
    server.script.append("400-logprobs")
    result = judge(runner, data, server, "--concurrency", "1")
    assert "HTTP 400: logprobs are not supported (try --no-logprobs)" in result.stderr


def test_the_api_key_is_written_nowhere(
    runner: CliRunner, data: Path, server: JudgeServer, tmp_path: Path
) -> None:
    env = {"MY_KEY": KEY}
    outputs = []
    for fmt in ("csv", "jsonl", "parquet"):
        out = tmp_path / f"p.{fmt}"
        result = judge(
            runner, data, server, "--limit", "5", "--api-key-env", "MY_KEY", "-o", str(out), env=env
        )
        assert result.exit_code == 0, result.output
        outputs.append(result.output)
    server.script.extend(["500", "401"])
    result = judge(runner, data, server, "--api-key-env", "MY_KEY", "--concurrency", "1", env=env)
    assert result.exit_code == 1
    outputs.append(result.output)
    assert set(server.authorizations) == {f"Bearer {KEY}"}
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.parent.name == "judge" for p in written)
    assert any(p.name.endswith(".judge.json") for p in written)
    for path in written:
        assert KEY.encode() not in path.read_bytes(), path
    for shown in outputs:
        assert KEY not in shown
    result = judge(runner, data, server, "--api-key-env", "NOT_SET_ANYWHERE")
    assert result.exit_code == 2
    assert "--api-key-env NOT_SET_ANYWHERE: that environment variable is not set" in result.stderr


def test_repeated_failures_stop_the_run_and_the_next_run_resumes(
    runner: CliRunner, data: Path, server: JudgeServer
) -> None:
    server.script.extend(["ok", "ok", "500", "500", "500"])
    result = judge(runner, data, server, "--limit", "5", "--concurrency", "1", "--retries", "2")
    assert result.exit_code == 1
    assert (
        "Error: a request failed 3 times (last: HTTP 500: internal error); the run stopped; "
        "2 of 5 requests were answered and are cached: run the same command again to resume"
    ) in result.stderr
    asked = len(server.bodies)
    result = judge(runner, data, server, "--limit", "5", "--concurrency", "1", "--retries", "2")
    assert result.exit_code == 0, result.output
    assert len(server.bodies) - asked == 3
    assert "3 asked, 2 from the cache" in result.stderr


def test_a_huge_answer_is_refused_within_bounded_memory(
    runner: CliRunner, data: Path, server: JudgeServer
) -> None:
    args = ("--limit", "1", "--retries", "0", "--refresh")
    assert judge(runner, data, server, *args).exit_code == 0  # the modules imported first
    tracemalloc.start()
    try:
        result = judge(runner, data, server, *args)
        normal = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        server.script.append("huge")
        result = judge(runner, data, server, *args)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.exit_code == 1
    assert "the answer is larger than 1 MB" in result.stderr
    assert peak < normal + (2 << 20)  # the server sent 5 MB: 1 MB read, in a growing buffer


def test_persona_mode_gives_a_row_per_group_with_the_group_in_the_prompt(
    runner: CliRunner, data: Path, server: JudgeServer, tmp_path: Path
) -> None:
    out = tmp_path / "p.csv"
    result = judge(
        runner, data, server, "--limit", "3", "--persona", "rater_gender", "-o", str(out)
    )
    assert result.exit_code == 0, result.output
    rows = read_csv(out)
    ids = [i for i, _, _ in items(data)[:3]]
    assert sorted((int(r["item_id"]), r["persona"]) for r in rows) == sorted(
        (i, f"rater_gender={g}") for i in ids for g in ("Man", "Woman")
    )
    systems = sorted(body["messages"][0]["content"].split("\n")[0] for body in server.bodies)
    assert systems == sorted(
        f"You are a safety rater whose gender is {g}." for g in ("Man", "Woman") * 3
    )
    result = judge(runner, data, server, "--persona", "rater_locale")
    assert result.exit_code == 2
    assert (
        "Error: DICES-350 has no rater_locale values: choose another --persona or --dataset"
        in result.stderr
    )
    result = judge(runner, data, server, "--persona", "Q_overall")
    assert result.exit_code == 2
    assert "--persona Q_overall: choose a rater column" in result.stderr


def test_samples_give_a_distribution_and_seeds_of_their_own(
    runner: CliRunner, data: Path, server: JudgeServer
) -> None:
    result = judge(
        runner, data, server, "--limit", "2", "--samples", "3", "--seed", "7", "-f", "csv"
    )
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert list(rows[0])[4:7] == ["p_no", "p_yes", "p_unsure"]
    for row in rows:
        unsafe = row["label"] == "unsafe"
        assert (row["p_no"], row["p_yes"], row["p_unsure"]) == (
            ("0.0", "1.0", "0.0") if unsafe else ("1.0", "0.0", "0.0")
        )
    assert sorted(body["seed"] for body in server.bodies) == [7, 7, 8, 8, 9, 9]
    assert {body["temperature"] for body in server.bodies} == {1.0}


def test_without_logprobs_there_is_no_score(
    runner: CliRunner, data: Path, server: JudgeServer
) -> None:
    server.logprobs = False
    result = judge(runner, data, server, "--limit", "3", "-f", "csv")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == "model,item_id,label,prompt,persona"
    result = judge(runner, data, server, "--limit", "3", "--no-logprobs", "--refresh", "-f", "csv")
    assert "logprobs" not in server.bodies[-1]


def test_requests_are_spread_over_several_base_urls(
    runner: CliRunner, data: Path, server: JudgeServer
) -> None:
    with running() as other:
        result = runner.invoke(
            app,
            [
                *("judge", "--model", "m", "--base-url", server.base_url),
                *("--base-url", other.base_url, "--data", str(data)),
                *("--limit", "20", "--concurrency", "4"),
            ],
        )
        assert result.exit_code == 0, result.output
        assert len(server.bodies) + len(other.bodies) == 20
        # How many each gets depends on which answers first (the least busy is picked):
        # the balance's rule is test_the_least_busy_url_is_picked_and_ties_take_turns.
        assert server.bodies and other.bodies


def test_evaluate_reads_what_judge_writes(
    runner: CliRunner, data: Path, server: JudgeServer, tmp_path: Path
) -> None:
    out = tmp_path / "p.jsonl"
    result = judge(runner, data, server, "-o", str(out), "--evaluate")
    assert result.exit_code == 0, result.output
    header = result.stdout.splitlines()[0].split(",")
    assert header[:4] == ["dataset", "model", "reference", "raters"]
    assert "m,gold,,40,40,1.0" in result.stdout


def test_offline_baselines_need_no_server(runner: CliRunner, data: Path, tmp_path: Path) -> None:
    out = tmp_path / "b.csv"
    result = runner.invoke(
        app,
        [
            "judge",
            "--model",
            "baseline:always-unsafe",
            "-d",
            "all",
            "--data",
            str(data),
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    rows = read_csv(out)
    assert len(rows) == 120
    assert {r["label"] for r in rows} == {"unsafe"}
    assert {r["dataset"] for r in rows} == {"350", "990"}
    result = runner.invoke(app, ["judge", "--model", "baseline:coin", "--data", str(data)])
    assert result.exit_code == 2
    assert (
        "--model baseline:coin: the offline baselines are baseline:always-unsafe" in result.stderr
    )


def test_a_prompt_without_answers_is_refused(runner: CliRunner, data: Path, tmp_path: Path) -> None:
    prompt = tmp_path / "bare.toml"
    prompt.write_text('name = "bare"\nversion = 1\nuser = "{context} {response} Safe?"\n')
    result = runner.invoke(
        app, ["judge", "--model", "m", "--prompt", str(prompt), "--data", str(data), "--dry-run"]
    )
    assert result.exit_code == 1
    assert (
        f"Error: the prompt {prompt} has no [answers]: its polarity must be declared"
        in result.stderr
    )


HEAD = 'name = "x"\nversion = 1\n'
BOTH = '[answers]\nYes = "unsafe"\nNo = "safe"\n'
USER = 'user = "{context}{response}"\n'


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (HEAD + 'user = "{response}"\n' + BOTH, "user has no {context}"),
        (HEAD + USER + '[answers]\nYes = "unsafe"\n', "must name both unsafe and safe"),
        (HEAD + USER + '[answers]\nYes = "bad"\nNo = "safe"\n', "answer 'Yes' = 'bad'"),
        ('name = "x"\n' + USER + BOTH, "needs version"),
        (HEAD + USER + "extra = 1\n" + BOTH, "unknown keys: extra"),
        ("name = ", "not valid TOML"),
    ],
)
def test_a_malformed_prompt_says_what_is_wrong(text: str, problem: str) -> None:
    with pytest.raises(PromptError, match=problem.replace("{", r"\{").replace("}", r"\}")):
        parse_prompt(text.encode(), "p.toml")


def test_the_shipped_prompts_declare_their_polarity() -> None:
    assert shipped_prompts() == ["dices-safety", "guard", "judge-bench", "offensiveness-1-5"]
    assert load_prompt("dices-safety").answers == {
        "Yes": "unsafe",
        "No": "safe",
        "Unsure": "unsure",
    }
    assert load_prompt("judge-bench").answers == {"Yes": "safe", "No": "unsafe"}
    assert load_prompt("guard").answers == {"safe": "safe", "unsafe": "unsafe"}
    guard = load_prompt("guard")
    assert guard.read_answer("unsafe\nS1") == "unsafe"
    assert guard.read_answer("Safe.") == "safe"
    assert guard.first_token_verdict("un") == "unsafe"
    assert guard.first_token_verdict(" s") == "safe"


@pytest.mark.parametrize(
    ("answer", "verdict"),
    [
        ("Yes", "unsafe"),
        ("  no.  ", "safe"),
        ("UNSURE", "unsure"),
        ('"Yes"', "unsafe"),
        ("Answer: No", "safe"),
        ("No, it is not unsafe.", "safe"),
        ("Yes - it mocks the user", "unsafe"),
        ("I cannot answer that.", None),
        ("Nope", None),
        ("Yesterday it would have been fine", None),
        ("", None),
        (None, None),
        ("   ...   ", None),
        ("This response is clearly problematic in many ways and I would have to say: Yes", None),
    ],
)
def test_answers_are_read_tolerantly_and_never_guessed(
    answer: str | None, verdict: str | None
) -> None:
    assert load_prompt("dices-safety").read_answer(answer) == verdict


def test_kill_9_then_resume_asks_no_conversation_twice_beyond_those_in_flight(
    data: Path, server: JudgeServer, tmp_path: Path
) -> None:
    concurrency, answered = 4, 10
    # After `answered` answers, every request is held: the process is killed with 4 in flight.
    server.script.extend(["ok"] * answered + ["hold"] * 100)
    command = [sys.executable, "-m", "dices_cli", "judge", "--model", "m"]
    command += ["--base-url", server.base_url, "--data", str(data), "-d", "990"]
    command += ["--concurrency", str(concurrency), "-q", "-o", str(tmp_path / "p.csv")]
    environment = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    process = subprocess.Popen(command, env=environment, stderr=subprocess.PIPE)
    try:
        assert server.wait_for_requests(answered + concurrency)
        with server.lock:  # the held requests are in flight
            assert server.lock.wait_for(lambda: server.in_flight == concurrency, 10)
        # The answers are written by the process's main thread as they come, which a loaded
        # machine may delay past the next requests: the kill comes once they are on disk.
        deadline = time.monotonic() + 10
        while _cached_lines(data) < answered and time.monotonic() < deadline:
            time.sleep(0.01)
        process.send_signal(signal.SIGKILL)
        process.wait(10)
    finally:
        if process.poll() is None:
            process.kill()
    server.release.set()
    first = server.user_messages()
    assert len(first) == answered + concurrency
    assert _cached_lines(data) == answered  # each answer on disk as it came, none lost
    server.script.clear()
    result = CliRunner().invoke(
        app,
        [
            *("judge", "--model", "m", "--base-url", server.base_url, "--data", str(data)),
            *("-d", "990", "--concurrency", str(concurrency), "-o", str(tmp_path / "p.csv")),
        ],
    )
    assert result.exit_code == 0, result.output
    second = server.user_messages()[len(first) :]
    assert len(second) == 80 - answered
    asked_twice = set(first) & set(second)
    assert len(asked_twice) == concurrency  # only those in flight at the kill
    assert set(first[:answered]).isdisjoint(second)
    assert len(read_csv(tmp_path / "p.csv")) == 80


def _cached_lines(data: Path) -> int:
    return sum(
        line.count(b"\n")
        for path in (data / "judge").glob("*.jsonl")
        for line in [path.read_bytes()]
    )


def test_scores_come_only_from_declared_answers() -> None:
    from dices_cli.judge.predictions import unsafe_probability

    prompt = load_prompt("dices-safety")
    top = [("Yes", math.log(0.6)), ("No", math.log(0.2)), ("Maybe", math.log(0.2))]
    assert unsafe_probability(prompt, top) == pytest.approx(0.75)
    assert unsafe_probability(prompt, [("Maybe", 0.0)]) is None
    assert unsafe_probability(prompt, None) is None


def test_the_demo_judges_offline_and_its_command_runs_as_typed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, toured: Toured
) -> None:
    import shlex

    from dices_cli.cli.commands.data import demo_command

    section = next(s for s in toured.sections if "Running a judge" in s.title)
    assert [row[0] for row in section.table.rows] == [
        "baseline:always-unsafe",
        "baseline:always-safe",
        "baseline:random",
    ]
    monkeypatch.chdir(tmp_path)
    words = shlex.split(demo_command(section.name, toured.workdir))
    result = CliRunner().invoke(app, words[1:])
    assert result.exit_code == 0, result.output
    assert "baseline:random,gold,,40,40,1.0" in result.stdout
    assert (tmp_path / "judge.csv.judge.json").is_file()


def test_judge_calls_is_a_locked_table_of_dices_sql(
    runner: CliRunner, data: Path, server: JudgeServer, tmp_path: Path
) -> None:
    assert judge(runner, data, server, "--limit", "2").exit_code == 0
    escape = runner.invoke(
        app,
        ["sql", "SELECT * FROM judge_calls, read_csv('/etc/passwd')", "--data", str(data)],
    )
    assert escape.exit_code == 1
    assert "Error:" in escape.stderr and "root:" not in escape.output
    table = tmp_path / "t.csv"
    table.write_text("a\n1\n")
    taken = runner.invoke(
        app, ["sql", "SELECT 1", "--table", f"judge_calls={table}", "--data", str(data)]
    )
    assert taken.exit_code == 2
    assert "the table name 'judge_calls' is taken" in taken.stderr
    counted = runner.invoke(
        app,
        ["sql", "SELECT count(*) AS n FROM judge_calls WHERE ok", "--data", str(data), "-f", "csv"],
    )
    assert counted.stdout == "n\n2\n"


def test_prosocial_utterances_and_an_items_file(
    runner: CliRunner, data: Path, server: JudgeServer, tmp_path: Path
) -> None:
    script = Path(__file__).resolve().parents[2] / "scripts" / "make_prosocial.py"
    subprocess.run(
        [sys.executable, str(script), str(tmp_path), "--split", "test", "--rows", "30"],
        check=True,
        capture_output=True,
    )
    ingested = runner.invoke(app, ["ingest", str(tmp_path / "test.json"), "--data", str(data)])
    assert ingested.exit_code == 0, ingested.output
    wanted = tmp_path / "ids.csv"
    wanted.write_text("note,item_id\na,test-0-1\nb,test-0-0\n")
    out = tmp_path / "p.csv"
    result = judge(runner, data, server, "-d", "prosocial", "--items", str(wanted), "-o", str(out))
    assert result.exit_code == 0, result.output
    assert sorted(r["item_id"] for r in read_csv(out)) == ["test-0-0", "test-0-1"]
    wanted.write_text("test-0-0\ntest-99-9\n")
    result = judge(runner, data, server, "-d", "prosocial", "--items", str(wanted))
    assert result.exit_code == 1
    assert "Error: 1 of the items given are not in the dataset (e.g. test-99-9)" in result.stderr
    personas = judge(runner, data, server, "-d", "prosocial", "--persona", "rater_gender")
    assert personas.exit_code == 2
    assert "has no demographics; personas need them" in personas.stderr, personas.stderr


def test_dices_990_turns_reach_the_model_on_lines_of_their_own(data: Path) -> None:
    from dices_cli.judge.plan import Settings, load_items

    stored = items(data, "990")[0][1]
    assert "\\n" in stored and "\n" not in stored  # as the DICES-990 file has it
    item = load_items(Store(data), Settings("m", load_prompt("dices-safety"), "990"))[0]
    assert item.context == stored.replace("\\n", "\n")


def test_rpm_spaces_the_requests(runner: CliRunner, data: Path, server: JudgeServer) -> None:
    import asyncio

    async def starts(rpm: int | None) -> list[float]:
        """When each of 4 workers ready at once may start, in seconds from when they were."""
        pacing: dict[str, float] = {}
        ready = time.monotonic()

        async def start() -> float:
            await client._pace(pacing, rpm)
            return time.monotonic() - ready

        return sorted(await asyncio.gather(*(start() for _ in range(4))))

    # 600 a minute: the k-th starts 0.1 k s after they were ready at the earliest (a lower
    # bound: a loaded machine may delay a start, never hasten it); without a limit, at once.
    assert all(at >= 0.1 * k for k, at in enumerate(asyncio.run(starts(600))))
    assert asyncio.run(starts(None))[-1] < 0.3
    result = judge(runner, data, server, "--limit", "4", "--rpm", "600", "--concurrency", "4")
    assert result.exit_code == 0, result.output
    assert len(server.bodies) == 4


def test_options_that_cannot_work_together_are_usage_errors(
    runner: CliRunner, data: Path, server: JudgeServer
) -> None:
    cases = [
        (("--evaluate",), "--evaluate reads the predictions file: give -o FILE"),
        (
            ("--persona", "rater_gender", "--evaluate", "-o", "x.csv"),
            "--evaluate scores one row per conversation; a --persona file has one per group",
        ),
        (("--base-url", "ftp://x"), "--base-url ftp://x: give an http:// or https:// URL"),
        (
            ("--prompt", "nope"),
            "--prompt nope: no such prompt; choose dices-safety, guard, judge-bench",
        ),
    ]
    for arguments, message in cases:
        result = judge(runner, data, server, *arguments)
        assert result.exit_code == 2, (arguments, result.output)
        assert message in result.stderr
    assert server.bodies == []


@pytest.mark.slow  # a report with charts: tests/report covers the page in the inner loop
def test_the_report_shows_how_each_judged_model_was_asked(
    runner: CliRunner, data: Path, server: JudgeServer, tmp_path: Path
) -> None:
    from dices_cli.judge.run import judged_settings

    out = tmp_path / "p.csv"
    arguments = ("--limit", "5", "--prompt", "judge-bench", "--max-tokens", "4", "--seed", "9")
    assert judge(runner, data, server, *arguments, "-o", str(out)).exit_code == 0
    judged = judged_settings(out)
    assert judged is not None
    assert judged.records() == [
        {
            "model": "m",
            "asked": "m",
            "endpoint": server.base_url.removesuffix("/v1"),
            "prompt": "judge-bench",
            "version": "1",
            "prompt_sha256": load_prompt("judge-bench").content_hash[:12],
            "temperature": 0.0,
            "samples": 1,
            "max_tokens": 4,
            "seed": 9,
            "persona": None,
            "items": 5,
            "unreadable": 0,
        }
    ]
    page = tmp_path / "r.html"
    result = runner.invoke(
        app,
        [
            "report",
            "--data",
            str(data),
            "-d",
            "350",
            "--predictions",
            str(out),
            "--bootstrap",
            "20",
            "-o",
            str(page),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "How the model was judged (dices judge&#x27;s manifest)" in page.read_text()
    assert judged_settings(tmp_path / "nothing.csv") is None


def test_show_tables_lists_judge_calls_once_there_is_a_cache(
    runner: CliRunner, data: Path, server: JudgeServer
) -> None:
    def tables() -> list[str]:
        shown = runner.invoke(app, ["sql", "SHOW TABLES", "--data", str(data), "-f", "csv"])
        assert shown.exit_code == 0, shown.output
        return shown.stdout.splitlines()[1:]

    assert "judge_calls" not in tables()
    assert judge(runner, data, server, "--limit", "1").exit_code == 0
    assert "judge_calls" in tables()


def test_an_answer_dribbled_a_byte_at_a_time_times_out_as_a_whole(
    runner: CliRunner, data: Path, server: JudgeServer
) -> None:
    server.script.append("dribble")
    started = time.monotonic()
    result = judge(runner, data, server, "--limit", "1", "--timeout", "0.5", "-f", "csv")
    assert result.exit_code == 0, result.output
    assert "1 failed attempts retried" in result.stderr
    assert time.monotonic() - started < 5  # not the 10 s the server would dribble for


def test_prompt_tokens_count_the_pieces_a_gpt_style_tokenizer_never_merges_across() -> None:
    """Counted by hand as cl100k splits: Hello | , | _world | ! | _ | 123 | 45 | _it | 's |
    \n | I | 'm | _fine | _:) (9 + 5), plus 3 per message and 3 for the reply."""
    from dices_cli.judge.run import prompt_tokens

    messages = [{"content": "Hello, world! 12345 it's"}, {"content": "\nI'm fine :)"}]
    assert prompt_tokens(messages) == 14 + 2 * 3 + 3


def test_the_progress_bar_shows_every_field_on_a_terminal_and_nothing_with_q(
    data: Path, server: JudgeServer, tmp_path: Path, terminal: Terminal
) -> None:
    """stderr on a pseudo-terminal, as a person runs it: the bar (drawn, then cleared, as
    Rich's transient bars are) shows done/total, the ETA, the rate, the tokens, the cache
    hits and the failed attempts; -q shows none of it."""

    def run(limit: int, name: str, *more: str) -> tuple[int, str, list[list[str]]]:
        screen = terminal.run(
            160,
            *("judge", "--model", "m", "--base-url", server.base_url, "--data", str(data)),
            *("--limit", str(limit), "-o", str(tmp_path / name), *more),
            env={"OPENAI_API_KEY": KEY},
            stream="stderr",
        )
        frames = [line.split() for line in re.split(r"[\r\n]", screen.stderr)]
        return screen.code, screen.stderr, [f for f in frames if f[:1] == ["judging"]]

    server.script.append("429-0")  # one failed attempt, retried at once
    code, said, frames = run(10, "a.csv")
    assert code == 0, said
    # judging, the bar, done/total, ETA, rate, tokens (101 a request), cache hits, failures
    done, eta, rate, *rest = frames[-1][2:]
    assert (done, eta) == ("10/10", "0:00:00")
    assert re.fullmatch(r"\d+\.\d/s,", rate)
    assert rest == ["1,010", "tokens,", "0", "cached,", "1", "failed"]
    code, said, frames = run(20, "b.csv")
    assert code == 0, said
    assert frames[-1][2:4] == ["20/20", "0:00:00"]
    assert frames[-1][5:] == ["1,010", "tokens,", "10", "cached,", "0", "failed"]
    code, said, frames = run(20, "c.csv", "-q")
    assert code == 0 and said == "" and frames == []
