"""`dices describe`: a draft declaration from a file's columns, that ingests as written when
the guesses are right, and says what it could not decide when they cannot be made."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from dices_cli.cli.main import app
from dices_cli.formats.declared.describe import describe
from dices_cli.formats.ingest import ingest
from dices_cli.store.datasets import Store

# 4 items x 3 raters, one rating of one item missing (-1: a missing code): 12 rows.
GENDER = {"w1": "woman", "w2": "man", "w3": "nonbinary"}
AGE = {"w1": "18-24", "w2": "25-34", "w3": "55+"}
TEXTS = {
    "c1": "I think a lot of those songs use drop C, would recommend them to anyone",
    "c2": "There are relatively simple ways around all of the provisions you mention",
    "c3": "Respond to the meat of my post instead of the wording, please, thank you",
    "c4": "How is this airline not painting a bright red target on its own planes?",
}
SCORES = [1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 2, -1]


pytestmark = pytest.mark.usefixtures("registry_as_it_was")


def conventional(path: Path) -> Path:
    """A long CSV with the usual names: comment_id, annotator_id, toxicity, ..."""
    rows = ["comment_id,annotator_id,text,toxicity,gender,age,platform,batch"]
    scores = iter(SCORES)
    for item, text in TEXTS.items():
        for rater in GENDER:
            platform = "reddit" if item in ("c1", "c2") else "twitter"
            rows.append(
                f'{item},{rater},"{text}",{next(scores)},{GENDER[rater]},{AGE[rater]},{platform},b1'
            )
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


EXPECTED_DRAFT_KEYS = {
    "item": "comment_id",
    "rater": "annotator_id",
    "labels": ["toxicity"],
    "text": ["text"],
    "item_attributes": ["platform"],
    "rater_attributes": ["gender", "age"],
    "format": "csv",
}


def test_a_conventional_long_csv_gives_a_declaration_that_ingests_as_written(
    tmp_path: Path,
) -> None:
    data = conventional(tmp_path / "my_ratings.csv")
    draft = describe([data])
    assert draft.complete and draft.undecided == []
    parsed = tomllib.loads(draft.text)
    (dataset,) = parsed["dataset"]
    assert dataset["name"] == "my_ratings"
    assert dataset["published"] == {"items": 4, "raters": 3, "ratings": 12}
    (file,) = dataset["file"]
    assert file == EXPECTED_DRAFT_KEYS
    assert dataset["scales"] == {
        "toxicity": {"kind": "ordinal", "values": [1, 2, 3, 4, 5], "missing": [-1]}
    }
    assert "#   my_ratings.csv: batch holds one value ('b1') in every row: left out" in draft.text
    assert "# positive = [4, 5]  # for a binary view: check" in draft.text

    declaration = tmp_path / "my.toml"
    declaration.write_text(draft.text, encoding="utf-8")
    store = Store(tmp_path / "data")
    (result,) = ingest([data], store, declaration=declaration)
    assert result.stored.manifest["counts"] == {"items": 4, "raters": 3, "ratings": 12}
    assert result.stored.manifest["missing"] == {"toxicity": 1}
    assert not any("warning" in note for note in result.notes)
    version = store.open("my_ratings")
    assert version.read("raters").sort("rater_id").rows() == [
        ("w1", "woman", "18-24"),
        ("w2", "man", "25-34"),
        ("w3", "nonbinary", "55+"),
    ]
    items = version.read("items").sort("item_id")
    assert items.columns == ["item_id", "text", "platform"]
    assert items["platform"].to_list() == ["reddit", "reddit", "twitter", "twitter"]
    ratings = version.read("ratings").sort("item_id", "rater_id")
    assert ratings["toxicity"].to_list() == [1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 2, None]


def test_the_command_writes_the_draft_and_says_its_guesses(tmp_path: Path) -> None:
    data = conventional(tmp_path / "ratings.csv")
    out = tmp_path / "draft.toml"
    runner = CliRunner()
    done = runner.invoke(app, ["describe", str(data), "--name", "mine", "-o", str(out)])
    assert done.exit_code == 0, done.output
    assert done.stdout == ""
    assert "guessed: ratings.csv: item id: comment_id (its name; 4 items)" in done.stderr
    assert "guessed: ratings.csv: rater id: annotator_id (its name; 3 raters)" in done.stderr
    assert "guessed: toxicity: ordinal, 1, 2, 3, 4, 5 (its values, numbers)" in done.stderr
    assert tomllib.loads(out.read_text())["dataset"][0]["name"] == "mine"
    again = runner.invoke(app, ["describe", str(data), "-o", str(out)])
    assert again.exit_code == 1
    assert f"Error: {out} exists; use --force to overwrite it" in again.stderr
    ingested = runner.invoke(
        app, ["ingest", str(data), "--declaration", str(out), "--data", str(tmp_path / "d")]
    )
    assert ingested.exit_code == 0, ingested.output
    assert "4 items, 3 raters, 12 ratings" in ingested.stderr
    to_stdout = runner.invoke(app, ["describe", str(data), "-q"])
    assert to_stdout.exit_code == 0
    assert to_stdout.stderr == ""
    assert tomllib.loads(to_stdout.stdout)["dataset"][0]["name"] == "ratings"


def test_an_ambiguous_file_says_what_it_could_not_decide(tmp_path: Path) -> None:
    data = tmp_path / "survey.csv"
    # No column is named as a rater id; two vary within items: neither is named a label.
    data.write_text(
        "item_id,who,q1,q2,verdict\n"
        "a,p,1,x,Maybe\na,q,2,y,Perhaps\nb,p,3,x,Perhaps\nb,q,1,z,Maybe\n"
    )
    done = CliRunner().invoke(app, ["describe", str(data)])
    assert done.exit_code == 1
    assert done.stderr.splitlines()[-1] == (
        "Error: the draft needs an edit before it ingests: fill in what it marks UNDECIDED"
    )
    assert (
        "could not decide: survey.csv: the rater id: no column's name looks like one "
        '(rater/annotator/worker/user id); name it with rater = "COLUMN"'
    ) in done.stderr
    assert (
        "could not decide: survey.csv: the label: no column's name looks like one (label, "
        "rating, score, annotation, toxicity ...) (perhaps one of who, q1, q2, verdict); name "
        'it with labels = ["COLUMN"]'
    ) in done.stderr
    assert '# UNDECIDED: rater = "COLUMN"  (the rater id)' in done.stdout
    assert '# UNDECIDED: labels = ["COLUMN"]' in done.stdout
    tomllib.loads(done.stdout)  # a draft all the same


def test_two_item_ids_that_disagree_and_named_values_without_an_order(tmp_path: Path) -> None:
    data = tmp_path / "two.jsonl"
    records = [
        {"item_id": i, "text_id": t, "worker": w, "label": v}
        for i, t, w, v in [
            ("1", "a", "u", "cat"),
            ("1", "b", "v", "dog"),
            ("2", "a", "u", "dog"),
            ("2", "b", "v", "bird"),
        ]
    ]
    data.write_text("".join(json.dumps(r) + "\n" for r in records))
    draft = describe([data])
    assert draft.complete
    assert draft.undecided == [
        "two.jsonl: the item id: item_id and text_id both look like one and do not name the "
        "same items; item_id chosen",
        "label: nominal, bird, cat, dog: no order or positive class is known for these values; "
        'for an ordinal scale list them in order with kind = "ordinal"',
    ]
    (dataset,) = tomllib.loads(draft.text)["dataset"]
    assert dataset["file"][0]["rater"] == "worker"
    assert dataset["scales"]["label"] == {"kind": "nominal", "values": ["bird", "cat", "dog"]}


@pytest.mark.parametrize(
    ("cells", "scale"),
    [
        (["0", "1", "1"], {"kind": "binary", "values": [0, 1], "positive": [1]}),
        (["Yes", "No"], {"kind": "binary", "values": ["No", "Yes"], "positive": ["Yes"]}),
        (["0", "4", "-1", "2", "na"], {"kind": "ordinal", "values": [0, 1, 2, 3, 4],
                                       "missing": [-1, "na"]}),
        (["0.5", "1.5", "1.0"], {"kind": "ordinal", "values": [0.5, 1.0, 1.5]}),
        (["high", "low", "medium"], {"kind": "ordinal", "values": ["low", "medium", "high"]}),
    ],
)  # fmt: skip
def test_the_scale_comes_from_the_values(
    tmp_path: Path, cells: list[str], scale: dict[str, object]
) -> None:
    data = tmp_path / "scaled.csv"
    lines = ["item,rater,rating\n"] + [f"i{n},r{n},{c}\n" for n, c in enumerate(cells)]
    data.write_text("".join(lines))
    draft = describe([data])
    assert tomllib.loads(draft.text)["dataset"][0]["scales"]["rating"] == scale


def test_several_files_are_joined_by_their_ids(tmp_path: Path) -> None:
    (tmp_path / "raters.csv").write_text("rater_id,country\nr1,IN\nr2,US\n")
    (tmp_path / "ratings.csv").write_text("item_id,rater_id,score\ni1,r1,1\ni1,r2,0\ni2,r1,0\n")
    paths = [tmp_path / "raters.csv", tmp_path / "ratings.csv"]
    draft = describe(paths, name="joined")
    (dataset,) = tomllib.loads(draft.text)["dataset"]
    assert [f.get("role", "ratings") for f in dataset["file"]] == ["raters", "ratings"]
    assert dataset["file"][0]["rater_attributes"] == ["country"]
    declaration = tmp_path / "joined.toml"
    declaration.write_text(draft.text)
    store = Store(tmp_path / "data")
    (result,) = ingest(paths, store, declaration=declaration)
    assert result.stored.manifest["counts"] == {"items": 2, "raters": 2, "ratings": 3}


def test_a_parquet_file_and_a_column_name_that_could_break_the_toml(tmp_path: Path) -> None:
    data = tmp_path / "odd.parquet"
    pl.DataFrame(
        {"user": ["a", "b"], "instance": ["1", "1"], "offensive\n[x]": ["1", "0"]}
    ).write_parquet(data)
    draft = describe([data])
    (dataset,) = tomllib.loads(draft.text)["dataset"]
    assert dataset["file"][0]["labels"] == ["offensive\n[x]"]
    assert "offensive_x" in dataset["scales"]
    assert "offensive\\x0a[x]" in draft.text


@pytest.mark.parametrize(
    ("arguments", "code", "message"),
    [
        (["nowhere.csv"], 2, "Error: 'nowhere.csv' does not exist"),
        (["."], 2, "Error: '.' is a directory: give the files to describe"),
        (["{csv}", "--name", "Bad-Name"], 2, "Error: --name 'Bad-Name' is not a dataset name"),
        (["{empty}"], 1, "holds no records to describe"),
        (["{bad_json}"], 1, "is not valid JSON"),
        (["{ragged}"], 1, "is not a table dices can describe: line 3: 3 fields, the header has 2"),
    ],
)
def test_errors_have_a_message_and_an_exit_code(
    tmp_path: Path, arguments: list[str], code: int, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    conventional(tmp_path / "c.csv")
    (tmp_path / "empty.csv").write_text("item_id,rater_id,label\n")
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "ragged.csv").write_text("a,b\n1,2\n1,2,3\n")
    names = {"csv": "c.csv", "empty": "empty.csv", "bad_json": "bad.json", "ragged": "ragged.csv"}
    given = [a.format(**names) for a in arguments]
    done = CliRunner().invoke(app, ["describe", *given])
    assert done.exit_code == code, done.output
    assert message in done.stderr
    assert done.stdout == ""


def test_the_api_returns_the_draft_and_notes_its_guesses(tmp_path: Path) -> None:
    import dices_cli

    data = conventional(tmp_path / "ratings.csv")
    with pytest.warns(dices_cli.DicesNote) as notes:
        text = dices_cli.describe([data], name="mine")
    assert text == describe([data], name="mine").text
    said = [str(n.message) for n in notes]
    assert "ratings.csv: item id: comment_id (its name; 4 items)" in said


def test_files_without_ratings_and_a_label_with_one_value(tmp_path: Path) -> None:
    (tmp_path / "raters.csv").write_text("rater_id,country\nr1,IN\nr2,US\n")
    (tmp_path / "items.csv").write_text("item_id,text,task\ni1,a,hate\ni2,b,hate\n")
    draft = describe([tmp_path / "raters.csv", tmp_path / "items.csv"])
    assert not draft.complete
    assert draft.undecided == [
        "no file holds ratings (an item id, a rater id and a label in one row): give the "
        "ratings file too"
    ]
    assert "#   items.csv: task holds one value ('hate') in every row: left out" in draft.text
    assert "published = { items = 2, raters = 2 }" in draft.text


def test_rows_without_an_id_are_said(tmp_path: Path) -> None:
    data = tmp_path / "gaps.csv"
    data.write_text("item_id,rater_id,label\ni1,r1,0\n,r2,1\ni2,r1,1\n")
    draft = describe([data])
    assert draft.undecided == [
        "gaps.csv: 1 row has no item id (item_id): ingest refuses the file unless it is "
        "given a file for the rejected rows"
    ]
    assert "#   gaps.csv: item id: item_id (its name; 2 items)" in draft.text
