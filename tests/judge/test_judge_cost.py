"""The cost of a judge run: before it (`--dry-run` with `--price-in`/`--price-out` or a
prompt's `[price]`), and after it (the manifest's tokens as the server reported them, and
their cost)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dices_cli.cli.main import app
from dices_cli.judge.prompts import PromptError, parse_prompt
from dices_cli.judge.run import cost
from tests.drivers.judge_server import running

PROMPT = (
    'name = "p"\nversion = 1\nuser = "{context}\\n{response}\\nUnsafe? Yes or No."\n'
    '[answers]\nYes = "unsafe"\nNo = "safe"\n'
)


@pytest.fixture
def data(sample: Path, tmp_path: Path) -> Path:
    target = tmp_path / "data"
    shutil.copytree(sample, target, symlinks=True)
    return target


def dry_run(runner: CliRunner, data: Path, *args: str) -> list[str]:
    result = runner.invoke(
        app, ["judge", "--model", "m", "--data", str(data), "--dry-run", "--limit", "5", *args]
    )
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


def test_cost_is_tokens_times_price_and_a_batch_half_of_it() -> None:
    assert cost((2.5, 10.0), 1_000_000, 100_000) == {
        "price_in": 2.5,
        "price_out": 10.0,
        "online": 3.5,
        "batch": 1.75,
    }
    assert cost(None, 5, 5) is None


def test_a_dry_run_gives_the_cost_online_and_as_a_batch(runner: CliRunner, data: Path) -> None:
    lines = dry_run(runner, data, "--price-in", "0.15", "--price-out", "0.6")
    prompts = int(lines[3].rpartition(": ")[2])
    assert lines[4] == "answer tokens (at most: --max-tokens 16 x 5 requests): 80"
    online = (prompts * 0.15 + 80 * 0.6) / 1e6
    assert lines[6] == (
        "cost at $0.15 in / $0.6 out per million tokens (at most: every answer --max-tokens "
        f"long): online ${online:,.4f}, batch ${online / 2:,.4f}"
    )
    assert len(dry_run(runner, data)) == 6  # no price: no cost line


def test_a_prompt_price_is_used_and_an_option_wins(
    runner: CliRunner, data: Path, tmp_path: Path
) -> None:
    prompt = tmp_path / "p.toml"
    prompt.write_text(PROMPT + "[price]\ninput = 1000\noutput = 0\n")
    lines = dry_run(runner, data, "--prompt", str(prompt))
    prompts = int(lines[3].rpartition(": ")[2])
    assert lines[6].startswith("cost at $1000 in / $0 out per million tokens")
    assert lines[6].endswith(f"online ${prompts / 1000:,.4f}, batch ${prompts / 2000:,.4f}")
    lines = dry_run(runner, data, "--prompt", str(prompt), "--price-out", "1000")
    assert lines[6].startswith("cost at $1000 in / $1000 out per million tokens")


def test_one_price_alone_is_a_usage_error(runner: CliRunner, data: Path) -> None:
    result = runner.invoke(
        app, ["judge", "--model", "m", "--data", str(data), "--dry-run", "--price-in", "1"]
    )
    assert result.exit_code == 2
    assert "give both --price-in and --price-out" in result.stderr


@pytest.mark.parametrize(
    "table",
    ["[price]\ninput = 1\n", "[price]\ninput = -1\noutput = 1\n", 'price = "cheap"\n',
     "[price]\ninput = 1\noutput = inf\n", "[price]\ninput = 1\noutput = 1\ncurrency = 1\n"],
)  # fmt: skip
def test_a_price_table_that_is_not_one_is_refused(table: str) -> None:
    text = (
        PROMPT.replace("[answers]", table + "[answers]") if "price =" in table else PROMPT + table
    )
    with pytest.raises(PromptError):
        parse_prompt(text.encode(), "p.toml")


def test_a_price_is_not_part_of_the_question() -> None:
    plain = parse_prompt(PROMPT.encode(), "p.toml")
    priced = parse_prompt((PROMPT + "[price]\ninput = 1\noutput = 2\n").encode(), "p.toml")
    assert priced.price == (1.0, 2.0)
    assert plain.content_hash == priced.content_hash


def test_the_manifest_holds_the_tokens_the_server_reported_and_their_cost(
    runner: CliRunner, data: Path, tmp_path: Path
) -> None:
    out = tmp_path / "p.csv"
    with running() as server:  # it reports 100 prompt tokens and 1 answer token an answer
        url = server.base_url
        result = runner.invoke(
            app,
            ["judge", "--model", "m", "--base-url", server.base_url, "--data", str(data),
             "--limit", "10", "-o", str(out), "--price-in", "3", "--price-out", "15"],
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "p.csv.judge.json").read_text())
    tokens = manifest["tokens"]
    assert (tokens["prompt"], tokens["completion"], tokens["answers_with_prompt_tokens"]) == (
        1000,
        10,
        10,
    )
    # The offline estimate of the same requests, for the check: a dry run's of them all.
    planned = runner.invoke(
        app, ["judge", "--model", "m", "--base-url", url, "--data", str(data),
              "--limit", "10", "--dry-run", "--refresh"],
    )  # fmt: skip
    assert planned.stdout.splitlines()[1:3] == ["cached: 0", "requests to make: 10"]
    assert tokens["estimated_prompt"] == int(planned.stdout.splitlines()[3].rpartition(": ")[2])
    assert manifest["cost"] == {
        "price_in": 3.0,
        "price_out": 15.0,
        "online": round((1000 * 3 + 10 * 15) / 1e6, 6),
        "batch": round((1000 * 3 + 10 * 15) / 2e6, 6),
    }
