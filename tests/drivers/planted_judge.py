"""A local judge server (tests/drivers/judge_server.py's) whose answers are planted, for the
judge-as-rater and persona-null figures (docs/evaluate.md):

- model `follows-group`: with a persona ("You are a safety rater whose race is White."),
  the plurality answer of that group's raters on the conversation (Yes only when Yes has
  more answers than No and Unsure each); without one, the plurality of one fixed group
  (`plain_group`), a known truth for `--as-rater`;
- model `random`: Yes or No from the SHA-256 of the whole request (persona included), so
  its answers do not depend on the persona in distribution.

The conversation is found by the exact user message the prompt renders for it.
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from dices_cli.cli.main import app
from dices_cli.judge.prompts import load_prompt
from dices_cli.queries.engine import open_session
from dices_cli.store.datasets import Store
from tests.drivers.judge_server import JudgeServer, _Handler, running

PERSONA = re.compile(r"whose (.+?) is (.+?)\.")


class Planted:
    """The planted answers of one dataset's conversations, by rater group of `column`."""

    def __init__(self, data: Path, dataset: str, column: str, plain_group: str) -> None:
        session = open_session(Store(data), dataset)
        prompt = load_prompt("dices-safety")
        self.item_of = {
            prompt.messages(context, response, None)[-1]["content"]: item
            for item, context, response in session.execute(
                "SELECT item_id, context, response FROM items"
            ).rows
        }
        rows = session.execute(
            f"SELECT item_id, {column}::VARCHAR, count_if(Q_overall = 'Yes'), "
            "count_if(Q_overall = 'No'), count_if(Q_overall = 'Unsure') "
            "FROM ratings_wide GROUP BY ALL"
        ).rows
        self.plurality = {
            (item, group): yes > max(no, unsure) for item, group, yes, no, unsure in rows
        }
        self.plain_group = plain_group

    def answer(self, body: dict[str, Any]) -> str:
        messages = body["messages"]
        item = self.item_of[messages[-1]["content"]]
        if body["model"] == "random":
            digest = hashlib.sha256(repr(messages).encode()).digest()
            return "Yes" if digest[0] % 2 else "No"
        persona = (
            PERSONA.search(messages[0]["content"]) if messages[0]["role"] == "system" else None
        )
        group = persona.group(2) if persona else self.plain_group
        return "Yes" if self.plurality[item, group] else "No"


class _PlantedHandler(_Handler):
    def _answer(self, body: dict[str, Any], fault: str) -> None:
        planted: Planted = self.server.planted  # type: ignore[attr-defined]
        self._send(200, self._completion(planted.answer(body), logprobs=False))


@contextmanager
def planted_server(planted: Planted) -> Iterator[JudgeServer]:
    """A JudgeServer on 127.0.0.1 that answers as `planted` says."""
    with running() as server:
        server.RequestHandlerClass = _PlantedHandler
        server.planted = planted  # type: ignore[attr-defined]
        yield server


MODELS = ("follows-group", "random")


def judge_planted(data: Path, server: JudgeServer, folder: Path, column: str) -> dict[str, Path]:
    """`dices judge` of each planted model on DICES-350, with personas of `column` and without
    (FILE and FILE-personas), and both no-persona files as one (judges): their paths."""
    runner = CliRunner()
    files = {}
    for model in MODELS:
        for name, persona in ((model, []), (f"{model}-personas", ["--persona", column])):
            out = folder / f"{name}.csv"
            result = runner.invoke(
                app,
                [
                    "judge",
                    "--model",
                    model,
                    "--base-url",
                    server.base_url,
                    "--data",
                    str(data),
                    "-d",
                    "350",
                    "--no-logprobs",
                    "--concurrency",
                    "16",
                    "-o",
                    str(out),
                    *persona,
                ],
            )
            assert result.exit_code == 0, result.output
            files[name] = out
    header, *first = files[MODELS[0]].read_text().splitlines()
    second = files[MODELS[1]].read_text().splitlines()
    assert second[0] == header
    files["judges"] = folder / "judges.csv"
    files["judges"].write_text("\n".join([header, *first, *second[1:]]) + "\n")
    return files


def evaluated(data: Path, *args: str | Path) -> list[dict[str, str]]:
    """`dices evaluate ARGS` on DICES-350 of `data`, as CSV records."""
    result = CliRunner().invoke(
        app, ["evaluate", *map(str, args), "--data", str(data), "-d", "350", "-f", "csv"]
    )
    assert result.exit_code == 0, result.output
    return list(csv.DictReader(io.StringIO(result.stdout)))
