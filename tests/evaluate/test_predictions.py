"""Reading and validating a predictions file (dices_cli.evaluate.predictions)."""

from __future__ import annotations

import csv
import gzip
import io
import json
import sys
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dices_cli.evaluate import predictions
from dices_cli.evaluate.predictions import (
    InvalidPredictionsError,
    Predictions,
    read_predictions,
    validation,
)
from dices_cli.problems import SHOWN_VALUE_CHARS

ITEMS = (1, 2, 3)
DATA = Path(__file__).resolve().parents[2] / "dices_cli" / "data"


def problems(path: Path | str, one_means: str | None = None) -> list[tuple[object, ...]]:
    """The problem records (type, line, column, value, message) reading `path` raises."""
    with pytest.raises(InvalidPredictionsError) as raised:
        read_predictions(str(path), ITEMS, one_means)
    assert str(raised.value).endswith(" is not a valid predictions file; nothing was evaluated")
    return [
        (str(p.type), p.line, p.column, p.value, p.message) for p in raised.value.report.problems
    ]


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_every_cell_problem_is_a_record(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "p.csv",
        "model,item_id,label,score,text\n"
        "m,1,Yes,0.9,x\n"
        "m,2,safe,0.1,y\n"
        "m,2,No,0.2,y\n"
        "m,99,maybe,1.5,z\n"
        "m,x,1,abc,z\n"
        ",3,,,\n"
        "m,3,No,nan\n",
    )
    assert problems(path) == [
        (
            "duplicate-prediction",
            4,
            "item_id",
            "2",
            "model m already has a prediction for item 2 (line 3)",
        ),
        ("unknown-item", 5, "item_id", "99", "item 99 is not a conversation of the dataset"),
        (
            "not-in-enum",
            5,
            "label",
            "maybe",
            "'maybe' is not a label: give Yes, No or Unsure (Yes = unsafe), or unsafe/safe",
        ),
        ("out-of-range", 5, "score", "1.5", "1.5 is outside [0, 1]; score is a probability"),
        ("not-an-integer", 6, "item_id", "x", "'x' is not an item id (a whole number)"),
        (
            "ambiguous-label",
            6,
            "label",
            "1",
            "'1' is ambiguous as a label: numeric and true/false labels need to be told "
            "whether 1 (true) means unsafe or safe",
        ),
        ("not-a-number", 6, "score", "abc", "'abc' is not a number"),
        ("missing-value", 7, "model", None, "the row names no model"),
        ("missing-value", 7, None, None, "the row gives no prediction: label and score empty"),
        ("wrong-field-count", 8, None, "4", "the record has 4 fields but the header has 5"),
    ]


def test_distributions_must_be_complete_and_sum_to_one(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "p.tsv",
        "item_id\tp_no\tp_yes\tp_unsure\n1\t0.5\t0.4\t0\n2\t0.5\t\t0.5\n3\t0.2\t0.7\t0.1\n",
    )
    assert problems(path) == [
        ("bad-distribution", 2, None, "0.9", "p_no + p_yes + p_unsure sum to 0.9, not 1"),
        ("missing-value", 3, "p_yes", None, "the row gives a distribution without p_yes"),
    ]


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (
            "model,label",
            [
                (
                    "missing-column",
                    1,
                    "item_id",
                    None,
                    "the file has no item_id column, which says which conversation",
                )
            ],
        ),
        (
            "item_id,text",
            [
                (
                    "missing-column",
                    1,
                    None,
                    None,
                    "the file has no label, score or p_no/p_yes column: it predicts nothing",
                )
            ],
        ),
        (
            "item_id,p_no,p_unsure",
            [
                (
                    "missing-column",
                    1,
                    "p_yes",
                    None,
                    "a distribution needs p_no and p_yes; the file has p_no, p_unsure",
                )
            ],
        ),
    ],
)
def test_missing_columns_refuse_the_file(
    header: str, expected: list[tuple[object, ...]], tmp_path: Path
) -> None:
    row = ",".join("1" for _ in header.split(","))
    assert problems(write(tmp_path, "p.csv", f"{header}\n{row}\n")) == expected


def test_a_garbage_file_is_refused_at_its_header(tmp_path: Path) -> None:
    """Without an item_id column nothing more is read: megabytes of junk cost nothing."""
    path = tmp_path / "junk.csv"
    path.write_bytes(b"\x00\xff garbage\n" + bytes(range(256)) * 8192)
    assert [p[0] for p in problems(path)] == ["missing-column", "missing-column"]


def test_an_empty_file_is_refused(tmp_path: Path) -> None:
    assert problems(write(tmp_path, "p.jsonl", "\n\n")) == [
        ("empty-file", None, None, None, "the file is empty: no predictions")
    ]


def test_a_header_without_rows_is_refused(tmp_path: Path) -> None:
    assert problems(write(tmp_path, "p.csv", "item_id,label\n")) == [
        ("no-rows", None, None, None, "the file names its columns but holds no predictions")
    ]


def test_problems_past_the_limit_are_counted_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file of millions of bad rows holds a record for the first few only."""
    monkeypatch.setattr(validation, "MAX_KEPT_PROBLEMS", 3)
    path = write(tmp_path, "p.csv", "item_id,score\n" + "x,2\n" * 5)
    with pytest.raises(InvalidPredictionsError) as raised:
        read_predictions(str(path), ITEMS)
    report = raised.value.report
    assert [(str(p.type), p.line) for p in report.problems] == [
        ("not-an-integer", 2),
        ("out-of-range", 2),
        ("not-an-integer", 3),
    ]
    assert report.error_count == 10
    assert report.rows_rejected == 5
    assert report.summary() == (
        f"{path}: 10 errors; 5 rows read, 5 would be rejected [5 not-an-integer, 5 out-of-range]"
    )


def test_json_lines(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "p.jsonl",
        '{"item_id": 1, "label": true, "score": 0.75}\n\n[1]\n{"item_id": 2, "label": 0}\n',
    )
    assert problems(path, "unsafe") == [
        (
            "invalid-json",
            3,
            None,
            "[1]",
            "the line is JSON but not an object ({...}) of named values",
        )
    ]
    path = write(
        tmp_path,
        "p.jsonl",
        '{"item_id": 1, "label": true, "score": 0.75}\n{"item_id": 2, "label": 0}\n',
    )
    read = read_predictions(str(path), ITEMS, "safe")
    assert read.kinds == {"label", "score"}
    assert read.frame.to_dicts() == [
        dict(
            model="model",
            dataset=None,
            item_id=1,
            label="No",
            score=0.75,
            p_no=None,
            p_yes=None,
            p_unsure=None,
            persona=None,
        ),
        dict(
            model="model",
            dataset=None,
            item_id=2,
            label="Yes",
            score=None,
            p_no=None,
            p_yes=None,
            p_unsure=None,
            persona=None,
        ),
    ]


def test_parquet_lines_count_as_if_it_had_a_header(tmp_path: Path) -> None:
    path = tmp_path / "p.parquet"
    pl.DataFrame({"item_id": [1, 7], "score": [0.5, 0.25]}).write_parquet(path)
    assert problems(path) == [
        ("unknown-item", 3, "item_id", "7", "item 7 is not a conversation of the dataset")
    ]


FRAME = pl.DataFrame(
    {"model": ["a", "b"], "item_id": [1, 1], "label": ["Yes", "No"], "score": [0.5, 0.0]}
)


def _as(kind: str) -> bytes:
    if kind == "parquet":
        buffer = io.BytesIO()
        FRAME.write_parquet(buffer)
        return buffer.getvalue()
    if kind == "jsonl":
        return FRAME.write_ndjson().encode()
    return FRAME.write_csv(separator="\t" if kind == "tsv" else ",").encode()


@pytest.mark.parametrize("kind", ["csv", "tsv", "jsonl", "parquet"])
@pytest.mark.parametrize("compressed", [False, True])
def test_stdin_is_sniffed(kind: str, compressed: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    data = _as(kind)
    if compressed and kind != "parquet":
        data = gzip.compress(data)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    read = read_predictions("-", ITEMS)
    assert read.source == "stdin"
    assert read.frame.select(FRAME.columns).equals(FRAME)


@pytest.mark.parametrize("name", ["p.csv", "p.tsv", "p.tab", "p.jsonl", "p.ndjson", "p.csv.gz"])
def test_the_extension_names_the_format(name: str, tmp_path: Path) -> None:
    kind = {"tab": "tsv", "ndjson": "jsonl", "gz": "csv"}.get(name.rsplit(".", 1)[1], name[2:])
    data = _as(kind)
    (tmp_path / name).write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    read = read_predictions(str(tmp_path / name), ITEMS)
    assert read.source == name
    assert read.frame.select(FRAME.columns).equals(FRAME)


def test_the_demo_predictions_are_valid() -> None:
    with gzip.open(DATA / "dices_350_sample.csv.gz", "rt", encoding="utf-8", newline="") as sample:
        items = {int(row["item_id"]) for row in csv.DictReader(sample)}
    read = read_predictions(str(DATA / "demo-predictions.csv"), items)
    assert isinstance(read, Predictions)
    assert read.kinds == {"label", "score"}
    frame = read.frame
    assert frame.get_column("model").unique(maintain_order=True).to_list() == [
        "five-raters",
        "five-raters-flipped",
    ]
    assert set(frame.get_column("item_id")) == items
    honest = frame.filter(model="five-raters").sort("item_id")
    flipped = frame.filter(model="five-raters-flipped").sort("item_id")
    assert (honest.get_column("score") + flipped.get_column("score")).round(
        6
    ).unique().to_list() == [1.0]
    assert (honest.get_column("label") != flipped.get_column("label")).all()
    assert honest.select((pl.col("score") > 0.5) == (pl.col("label") == "Yes")).to_series().all()


# --- labels and scores, as users spell them -------------------------------------------------

SPELLINGS = {"yes": "Yes", "no": "No", "unsure": "Unsure", "unsafe": "Yes", "safe": "No"}
NUMERIC = {"1": True, "true": True, "0": False, "false": False}


def _cased(draw: st.DrawFn, word: str) -> str:
    flips = draw(st.lists(st.booleans(), min_size=len(word), max_size=len(word)))
    spaced = "".join(c.upper() if f else c for c, f in zip(word, flips, strict=True))
    return draw(st.sampled_from(["", " "])) + spaced + draw(st.sampled_from(["", " "]))


@st.composite
def labels(draw: st.DrawFn) -> tuple[str, str]:
    word = draw(st.sampled_from(sorted(SPELLINGS)))
    return _cased(draw, word), SPELLINGS[word]


@given(cells=st.lists(labels(), min_size=1, max_size=3))
def test_label_spellings(
    cells: list[tuple[str, str]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    path = tmp_path_factory.mktemp("labels") / "p.csv"
    rows = [f'"{cell}",{i}' for i, (cell, _) in enumerate(cells, start=1)]
    path.write_text("label,item_id\n" + "\n".join(rows) + "\n", encoding="utf-8")
    read = read_predictions(str(path), range(1, 4))
    assert read.frame.get_column("label").to_list() == [label for _, label in cells]


@given(data=st.data(), one_means=st.sampled_from(["unsafe", "safe"]))
def test_numeric_labels_need_one_means(
    data: st.DataObject, one_means: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    word = data.draw(st.sampled_from(sorted(NUMERIC)))
    cell = _cased(data.draw, word)
    path = tmp_path_factory.mktemp("numeric") / "p.csv"
    path.write_text(f'item_id,label\n1,"{cell}"\n', encoding="utf-8")
    unsafe = NUMERIC[word] == (one_means == "unsafe")
    read = read_predictions(str(path), ITEMS, one_means)
    assert read.frame.get_column("label").to_list() == ["Yes" if unsafe else "No"]
    assert [p[0] for p in problems(path)] == ["ambiguous-label"]


@given(score=st.floats(allow_nan=False, allow_infinity=True))
def test_scores_must_be_probabilities(
    score: float, tmp_path_factory: pytest.TempPathFactory
) -> None:
    path = tmp_path_factory.mktemp("scores") / "p.jsonl"
    path.write_text(json.dumps({"item_id": 1, "score": score}) + "\n", encoding="utf-8")
    if 0 <= score <= 1:
        assert read_predictions(str(path), ITEMS).frame.get_column("score").to_list() == [score]
    else:
        assert problems(path) == [
            (
                "out-of-range",
                1,
                "score",
                repr(score),
                f"{score!r} is outside [0, 1]; score is a probability",
            )
        ]


def test_each_model_gives_p_unsure_or_not(tmp_path: Path) -> None:
    """Whether a distribution has a third share is each model's choice, not the file's: a
    model of two shares beside one of three is read; a row of a three-share model without
    p_unsure is a problem, and a two-share row sums p_no + p_yes."""
    header = "model,item_id,p_no,p_yes,p_unsure\n"
    valid = "two,1,0.5,0.5,\nthree,1,0.2,0.7,0.1\nthree,2,0.3,0.7,0\n"
    read = read_predictions(str(write(tmp_path, "p.csv", header + valid)), ITEMS)
    assert [(name, set(kinds)) for name, _, kinds in read.models()] == [
        ("two", {"distribution"}),
        ("three", {"distribution", "p_unsure"}),
    ]
    assert read.kinds == {"distribution", "p_unsure"}
    path = write(tmp_path, "q.csv", header + valid + "two,2,0.4,0.5,\nthree,3,0.3,0.7,\n")
    assert problems(path) == [
        ("bad-distribution", 5, None, "0.9", "p_no + p_yes sum to 0.9, not 1"),
        (
            "missing-value",
            6,
            "p_unsure",
            None,
            "the row gives a distribution without p_unsure, which other rows of its model give",
        ),
    ]


def test_a_column_a_model_leaves_empty_is_no_kind_of_its_predictions(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "p.csv",
        "model,item_id,label,score,p_no,p_yes\n"
        "labels,1,Yes,,,\nlabels,2,No,,,\n"
        "scores,1,,0.5,,\n"
        "both,1,Unsure,,,\nboth,2,,0.25,,\n"
        "shares,3,,,0.25,0.75\n",
    )
    read = read_predictions(str(path), ITEMS)
    assert [(name, set(kinds)) for name, _, kinds in read.models()] == [
        ("labels", {"label"}),
        ("scores", {"score"}),
        ("both", {"label", "score"}),
        ("shares", {"distribution"}),
    ]
    assert read.kinds == {"label", "score", "distribution"}
    assert set(read.of("350").kinds) == set(read.kinds)  # rows of no named dataset are kept
    only = write(tmp_path, "q.csv", "item_id,label,score\n1,Yes,\n2,No,\n")
    assert read_predictions(str(only), ITEMS).kinds == {"label"}


def test_a_parquet_cell_too_long_for_a_prediction_stops_the_reading(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    long = "Yes" + "s" * (2 * predictions.MAX_CELL_BYTES - 3)
    table = pa.table({"item_id": [1, 2, 3], "label": ["Yes", long, long]})
    pq.write_table(table, tmp_path / "p.parquet")
    assert problems(tmp_path / "p.parquet") == [
        (
            "cell-too-long",
            3,
            "label",
            long[:SHOWN_VALUE_CHARS],
            "the label cell is 8 KiB long, and a label is a few bytes (at most 4096 here); "
            "reading stopped at this row",
        )
    ]
