"""ProsocialDialog: the family declaration, reading, validation, ingest and export.

The five real rows are ../shared/data/prosocial/samples.jsonl (CC BY 4.0, Kim et al. 2022);
everything else is built from them in tmp_path.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import tempfile
from itertools import product
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner, Result

from dices_cli.cli.main import app
from dices_cli.evaluate.references import PROSOCIAL_UNSAFE
from dices_cli.families import FAMILIES, coded_members, family_of
from dices_cli.formats.prosocial.labels import recomputed_label
from tests.conftest import SHARED

SAMPLES = SHARED / "data" / "prosocial" / "samples.jsonl"


@pytest.fixture
def sample_lines() -> list[str]:
    if not SAMPLES.exists():
        if os.environ.get("DICES_REQUIRE_REPLICA") == "1":
            pytest.fail(f"ProsocialDialog samples not found at {SAMPLES}")
        pytest.skip(f"ProsocialDialog samples not found at {SAMPLES} (set DICES_SHARED)")
    return SAMPLES.read_text(encoding="utf-8").splitlines()


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def changed(line: str, **values: Any) -> str:
    """A sample line with some keys set (a value of `...` removes the key)."""
    row = json.loads(line)
    for key, value in values.items():
        if value is ...:
            del row[key]
        else:
            row[key] = value
    return json.dumps(row)


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(app, [str(arg) for arg in args])


# --- the declaration ---------------------------------------------------------------------


def test_the_families_declare_their_members_tables_and_what_they_lack() -> None:
    assert coded_members() == ("350", "990", "prosocial")  # declared families come after
    assert family_of("990") is FAMILIES["dices"]
    assert family_of("990").title_of("990") == "DICES-990"
    prosocial = FAMILIES["prosocial"]
    assert prosocial.title_of("prosocial") == "ProsocialDialog"
    assert prosocial.tables == ("items", "ratings")
    assert [(f.name, f.rows) for f in prosocial.files] == [
        ("train.json", 120_236),
        ("valid.json", 20_416),
        ("test.json", 25_029),
    ]
    assert prosocial.lacks() == (
        "ProsocialDialog has no rater ids, demographics or expert gold labels"
    )
    assert FAMILIES["dices"].published["350"] == {
        "conversations": 350,
        "raters": 123,
        "ratings": 43_050,
    }


# --- the label rule ------------------------------------------------------------------------

# Written by hand from Kim et al. 2022, Appendix A.4 ("Criterion for the final safety
# labels"), not from the code: any needs intervention vote -> needs intervention; else the
# number of needs caution votes, 0/1/2/3 -> casual / possibly / probably / needs caution.
# C casual, N needs caution, I needs intervention, in the order of the three slots.
EXPECTED_LABELS = {
    "CCC": "__casual__",
    "CCN": "__possibly_needs_caution__",
    "CCI": "__needs_intervention__",
    "CNC": "__possibly_needs_caution__",
    "CNN": "__probably_needs_caution__",
    "CNI": "__needs_intervention__",
    "CIC": "__needs_intervention__",
    "CIN": "__needs_intervention__",
    "CII": "__needs_intervention__",
    "NCC": "__possibly_needs_caution__",
    "NCN": "__probably_needs_caution__",
    "NCI": "__needs_intervention__",
    "NNC": "__probably_needs_caution__",
    "NNN": "__needs_caution__",
    "NNI": "__needs_intervention__",
    "NIC": "__needs_intervention__",
    "NIN": "__needs_intervention__",
    "NII": "__needs_intervention__",
    "ICC": "__needs_intervention__",
    "ICN": "__needs_intervention__",
    "ICI": "__needs_intervention__",
    "INC": "__needs_intervention__",
    "INN": "__needs_intervention__",
    "INI": "__needs_intervention__",
    "IIC": "__needs_intervention__",
    "IIN": "__needs_intervention__",
    "III": "__needs_intervention__",
}
LETTERS = {"C": "casual", "N": "needs caution", "I": "needs intervention"}


def test_the_label_rule_on_all_27_annotation_triples() -> None:
    assert sorted(EXPECTED_LABELS) == sorted("".join(t) for t in product("CNI", repeat=3))
    triples = pl.DataFrame(
        {"annotations": [[LETTERS[letter] for letter in triple] for triple in EXPECTED_LABELS]}
    )
    labels = triples.select(recomputed_label(pl.col("annotations"))).to_series()
    assert dict(zip(EXPECTED_LABELS, labels.to_list(), strict=True)) == EXPECTED_LABELS


def test_the_binary_reference_is_two_caution_votes_or_any_intervention_vote() -> None:
    """What `evaluate -d prosocial` counts as unsafe, as its help says."""
    unsafe = {t for t, label in EXPECTED_LABELS.items() if label in PROSOCIAL_UNSAFE}
    assert unsafe == {t for t in EXPECTED_LABELS if t.count("N") >= 2 or "I" in t}
    assert len(unsafe) == 23  # of the 27: all but CCC and the three with one caution vote


# --- ingest --------------------------------------------------------------------------------


def test_the_five_real_rows_ingest_typed(sample_lines: list[str], tmp_path: Path) -> None:
    train = write_lines(tmp_path / "train.json", sample_lines)
    data = tmp_path / "data"
    result = run("ingest", train, "--data", data)
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert result.stderr == (
        "ProsocialDialog: 5 lines read = 5 written + 0 rejected; 5 utterances in 2 dialogues, "
        f"15 annotations -> {data / 'prosocial'}\n"
    )
    items = pl.read_parquet(data / "prosocial" / "items.parquet")
    label = pl.Enum(FAMILIES["prosocial"].enums["safety_label"])
    assert items.schema == pl.Schema(
        {
            "item_id": pl.String,
            "split": pl.Enum(["train", "valid", "test"]),
            "dialogue_id": pl.Int64,
            "response_id": pl.Int32,
            "context": pl.String,
            "response": pl.String,
            "rots": pl.List(pl.String),
            "safety_label": label,
            "safety_label_recomputed": label,
            "source": pl.Enum(["socialchemistry", "sbic", "ethics_amt", "ethics_reddit"]),
            "etc": pl.String,
            "episode_done": pl.Boolean,
        }
    )
    assert items["item_id"].to_list() == [
        "train-0-0",
        "train-0-1",
        "train-0-2",
        "train-1-0",
        "train-1-1",
    ]
    assert items["etc"].to_list() == ["reddit/amitheasshole/b6k7hd"] * 3 + ["", ""]
    assert items["safety_label_recomputed"].to_list() == ["__needs_caution__"] * 5
    ratings = pl.read_parquet(data / "prosocial" / "ratings.parquet")
    assert ratings.schema == pl.Schema(
        {
            "item_id": pl.String,
            "annotator_slot": pl.UInt8,
            "annotation": pl.Enum(["casual", "needs caution", "needs intervention"]),
            "reason": pl.String,
        }
    )
    assert ratings.height == 15
    assert ratings.row(1) == (
        "train-0-0",
        1,
        "needs caution",
        "Speaker is discrimination based on gender.",
    )
    manifest = json.loads((data / "prosocial" / "manifest.json").read_text())
    assert manifest["counts"] == {"items": 5, "dialogues": 2, "ratings": 15, "label_mismatches": 0}
    assert [(s["split"], s["name"], s["rows_read"]) for s in manifest["sources"]] == [
        ("train", "train.json", 5)
    ]
    assert sorted(manifest["files"]) == ["items.parquet", "ratings.parquet"]


def test_info_and_verify_name_the_family(sample_lines: list[str], tmp_path: Path) -> None:
    train = write_lines(tmp_path / "train.json", sample_lines)
    data = tmp_path / "data"
    assert run("ingest", train, "--data", data).exit_code == 0
    verified = run("verify", "--data", data)
    assert verified.exit_code == 0
    stored = (data / "prosocial").resolve()
    assert verified.stderr == f"ProsocialDialog: ok, 2 files match their SHA-256 in {stored}\n"
    info = run("info", "--data", data, "--format", "csv")
    assert info.exit_code == 0
    record = next(csv.DictReader(io.StringIO(info.stdout)))
    # ProsocialDialog's own units, as they are (no conversations, raters or ratings).
    assert list(record)[:4] == ["dataset", "dialogues", "utterances", "annotations"]
    assert (record["dialogues"], record["utterances"], record["annotations"]) == ("2", "5", "15")
    assert record["source"] == "train.json"


def test_a_wrong_published_label_is_reported_and_kept(
    sample_lines: list[str], tmp_path: Path
) -> None:
    lines = [*sample_lines]
    lines[2] = changed(lines[2], safety_label="__casual__")
    train = write_lines(tmp_path / "train.json", lines)
    data = tmp_path / "data"
    result = run("ingest", train, "--data", data)
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines()[1:] == [
        "  warning: 1 of 5 utterances carry a published safety_label other than the one "
        "their three annotations imply; kept as published"
    ]
    items = pl.read_parquet(data / "prosocial" / "items.parquet")
    assert items.row(2, named=True)["safety_label"] == "__casual__"
    assert items.row(2, named=True)["safety_label_recomputed"] == "__needs_caution__"
    manifest = json.loads((data / "prosocial" / "manifest.json").read_text())
    assert manifest["counts"]["label_mismatches"] == 1
    assert manifest["warnings"] == {"label-mismatch": 1}
    validated = run("validate", train, "--format", "csv")
    assert validated.exit_code == 0  # a warning alone does not fail
    assert validated.stdout.splitlines()[1] == (
        f"{train},label-mismatch,warning,3,safety_label,__casual__,"
        '"the annotations needs caution, needs caution, needs caution imply '
        '__needs_caution__; the published label is kept"'
    )


def test_one_intervention_vote_labelled_possibly_needs_caution_is_one_mismatch(
    sample_lines: list[str], tmp_path: Path
) -> None:
    """(casual, casual, needs intervention) is needs intervention by Appendix A.4: the label
    an older reading of the rule gave it, possibly needs caution, is the one mismatch."""
    lines = [*sample_lines]
    lines[3] = changed(
        lines[3],
        safety_annotations=["casual", "casual", "needs intervention"],
        safety_label="__possibly_needs_caution__",
    )
    train = write_lines(tmp_path / "train.json", lines)
    data = tmp_path / "data"
    ingested = run("ingest", train, "--data", data)
    assert ingested.exit_code == 0, ingested.output
    assert ingested.stderr.splitlines()[1:] == [
        "  warning: 1 of 5 utterances carry a published safety_label other than the one "
        "their three annotations imply; kept as published"
    ]
    checked = run("query", "label-check", "-d", "prosocial", "--data", data)
    assert checked.exit_code == 0, checked.output
    assert checked.stdout == (
        "dataset,safety_label,safety_label_recomputed,agrees,items,share\n"
        "prosocial,__possibly_needs_caution__,__needs_intervention__,false,1,0.2\n"
        "prosocial,__needs_caution__,__needs_caution__,true,4,0.8\n"
    )


BROKEN: dict[str, tuple[Any, str]] = {
    # name: (how line 2 is broken, the problem reported on line 2)
    "broken-json": (
        '{"context": "x", broken',
        "line 2: the line is not valid JSON (Expecting property name enclosed in double "
        "quotes: line 1 column 18 (char 17)) [invalid-json]",
    ),
    "not-an-object": ("[1, 2]", "line 2: the line is a list, not an object [wrong-type]"),
    "missing-field": (
        {"etc": ...},
        "line 2, column etc: the line has no etc [missing-field]",
    ),
    "extra-field": (
        {"rating": 3},
        "line 2, column rating: 'rating' is not a ProsocialDialog field [unexpected-field]",
    ),
    "wrong-type": (
        {"response_id": "1"},
        "line 2, column response_id: response_id is text, not a whole number [wrong-type]",
    ),
    "boolean-id": (
        {"dialogue_id": False},
        "line 2, column dialogue_id: dialogue_id is true or false, not a whole number [wrong-type]",
    ),
    "null-context": (
        {"context": None},
        "line 2, column context: context is null, not text [wrong-type]",
    ),
    "label-outside-enum": (
        {"safety_label": "__unsafe__"},
        "line 2, column safety_label: '__unsafe__' is not one of __casual__, "
        "__possibly_needs_caution__, __probably_needs_caution__, __needs_caution__, "
        "__needs_intervention__ [not-in-enum]",
    ),
    "source-outside-enum": (
        {"source": "reddit"},
        "line 2, column source: 'reddit' is not one of socialchemistry, sbic, ethics_amt, "
        "ethics_reddit [not-in-enum]",
    ),
    "annotation-outside-enum": (
        {"safety_annotations": ["casual", "unsafe", "casual"]},
        "line 2, column safety_annotations: 'unsafe' is not one of casual, needs caution, "
        "needs intervention [not-in-enum]",
    ),
    "two-annotations": (
        {"safety_annotations": ["casual", "casual"]},
        "line 2, column safety_annotations: safety_annotations holds 2 values, not 3 [wrong-count]",
    ),
    "four-reasons": (
        {"safety_annotation_reasons": ["a", "b", "c", "d"]},
        "line 2, column safety_annotation_reasons: safety_annotation_reasons holds 4 values, "
        "not 3 [wrong-count]",
    ),
    "reason-not-text": (
        {"safety_annotation_reasons": ["a", 2, "c"]},
        "line 2, column safety_annotation_reasons: safety_annotation_reasons[1] is a whole "
        "number, not text [wrong-type]",
    ),
    "negative-id": (
        {"response_id": -1},
        "line 2, column response_id: response_id -1 is outside 0 to 2,147,483,647 [out-of-range]",
    ),
    "lone-surrogate": (
        {"context": "half of a pair: \ud800"},
        "line 2: the line escapes a lone UTF-16 surrogate (\\ud800 to \\udfff), which is no "
        "character [invalid-utf8]",
    ),
    "duplicate": (
        {"response_id": 0},
        "line 2, column dialogue_id, response_id: dialogue 0 response 0 appears on an "
        "earlier line too [duplicate-id]",
    ),
}


@pytest.mark.parametrize("name", list(BROKEN))
def test_each_problem_refuses_the_ingest_with_its_line(
    name: str, sample_lines: list[str], tmp_path: Path
) -> None:
    broken, problem = BROKEN[name]
    lines = [*sample_lines]
    lines[1] = broken if isinstance(broken, str) else changed(lines[1], **broken)
    train = write_lines(tmp_path / "train.json", lines)
    data = tmp_path / "data"
    result = run("ingest", train, "--data", data)
    assert result.exit_code == 1
    assert result.stdout == ""
    first, summary, *listed = result.stderr.splitlines()
    assert first == f"Error: {train} is not valid ProsocialDialog data; nothing was written"
    assert summary.startswith(f"{train}: 1 error (ProsocialDialog); 5 rows read, 1 would be")
    assert listed == [f"  {problem}"]
    assert not (data / "prosocial").exists()


def test_rejects_holds_the_rejected_lines_verbatim(sample_lines: list[str], tmp_path: Path) -> None:
    lines = [*sample_lines]
    lines[3] = '{"context": "x", broken'
    train = write_lines(tmp_path / "train.json", lines)
    data, rejects = tmp_path / "data", tmp_path / "rejects.csv"
    result = run("ingest", train, "--data", data, "--rejects", rejects)
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        "ProsocialDialog: 5 lines read = 4 written + 1 rejected; 4 utterances in 2 dialogues, "
        f"12 annotations -> {data / 'prosocial'}",
        f"  rejected lines and their problems: {rejects}",
    ]
    assert list(csv.reader(rejects.open(encoding="utf-8"))) == [
        ["file", "line", "problems", "record"],
        [
            "train.json",
            "4",
            "invalid-json: the line is not valid JSON (Expecting property name enclosed in "
            "double quotes: line 1 column 18 (char 17))",
            '{"context": "x", broken',
        ],
    ]


def test_a_file_that_names_no_split_is_refused(sample_lines: list[str], tmp_path: Path) -> None:
    samples = write_lines(tmp_path / "samples.jsonl", sample_lines)
    result = run("ingest", samples, "--data", tmp_path / "data")
    assert result.exit_code == 2  # tests/families/test_splits.py: --split
    assert result.stderr.splitlines()[0] == (
        "Error: samples.jsonl does not say which split it holds: name it train.json, "
        "valid.json or test.json, or give --split (train, valid or test)"
    )
    validated = run("validate", samples)
    assert validated.exit_code == 1
    assert validated.stdout.splitlines()[1].endswith(
        '"samples.jsonl does not name its split: a ProsocialDialog file is named '
        'train.json, valid.json or test.json, or ingested with its split given"'
    )


def test_two_files_of_one_split_or_of_two_families_are_usage_errors(
    sample_lines: list[str], tmp_path: Path
) -> None:
    train = write_lines(tmp_path / "train.json", sample_lines)
    (tmp_path / "again").mkdir()
    again = write_lines(tmp_path / "again" / "train.json", sample_lines)
    result = run("ingest", train, again, "--data", tmp_path / "data")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == (
        f"Error: {train} and {again} are both the train split; give each split once"
    )
    dices = tmp_path / "dices.csv"
    dices.write_text("id,rater_id\n1,2\n", encoding="utf-8")
    result = run("ingest", train, dices, "--data", tmp_path / "data")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == (
        "Error: ProsocialDialog and DICES files are ingested separately; "
        "give the files of one family at a time"
    )


def test_splits_ingest_together_and_a_second_ingest_needs_force(
    sample_lines: list[str], tmp_path: Path
) -> None:
    train = write_lines(tmp_path / "train.json", sample_lines[:3])
    test = write_lines(tmp_path / "test.json", sample_lines[3:])
    data = tmp_path / "data"
    assert run("ingest", train, test, "--data", data).exit_code == 0
    items = pl.read_parquet(data / "prosocial" / "items.parquet")
    assert items["item_id"].to_list() == [
        "train-0-0",
        "train-0-1",
        "train-0-2",
        "test-1-0",
        "test-1-1",
    ]
    again = run("ingest", train, "--data", data)
    assert again.exit_code == 1
    assert again.stderr.splitlines()[0] == (
        f"Error: ProsocialDialog is already ingested in {data}; use --force to replace it"
    )


# --- export --------------------------------------------------------------------------------


def test_the_real_rows_export_back_unchanged(sample_lines: list[str], tmp_path: Path) -> None:
    train = tmp_path / "train.json"
    train.write_bytes(SAMPLES.read_bytes())
    data = tmp_path / "data"
    assert run("ingest", train, "--data", data).exit_code == 0
    result = run("export", "--dataset", "prosocial", "--format", "jsonl", "--data", data)
    assert result.exit_code == 0, result.output
    assert result.stdout_bytes == SAMPLES.read_bytes()
    csv_asked = run("export", "-d", "prosocial", "--format", "csv", "--data", data)
    assert csv_asked.exit_code == 2
    assert csv_asked.stderr.splitlines()[0] == (
        "Error: ProsocialDialog is written back as JSON Lines: pick --format jsonl"
    )


# --- the fast path and the line-by-line path agree -----------------------------------------


def test_blank_lines_are_skipped_and_lines_keep_their_numbers(
    sample_lines: list[str], tmp_path: Path
) -> None:
    """A blank line sends the file to the line-by-line reader (the fast one cannot number
    lines then): the warning names the line as an editor counts it."""
    lines = [
        sample_lines[0],
        "",
        "  ",
        sample_lines[1],
        changed(sample_lines[2], safety_label="__casual__"),
    ]
    train = write_lines(tmp_path / "train.json", lines)
    result = run("validate", train, "--format", "csv")
    assert result.exit_code == 0, result.output
    assert [row[:4] for row in csv.reader(io.StringIO(result.stdout))][1:] == [
        [str(train), "label-mismatch", "warning", "5"]
    ]
    assert result.stderr == (
        f"{train}: valid (ProsocialDialog); 3 rows read, 0 would be rejected [1 label-mismatch]\n"
    )


def test_two_objects_on_one_line_are_broken_json(sample_lines: list[str], tmp_path: Path) -> None:
    """PyArrow's reader would take them as two rows; the line is refused."""
    lines = [sample_lines[0], sample_lines[1] + sample_lines[2]]
    train = write_lines(tmp_path / "train.json", lines)
    result = run("ingest", train, "--data", tmp_path / "data")
    assert result.exit_code == 1
    assert result.stderr.splitlines()[2].startswith(
        "  line 2: the line is not valid JSON (Extra data: line 1 column"
    )


def test_a_null_rots_or_etc_is_kept_null(sample_lines: list[str], tmp_path: Path) -> None:
    lines = [changed(sample_lines[0], rots=None, etc=None), *sample_lines[1:]]
    train = write_lines(tmp_path / "train.json", lines)
    data = tmp_path / "data"
    assert run("ingest", train, "--data", data).exit_code == 0
    items = pl.read_parquet(data / "prosocial" / "items.parquet")
    assert items.row(0, named=True)["rots"] is None
    assert items.row(0, named=True)["etc"] is None
    exported = run("export", "-d", "prosocial", "--data", data)
    assert exported.stdout.splitlines() == lines


ANNOTATION_VALUES = ("casual", "needs caution", "needs intervention")
SOURCE_VALUES = ("socialchemistry", "sbic", "ethics_amt", "ethics_reddit")


@st.composite
def prosocial_lines(draw: st.DrawFn) -> list[str]:
    """Valid ProsocialDialog lines with any text (escapes, non-ASCII, empty strings), null
    rots and etc, labels that agree with their annotations or not."""
    count = draw(st.integers(1, 8))
    ids = draw(
        st.lists(
            st.tuples(st.integers(0, 2**63 - 1), st.integers(0, 2**31 - 1)),
            min_size=count,
            max_size=count,
            unique=True,
        )
    )
    labels = FAMILIES["prosocial"].enums["safety_label"]
    return [
        json.dumps(
            {
                "context": draw(st.text(max_size=20)),
                "response": draw(st.text(max_size=20)),
                "rots": draw(st.none() | st.lists(st.text(max_size=5), max_size=3)),
                "safety_label": draw(st.sampled_from(labels)),
                "safety_annotations": draw(
                    st.lists(st.sampled_from(ANNOTATION_VALUES), min_size=3, max_size=3)
                ),
                "safety_annotation_reasons": draw(
                    st.lists(st.text(max_size=10), min_size=3, max_size=3)
                ),
                "source": draw(st.sampled_from(SOURCE_VALUES)),
                "etc": draw(st.none() | st.text(max_size=8)),
                "dialogue_id": dialogue,
                "response_id": response,
                "episode_done": draw(st.booleans()),
            }
        )
        for dialogue, response in ids
    ]


@given(lines=prosocial_lines())
def test_any_valid_lines_export_back_unchanged(lines: list[str]) -> None:
    with tempfile.TemporaryDirectory() as temp:
        folder = Path(temp)
        train = write_lines(folder / "valid.json", lines)
        data = folder / "data"
        result = run("ingest", train, "--data", data)
        assert result.exit_code == 0, result.output
        exported = run("export", "-d", "prosocial", "--data", data)
        assert exported.stdout_bytes == train.read_bytes()
        items = pl.read_parquet(data / "prosocial" / "items.parquet")
        letter = {name: letter for letter, name in LETTERS.items()}
        expected = [
            EXPECTED_LABELS["".join(letter[a] for a in json.loads(line)["safety_annotations"])]
            for line in lines
        ]
        assert items["safety_label_recomputed"].to_list() == expected


def test_verify_finds_a_changed_byte_in_a_prosocial_table(
    sample_lines: list[str], tmp_path: Path
) -> None:
    train = write_lines(tmp_path / "train.json", sample_lines)
    data = tmp_path / "data"
    assert run("ingest", train, "--data", data).exit_code == 0
    ratings = (data / "prosocial").resolve() / "ratings.parquet"
    recorded = hashlib.sha256(ratings.read_bytes()).hexdigest()
    content = bytearray(ratings.read_bytes())
    content[len(content) // 2] ^= 0x01
    ratings.write_bytes(bytes(content))
    changed_sha = hashlib.sha256(bytes(content)).hexdigest()
    result = run("verify", "--data", data)
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == (
        f"Error: ProsocialDialog: {ratings} is damaged (sha256 {changed_sha}, "
        f"expected {recorded}); ingest the dataset again (`dices ingest FILE --force`)"
    )


def test_every_line_rejected_writes_nothing(sample_lines: list[str], tmp_path: Path) -> None:
    train = write_lines(tmp_path / "train.json", [changed(sample_lines[0], context=5)])
    data, rejects = tmp_path / "data", tmp_path / "rejects.csv"
    result = run("ingest", train, "--data", data, "--rejects", rejects)
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == (
        f"Error: {train}: every line was rejected; nothing was written"
    )
    assert not (data / "prosocial").exists()
    assert not rejects.exists()
