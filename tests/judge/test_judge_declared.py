"""`dices judge` on a declared dataset: a scale prompt over a toy ordinal dataset's items
(tests/drivers/ordinal.py, with a text field) against a local server, its predictions scored
by `dices evaluate -d NAME`, and the reading of a scale answer.

The server rates item N (its text says "Comment number N") `RATED(N)`, in the forms a model
writes a rating in; item `UNREAD` gets an answer with two ratings, which is never read.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from dices_cli.cli.main import app
from dices_cli.families import FAMILIES
from dices_cli.judge import client
from dices_cli.judge.answers import read_value
from dices_cli.judge.prompts import load_prompt, parse_prompt
from tests.drivers.judge_server import JudgeServer, running
from tests.drivers.ordinal import item_text, ordinal_ratings, write_dataset

NAME = "ordinal_judged"
ITEMS = 10
UNREAD = 7
FORMS = ("{v}", "Rating: {v}/5", "I would rate it {v}.", "**{v}**", "{v} out of 5")
PROMPT = """name = "toy-1-5"
version = 1
label = "score"
system = "You rate comments."
user = "How offensive is this comment, from 1 to 5?\\n\\n{text}\\n\\nAnswer with one number."

[answers]
"1" = 1
"2" = 2
"3" = 3
"4" = 4
"5" = 5
"""
SCALE = {str(v): v for v in range(1, 6)}


def rated(item: int) -> int:
    return item % 5 + 1


def answer(user_message: str) -> str:
    found = re.search(r"Comment number (\d+)", user_message)
    assert found is not None, user_message
    item = int(found[1])
    if item == UNREAD:
        return "2 or 3"
    return FORMS[item % len(FORMS)].format(v=rated(item))


@pytest.fixture(autouse=True)
def _registry_as_it_was(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(client, "BACKOFF_SECONDS", 0.001)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    before = set(FAMILIES)
    yield
    for name in set(FAMILIES) - before:
        FAMILIES.pop(name)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    toy = ordinal_ratings((4, 4), items=ITEMS, per_rater=6, seed=5)
    declaration = write_dataset(toy, tmp_path, NAME, text=True)
    result = CliRunner().invoke(
        app,
        ["ingest", str(tmp_path / f"{NAME}.csv"), "--declaration", str(declaration),
         "--data", str(tmp_path / "data")],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    FAMILIES.pop(NAME)  # the data directory declares it: each command learns it from there
    (tmp_path / "toy.toml").write_text(PROMPT, encoding="utf-8")
    return tmp_path


@pytest.fixture
def server() -> Iterator[JudgeServer]:
    with running() as started:
        started.answer = answer
        yield started


def judge(folder: Path, server: JudgeServer, *args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(
        app,
        ["judge", "-d", NAME, "--model", "m", "--base-url", server.base_url,
         "--data", str(folder / "data"), *args],
    )  # fmt: skip


def rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_an_ordinal_judge_is_run_cached_and_evaluated_end_to_end(
    folder: Path, server: JudgeServer
) -> None:
    out = folder / "predictions.csv"
    result = judge(folder, server, "--prompt", str(folder / "toy.toml"), "-o", str(out))
    assert result.exit_code == 0, result.output
    assert "judged 10 conversations: 10 calls, 10 asked, 0 from the cache" in result.stderr
    assert "warning: 1 answers could not be read" in result.stderr
    # One request per item, its text where the prompt says {text}.
    sent = sorted(server.user_messages())
    assert len(sent) == ITEMS
    assert sent == sorted(
        f"How offensive is this comment, from 1 to 5?\n\n{item_text(i)}\n\nAnswer with one number."
        for i in range(ITEMS)
    )
    predicted = rows(out.read_text(encoding="utf-8"))
    assert [(r["model"], r["item_id"], r["label"], r["prompt"]) for r in predicted] == [
        ("m", f"i{i:03d}", str(rated(i)), "toy-1-5") for i in range(ITEMS) if i != UNREAD
    ]
    # The same command again asks nothing: the cache answers it.
    again = judge(folder, server, "--prompt", str(folder / "toy.toml"), "-o", str(out), "--force")
    assert again.exit_code == 0, again.output
    assert "10 calls, 0 asked, 10 from the cache" in again.stderr
    assert len(server.user_messages()) == ITEMS
    assert out.read_text(encoding="utf-8").count("\n") == ITEMS  # a header and 9 rows

    scored = CliRunner().invoke(
        app, ["evaluate", str(out), "-d", NAME, "--data", str(folder / "data"), "-f", "csv"]
    )
    assert scored.exit_code == 0, scored.output
    [hard] = rows(scored.stdout)
    assert hard["prediction"] == "hard" and hard["model"] == "m"
    # LeWiDi's Manhattan distance of a hard label: sum |crowd share - one-hot| per item,
    # averaged over the items predicted (computed here from the CSV the dataset came from).
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    with open(folder / f"{NAME}.csv", encoding="utf-8") as handle:
        for rating in csv.DictReader(handle):
            counts[rating["item_id"]][rating["score"]] += 1
    distances = []
    for row in predicted:
        crowd = counts[row["item_id"]]
        total = sum(crowd.values())
        distances.append(
            sum(abs(crowd[v] / total - (v == row["label"])) for v in map(str, range(1, 6)))
        )
    assert float(hard["manhattan"]) == pytest.approx(sum(distances) / len(distances), abs=1e-9)
    # --evaluate scores the label the prompt rated, from the cache: the same row.
    both = judge(
        folder, server, "--prompt", str(folder / "toy.toml"), "-o", str(out), "--force",
        "--evaluate", "-f", "csv",
    )  # fmt: skip
    assert both.exit_code == 0, both.output
    [again_hard] = rows(both.stdout)
    # evaluate's sums may be taken in another order from run to run: the last digit differs
    for column in ("manhattan", "wasserstein"):
        assert float(again_hard.pop(column)) == pytest.approx(float(hard[column]), abs=1e-12)
    assert again_hard == {k: v for k, v in hard.items() if k not in ("manhattan", "wasserstein")}
    assert len(server.user_messages()) == ITEMS


def test_a_persona_names_any_rater_attribute(folder: Path, server: JudgeServer) -> None:
    result = judge(folder, server, "--prompt", str(folder / "toy.toml"), "--persona", "grp")
    assert result.exit_code == 0, result.output
    predicted = rows(result.stdout)
    assert Counter(r["persona"] for r in predicted) == {"grp=g0": 9, "grp=g1": 9}
    systems = {body["messages"][0]["content"] for body in server.bodies}
    assert systems == {
        "You are a rater whose grp is g0.\n\nYou rate comments.",
        "You are a rater whose grp is g1.\n\nYou rate comments.",
    }


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            ('"5" = 5', '"6" = 6'),
            "the answer '6' = 6 is not a value of score (ordinal: 1, 2, 3, 4, 5)",
        ),
        (('label = "score"', 'label = "toxicity"'), "label = 'toxicity' is not a label of"),
        (("{text}", "{comment}"),
         "{comment} is not a text field of Ordinal toy; its text fields are text"),
    ],
)  # fmt: skip
def test_a_prompt_the_declaration_does_not_fit_is_a_usage_error(
    folder: Path, server: JudgeServer, change: tuple[str, str], message: str
) -> None:
    (folder / "bad.toml").write_text(PROMPT.replace(*change), encoding="utf-8")
    result = judge(folder, server, "--prompt", str(folder / "bad.toml"))
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"Error: --prompt {folder / 'bad.toml'}: ")
    assert message in result.stderr
    assert server.bodies == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "Error: --prompt dices-safety judges conversations ({context}, {response}); "
             "Ordinal toy is judged with a prompt that declares label = one of score, colour"),
        (("--persona", "age"), "Error: --persona age: not a rater attribute of the dataset; "
                               "choose grp, half"),
        (("--model", "baseline:random"), "Error: --model baseline:random: the offline "
                                         "baselines answer unsafe or safe"),
    ],
)  # fmt: skip
def test_what_a_declared_dataset_cannot_take_is_refused(
    folder: Path, server: JudgeServer, args: tuple[str, ...], message: str
) -> None:
    toy = [] if not args or args[0] == "--model" else ["--prompt", str(folder / "toy.toml")]
    result = judge(folder, server, *toy, *args)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(message), result.stderr
    assert server.bodies == []


def test_a_scale_prompt_on_dices_and_an_unknown_dataset_are_refused(
    folder: Path, server: JudgeServer
) -> None:
    result = judge(folder, server, "--prompt", str(folder / "toy.toml"), "-d", "350")
    assert result.exit_code == 2, result.output
    assert "rates the label 'score' of a declared dataset; 350 is judged with a prompt of " \
        "{context} and {response}" in result.stderr  # fmt: skip
    result = judge(folder, server, "-d", "nothing")
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("Error: --dataset nothing: choose 350, 990, all, prosocial")


def test_the_shipped_offensiveness_prompt_rates_popquorn_text() -> None:
    prompt = load_prompt("offensiveness-1-5")
    assert prompt.label == "offensiveness" and prompt.fields == ("text",)
    assert prompt.answers == SCALE | {}
    assert prompt.read_answer("4") == "4"
    messages = prompt.item_messages({"text": "you {text} fool"}, None)
    assert "you {text} fool" in messages[-1]["content"]


def test_a_dices_prompt_keeps_its_hash_and_a_label_changes_a_scale_prompts() -> None:
    dices = load_prompt("dices-safety")
    assert dices.label is None and dices.fields == ()
    content = {k: getattr(dices, k) for k in ("name", "version", "system", "user", "answers")}
    encoded = json.dumps(content, sort_keys=True, ensure_ascii=False).encode()
    assert dices.content_hash == hashlib.sha256(encoded).hexdigest()
    scale = parse_prompt(PROMPT.encode(), "toy")
    other = parse_prompt(PROMPT.replace('"score"', '"colour"').encode(), "toy")
    assert scale.content_hash != other.content_hash


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (PROMPT.replace("{text}", "the comment"), "user has no {field}"),
        (PROMPT.replace('"1" = 1', '"1" = true'), "answer '1' = True; each answer is a word"),
        (PROMPT.replace('"1" = 1', '"1" = 1\n"01" = 2'), None),
        (PROMPT.replace('"2" = 2', '"1." = 2'), "are one answer"),
        (PROMPT.replace('label = "score"', "label = 3"), 'needs label = "..."'),
    ],
)
def test_a_malformed_scale_prompt_says_what_is_wrong(text: str, problem: str | None) -> None:
    from dices_cli.judge.prompts import PromptError

    if problem is None:
        assert parse_prompt(text.encode(), "p").answers["01"] == 2
        return
    with pytest.raises(PromptError, match=re.escape(problem)):
        parse_prompt(text.encode(), "p")


@pytest.mark.parametrize(
    ("reply", "value"),
    [
        ("3", "3"),
        ("3.", "3"),
        ("Rating: 3/5", "3"),
        ("3 / 5", "3"),
        ("I would rate it 3.", "3"),
        ("**3**", "3"),
        ("3 out of 5", "3"),
        ("3. It is mildly rude; 3.", "3"),
        ("3 or 4", None),
        ("3.5", None),
        ("not 3", None),
        ("Probably 3", None),
        ("I cannot rate this.", None),
        ("13", None),
        ("", None),
        (None, None),
    ],
)
def test_a_scale_answer_is_read_as_the_docs_table_says(
    reply: str | None, value: str | None
) -> None:
    assert read_value(SCALE, reply) == value


FILLER = st.text(alphabet="abcdefghij ,.:!", max_size=30).filter(
    lambda text: not re.search(r"\b(not?|may|might|could|maybe)\b", text)
)


@given(st.integers(1, 5), st.sampled_from(FORMS), FILLER, FILLER)
def test_a_reply_with_one_value_is_that_value(v: int, form: str, before: str, after: str) -> None:
    reply = f"{before}\n{form.format(v=v)}\n{after}"
    assert read_value(SCALE, reply) == str(v)


@given(st.integers(1, 5), st.integers(1, 5), st.sampled_from(FORMS), FILLER)
def test_a_reply_with_two_values_is_never_read(a: int, b: int, form: str, between: str) -> None:
    reply = f"{form.format(v=a)}\n{between}\n{form.format(v=b)}"
    assert read_value(SCALE, reply) == (str(a) if a == b else None)


def test_the_docs_table_of_scale_answers_is_what_the_reader_does() -> None:
    docs = (Path(__file__).parents[2] / "docs" / "judge.md").read_text(encoding="utf-8")
    table = docs.split('| answer (`"1" = 1` ... `"5" = 5`) | read |')[1].split("\n\n")[0]
    checked = 0
    for line in table.strip().splitlines()[1:]:
        forms, read = line.strip("|").split(" | ")
        value = None if read.startswith("not read") else read.split()[0]
        for form in re.findall(r"`([^`]+)`", forms):
            assert read_value(SCALE, form) == value, form
            checked += 1
    assert checked == 14


def test_samples_give_the_scale_distribution_that_evaluate_scores_as_soft_labels(
    folder: Path, server: JudgeServer
) -> None:
    toy = ("--prompt", str(folder / "toy.toml"), "--samples", "2")
    dry = judge(folder, server, *toy, "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert dry.stdout.startswith("calls: 20\n") and server.bodies == []
    out = folder / "soft.csv"
    result = judge(folder, server, "--prompt", str(folder / "toy.toml"), "--samples", "2",
                   "-o", str(out))  # fmt: skip
    assert result.exit_code == 0, result.output
    assert len(server.bodies) == 2 * ITEMS
    predicted = rows(out.read_text(encoding="utf-8"))
    shares = [f"p_{v}" for v in range(1, 6)]
    assert list(predicted[0]) == ["model", "item_id", "label", *shares, "prompt", "persona"]
    for row in predicted:
        item = int(row["item_id"][1:])
        assert [float(row[s]) for s in shares] == [float(v == rated(item)) for v in range(1, 6)]
    scored = CliRunner().invoke(
        app, ["evaluate", str(out), "-d", NAME, "--data", str(folder / "data"), "-f", "csv"]
    )
    assert scored.exit_code == 0, scored.output
    # a file with both a label and p_ columns is scored by its distribution
    assert [r["prediction"] for r in rows(scored.stdout)] == ["soft"]


def test_a_batch_of_a_declared_dataset_holds_each_items_text(
    folder: Path, server: JudgeServer
) -> None:
    batch = folder / "judge.jsonl"
    result = judge(folder, server, "--prompt", str(folder / "toy.toml"), "--batch", str(batch))
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in batch.read_text(encoding="utf-8").splitlines()]
    users = sorted(line["body"]["messages"][-1]["content"] for line in lines)
    assert [re.findall(r"Comment number \d+", u) for u in users] == sorted(
        [f"Comment number {i}"] for i in range(ITEMS)
    )
    assert server.bodies == []


def test_the_python_api_judges_a_declared_dataset_as_the_command_does(
    folder: Path, server: JudgeServer
) -> None:
    import dices_cli

    with pytest.warns(dices_cli.DicesNote, match="1 answers could not be read"):
        frame = dices_cli.open(folder / "data").judge(
            "m", NAME, prompt=str(folder / "toy.toml"), base_url=server.base_url
        )
    assert frame.columns == ["model", "item_id", "label", "prompt", "persona"]
    assert frame.select("item_id", "label").rows() == [
        (f"i{i:03d}", str(rated(i))) for i in range(ITEMS) if i != UNREAD
    ]
    (folder / "bad.toml").write_text(PROMPT.replace('"5" = 5', '"6" = 6'), encoding="utf-8")
    with pytest.raises(dices_cli.UsageError, match="the answer '6' = 6 is not a value of score"):
        dices_cli.open(folder / "data").judge(
            "m", NAME, prompt=str(folder / "bad.toml"), base_url=server.base_url
        )
    assert len(server.bodies) == ITEMS


def test_a_nominal_prompt_is_scored_on_the_label_it_rates(
    folder: Path, server: JudgeServer
) -> None:
    colours = ("red", "green", "blue")
    nominal = PROMPT.replace('label = "score"', 'label = "colour"').split("[answers]")[0]
    nominal += '[answers]\nred = "red"\ngreen = "green"\nblue = "blue"\n'
    (folder / "colour.toml").write_text(nominal, encoding="utf-8")

    def colour(user_message: str) -> str:
        item = int(re.findall(r"Comment number (\d+)", user_message)[0])
        return f"It reads as {colours[item % 3].upper()}."

    server.answer = colour
    out = folder / "colours.csv"
    result = judge(
        folder, server, "--prompt", str(folder / "colour.toml"), "-o", str(out), "--evaluate",
        "-f", "csv",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert [r["label"] for r in rows(out.read_text(encoding="utf-8"))] == [
        colours[i % 3] for i in range(ITEMS)
    ]
    [hard] = rows(result.stdout)
    assert (hard["label"], hard["prediction"], hard["items"]) == ("colour", "hard", "10")
