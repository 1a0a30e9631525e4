"""Reading declared JSON files as LeWiDi 2025 publishes them: annotations as an object keyed
by annotator, and annotator files with a comma before a closing brace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dices_cli.errors import InvalidInputError
from dices_cli.formats.declared.read import _loads_lenient
from dices_cli.formats.ingest import ingest
from dices_cli.store.datasets import Store

# Two items of the Paraphrase set's shape, one of them with an annotator's value missing
# from the object (a rating with no value) and a value outside the scale.
RECORDS = {
    "101": {
        "annotation task": "paraphrase detection",
        "text": {"Question1": "a?", "Question2": "b?"},
        "annotators": "Ann1,Ann2",
        "annotations": {"Ann1": "-4", "Ann2": "3"},
        "split": "train",
    },
    "102": {
        "annotation task": "paraphrase detection",
        "text": {"Question1": "c?", "Question2": "d?"},
        "annotators": "Ann1,Ann2",
        "annotations": {"Ann2": "5"},
        "split": "train",
    },
}
# As published: not JSON (a comma before each closing brace).
META = """{
\t"Ann1":{
\t\t"Gender":"Male",
\t\t"Age":"26",
\t\t"Nationality":"Chinese",
\t\t"Education":"master student",
\t},
\t"Ann2":{
\t\t"Gender":"Female",
\t\t"Age":"30",
\t\t"Nationality":"German",
\t\t"Education":"PhD student",
\t}
}"""


def files(tmp_path: Path, records: dict[str, object]) -> list[Path]:
    train = tmp_path / "Paraphrase_train.json"
    train.write_text(json.dumps(records), encoding="utf-8")
    meta = tmp_path / "Paraphrase_annotators_meta.json"
    meta.write_text(META, encoding="utf-8")
    return [train, meta]


def test_annotations_keyed_by_annotator_and_the_annotator_file(tmp_path: Path) -> None:
    store = Store(tmp_path / "data")
    (result,) = ingest(files(tmp_path, RECORDS), store, "paraphrase")
    version = store.open("paraphrase")
    assert version.read("ratings").rows() == [
        ("train-101", "Ann1", -4, False),
        ("train-101", "Ann2", 3, True),
        ("train-102", "Ann1", None, None),
        ("train-102", "Ann2", 5, True),
    ]
    assert version.read("raters").rows() == [
        ("Ann1", "Male", 26, "Chinese", "master student"),
        ("Ann2", "Female", 30, "German", "PhD student"),
    ]
    assert version.read("items").rows() == [("train-101", "a?", "b?"), ("train-102", "c?", "d?")]
    assert result.stored.manifest["missing"] == {"paraphrase": 1}


def test_a_value_outside_the_scale_in_an_object_is_a_problem(tmp_path: Path) -> None:
    records = {**RECORDS, "102": {**RECORDS["102"], "annotations": {"Ann1": "9", "Ann2": "5"}}}
    with pytest.raises(InvalidInputError) as raised:
        ingest(files(tmp_path, records), Store(tmp_path / "data"), "paraphrase")
    assert [(p.type, p.value) for p in raised.value.report.problems] == [("not-in-enum", "9")]


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        (b'{"a": [1, 2,], "b": {"c": 1,},}', {"a": [1, 2], "b": {"c": 1}}),
        (b'{"a": "x,}", "b": "y\\",]",}', {"a": "x,}", "b": 'y",]'}),  # commas in strings stay
    ],
)
def test_a_comma_before_a_closing_bracket_is_read_as_absent(text: bytes, parsed: object) -> None:
    assert _loads_lenient(text) == parsed


def test_other_broken_json_is_still_refused() -> None:
    with pytest.raises(ValueError, match="Expecting"):
        _loads_lenient(b'{"a": 1,, }')
