"""A long CSV of ratings stored in one streaming pass (dices_cli.formats.declared.stream):
the same tables as the file read whole, and the whole read whenever a record needs a
problem or a warning."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from dices_cli.errors import InvalidInputError
from dices_cli.families.declaration import DatasetDeclaration, read_declaration
from dices_cli.formats.declared.build import build
from dices_cli.formats.declared.ingest import SCRATCH_PREFIX, read_all
from dices_cli.formats.declared.stream import RATINGS_FILE, stream
from dices_cli.formats.ingest import IngestResult, ingest
from dices_cli.read.source import open_source
from dices_cli.store.datasets import Store

# Two-column item keys, a named scale and a numeric one with missing codes, an answer, a
# rater whose first row has no age (the next gives it), numeric attributes (stored as
# numbers), spaces around keys, and the split from the file's name.
HEADER = "corpus,item,rater,text,words,harm,score,why,gender,age"
ROWS = [
    "a,1,r1,hello,2,yes,3,rude,woman,",
    "a,1, r2 ,hello,2,no,-1,,man,31",
    "a,2,r1,bye,1,unsure,4.5,,woman,24",
    "b,1,r2,hm,1,,2,,man,31",
    "b,1,r3,hm,1,no,1,x,,58",
    "a,2,r3,bye,1,yes,NA,,nonbinary,58",
]
DECLARATION = """
[[dataset]]
name = "streamy"
title = "Streamy"
[[dataset.file]]
role = "ratings"
item = ["corpus", "item"]
rater = "rater"
labels = ["harm", "score"]
text = ["text"]
item_attributes = ["words"]
rater_attributes = ["gender", "age"]
answers = ["why"]
from_name = { split = "_(\\\\w+)\\\\." }
[dataset.scales.harm]
kind = "nominal"
values = ["no", "unsure", "yes"]
positive = ["yes"]
[dataset.scales.score]
kind = "ordinal"
values = [1, 2, 3, 4, 4.5, 5]
missing = [-1, "NA"]
positive = [4, 4.5, 5]
"""


pytestmark = pytest.mark.usefixtures("registry_as_it_was")


def declared(tmp_path: Path) -> tuple[Path, DatasetDeclaration]:
    path = tmp_path / "streamy.toml"
    path.write_text(DECLARATION, encoding="utf-8")
    (one,) = read_declaration(path)
    return path, one


def write(tmp_path: Path, rows: list[str], separator: str = ",", name: str = "x_train") -> Path:
    suffix = "tsv" if separator == "\t" else "csv"
    path = tmp_path / f"{name}.{suffix}"
    lines = [HEADER, *rows]
    path.write_text("\n".join(line.replace(",", separator) for line in lines) + "\n")
    return path


def whole(declaration: DatasetDeclaration, path: Path) -> dict[str, pl.DataFrame]:
    """The tables of `path` read whole (`read_all`, `build`)."""
    with open_source(path) as source:
        files = read_all(declaration, [source], [source.read(4096)])
        tables = build(declaration, files).tables
    return {name: frame for name, frame in tables.items() if isinstance(frame, pl.DataFrame)}


def ingested_as_the_whole_read_builds(
    tmp_path: Path, rows: list[str], separator: str = ","
) -> tuple[Store, IngestResult]:
    """`rows` ingested by the streaming pass, after checking that every stored table equals
    what the whole read builds and that the three raters keep their attributes."""
    path, declaration = declared(tmp_path)
    data = write(tmp_path, rows, separator)
    expected = whole(declaration, data)
    store = Store(tmp_path / "data")
    (result,) = ingest([data], store, declaration=path)
    version = store.open("streamy")
    for table in ("items", "raters", "ratings"):
        assert_frame_equal(version.read(table), expected[table])
    assert version.read("raters").rows() == [
        ("r1", "woman", 24),
        ("r2", "man", 31),
        ("r3", "nonbinary", 58),
    ]
    return store, result


@pytest.mark.parametrize("separator", [",", "\t"])
def test_one_pass_stores_what_the_whole_read_builds(tmp_path: Path, separator: str) -> None:
    store, result = ingested_as_the_whole_read_builds(tmp_path, ROWS, separator)
    version = store.open("streamy")
    assert version.read("items").rows() == [
        ("a-1", "hello", 2),
        ("a-2", "bye", 1),
        ("b-1", "hm", 1),
    ]
    manifest = result.stored.manifest
    assert manifest["counts"] == {"items": 3, "raters": 3, "ratings": 6}
    assert manifest["missing"] == {"harm": 1, "score": 2}
    assert manifest["rows"] == {"read": 6, "rejected": 0}
    assert not list(store.root.glob(f"{SCRATCH_PREFIX}*"))


def test_the_pass_writes_the_ratings_and_counts_the_records(tmp_path: Path) -> None:
    _, declaration = declared(tmp_path)
    data = write(tmp_path, ROWS)
    with open_source(data) as source:
        streamed = stream(declaration, declaration.files[0], source, "csv", tmp_path)
    assert streamed is not None
    built, records = streamed
    assert records == 6
    assert built.tables["ratings"] == tmp_path / RATINGS_FILE
    ratings = pl.read_parquet(tmp_path / RATINGS_FILE)
    assert ratings.columns == [
        "item_id",
        "rater_id",
        "harm",
        "score",
        "harm_positive",
        "score_positive",
        "why",
    ]
    assert ratings["score"].to_list() == [3.0, None, 4.5, 2.0, 1.0, None]
    assert ratings["harm_positive"].to_list() == [True, False, False, None, False, True]


# Each breaks one rule the whole read reports on a record: the pass keeps nothing.
BROKEN = {
    "a label outside its scale": ([*ROWS[:2], "a,2,r1,bye,1,maybe,3,,woman,24"], "not-in-enum"),
    "a row without its rater": ([*ROWS[:2], "a,2,,bye,1,no,3,,woman,24"], "missing-value"),
    "a second rating by a rater": ([*ROWS[:2], "a,1,r1,hello,2,no,3,,woman,"], "duplicate-rating"),
    "a rater's attribute changing": (
        [*ROWS[:2], "a,2,r1,bye,1,no,3,,man,24"],
        "inconsistent-rater",
    ),
    "an item's text changing": (
        [*ROWS[:2], "a,1,r3,other,2,no,3,,man,24"],
        "inconsistent-conversation",
    ),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_record_that_needs_a_problem_is_left_to_the_whole_read(tmp_path: Path, case: str) -> None:
    rows, problem = BROKEN[case]
    path, declaration = declared(tmp_path)
    data = write(tmp_path, rows)
    with open_source(data) as source:
        assert stream(declaration, declaration.files[0], source, "csv", tmp_path) is None
    assert not (tmp_path / RATINGS_FILE).exists()
    store = Store(tmp_path / "data")
    try:
        (result,) = ingest([data], store, declaration=path)
        kinds = [p.type for p in result.report.problems]
    except InvalidInputError as error:
        kinds = [p.type for p in error.report.problems]
    assert kinds == [problem]


def test_a_file_without_a_declared_column_is_left_to_the_whole_read(tmp_path: Path) -> None:
    _, declaration = declared(tmp_path)
    data = tmp_path / "x_train.csv"
    data.write_text("corpus,item,rater\na,1,r1\n")
    with open_source(data) as source:
        assert stream(declaration, declaration.files[0], source, "csv", tmp_path) is None


@pytest.mark.parametrize("row", ["a,3,r1,x,1,no,3,,woman,24,extra", "a,3,r1,x"])
def test_a_record_polars_would_pad_or_refuse_is_left_to_the_whole_read(
    tmp_path: Path, row: str
) -> None:
    _, declaration = declared(tmp_path)
    data = write(tmp_path, [*ROWS, row])
    with open_source(data) as source:
        assert stream(declaration, declaration.files[0], source, "csv", tmp_path) is None
    assert not (tmp_path / RATINGS_FILE).exists()


# One item column: each batch is read first as it is, and stripped only when a cell needs it.
SINGLE = """
[[dataset]]
name = "single"
title = "Single"
[[dataset.file]]
role = "ratings"
item = "item"
rater = "rater"
labels = ["harm", "score"]
rater_attributes = ["gender"]
[dataset.scales.harm]
kind = "nominal"
values = ["no", "yes"]
[dataset.scales.score]
kind = "ordinal"
values = [1, 2, 3]
missing = ["NA"]
"""
SINGLE_ROWS = ["i1,r1,yes,3,woman", "i1,r2,no,NA,man", "i2,r1,no,1,woman", "i2,r2,,2,man"]
# Each puts spaces around one cell of the last batch (two rows per batch below).
SPACED = {
    "none": ("i3,r3,yes,1,", "i3,r1,no,2,woman"),
    "rater": ("i3,r3,yes,1,", "i3, r1 ,no,2,woman"),
    "item": ("i3,r3,yes,1,", "i3 ,r1,no,2,woman"),
    "named label": ("i3,r3,yes,1,", "i3,r1,\tno,2,woman"),
    "numeric label": ("i3,r3,yes, 1,", "i3,r1,no,2,woman"),
    "missing code": ("i3,r3,yes,NA ,", "i3,r1,no,2,woman"),
}


@pytest.mark.parametrize("case", list(SPACED))
def test_a_batch_is_stripped_only_when_a_cell_needs_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    from dices_cli.formats.declared import stream as streaming

    monkeypatch.setattr(streaming, "BATCH_ROWS", 2)
    stripped: list[bool] = []
    rows_of = streaming._Reading._rows

    def spied(reading: object, frame: pl.DataFrame, offset: int, strip: bool) -> pl.DataFrame:
        if frame.height:
            stripped.append(strip)
        return rows_of(reading, frame, offset, strip)  # type: ignore[arg-type]

    monkeypatch.setattr(streaming._Reading, "_rows", spied)
    path = tmp_path / "single.toml"
    path.write_text(SINGLE, encoding="utf-8")
    (declaration,) = read_declaration(path)
    data = tmp_path / "single.csv"
    data.write_text("\n".join(["item,rater,harm,score,gender", *SINGLE_ROWS, *SPACED[case]]) + "\n")
    expected = whole(declaration, data)
    with open_source(data) as source:
        streamed = stream(declaration, declaration.files[0], source, "csv", tmp_path)
    assert streamed is not None
    built, records = streamed
    assert records == 6
    assert_frame_equal(pl.read_parquet(tmp_path / RATINGS_FILE), expected["ratings"])
    for table in ("items", "raters"):
        assert_frame_equal(built.tables[table], expected[table])  # type: ignore[arg-type]
    assert built.tables["raters"].rows() == [  # type: ignore[union-attr]
        ("r1", "woman"),
        ("r2", "man"),
        ("r3", None),
    ]
    assert stripped == [False, False, False] if case == "none" else [False, False, False, True]


@pytest.mark.parametrize("line_end", ["\n", "\r\n"])
def test_quoted_cells_are_streamed_as_the_whole_read_reads_them(
    tmp_path: Path, line_end: str
) -> None:
    _, declaration = declared(tmp_path)
    quoted = [
        row.replace(",hello,", ',"hel,lo ""x""\nend",').replace(",bye,", ',"b""y""e",')
        for row in ROWS
    ]
    data = tmp_path / "x_train.csv"
    data.write_bytes((line_end.join([HEADER, *quoted]) + line_end).encode())
    expected = whole(declaration, data)
    with open_source(data) as source:
        streamed = stream(declaration, declaration.files[0], source, "csv", tmp_path)
    assert streamed is not None
    assert_frame_equal(pl.read_parquet(tmp_path / RATINGS_FILE), expected["ratings"])
    assert_frame_equal(streamed[0].tables["items"], expected["items"])  # type: ignore[arg-type]
    assert expected["items"]["text"].to_list() == ['hel,lo "x"\nend', 'b"y"e', "hm"]
