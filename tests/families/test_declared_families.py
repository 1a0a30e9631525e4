"""Datasets declared as TOML files: the declaration's checks, each format read into one
model, problem records with their lines, and a fake family found by every command."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

import dices_cli
from dices_cli.cli.main import app
from dices_cli.errors import InvalidInputError, UsageError
from dices_cli.families import FAMILIES
from dices_cli.families.declaration import DeclarationError, parse_declaration
from dices_cli.families.registered import BUILT_IN
from dices_cli.formats.ingest import ingest
from dices_cli.store.datasets import Store

# Six ratings of three items by two raters, with a missing code (-1) and two attributes.
LONG = [
    ("i1", "r1", "hello", "3", "woman", "18-24"),
    ("i1", "r2", "hello", "1", "man", "25-34"),
    ("i2", "r1", "bye", "5", "woman", "18-24"),
    ("i2", "r2", "bye", "-1", "man", "25-34"),
    ("i3", "r1", "hm", "2", "woman", "18-24"),
    ("i3", "r2", "hm", "4", "man", "25-34"),
]
HEADER = ("item_id", "rater_id", "text", "toxicity", "gender", "age")
SCALE = """
[dataset.scales.toxicity]
kind = "ordinal"
values = [1, 2, 3, 4, 5]
missing = [-1]
positive = [3, 4, 5]
"""


pytestmark = pytest.mark.usefixtures("registry_as_it_was")


def declaration(tmp_path: Path, name: str = "toy", **file: str) -> Path:
    keys = {
        "item": '"item_id"',
        "rater": '"rater_id"',
        "labels": '["toxicity"]',
        "text": '["text"]',
        "rater_attributes": '["gender", "age"]',
        **file,
    }
    body = "\n".join(f"{k} = {v}" for k, v in keys.items())
    path = tmp_path / f"{name}.toml"
    path.write_text(
        f'[[dataset]]\nname = "{name}"\ntitle = "Toy"\n'
        "published = { items = 3, raters = 2, ratings = 6 }\n"
        f"[[dataset.file]]\n{body}\n{SCALE}",
        encoding="utf-8",
    )
    return path


def write_long(path: Path, separator: str = ",") -> Path:
    lines = [separator.join(HEADER), *(separator.join(row) for row in LONG)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


EXPECTED_RATINGS = [
    ("i1", "r1", 3, True),
    ("i1", "r2", 1, False),
    ("i2", "r1", 5, True),
    ("i2", "r2", None, None),
    ("i3", "r1", 2, False),
    ("i3", "r2", 4, True),
]


def stored(store: Store, name: str = "toy") -> dict[str, pl.DataFrame]:
    version = store.open(name)
    return {table: version.read(table) for table in ("items", "raters", "ratings")}


def check_tables(tables: dict[str, pl.DataFrame]) -> None:
    ratings = tables["ratings"].select("item_id", "rater_id", "toxicity", "toxicity_positive")
    assert sorted(ratings.rows(), key=str) == sorted(EXPECTED_RATINGS, key=str)
    assert tables["raters"].sort("rater_id").rows() == [
        ("r1", "woman", "18-24"),
        ("r2", "man", "25-34"),
    ]
    assert tables["items"].sort("item_id").rows() == [("i1", "hello"), ("i2", "bye"), ("i3", "hm")]


@pytest.mark.parametrize("fmt", ["csv", "tsv", "jsonl", "parquet"])
def test_each_long_format_maps_into_one_model(tmp_path: Path, fmt: str) -> None:
    if fmt in ("csv", "tsv"):
        data = write_long(tmp_path / f"toy.{fmt}", "\t" if fmt == "tsv" else ",")
    elif fmt == "jsonl":
        data = tmp_path / "toy.jsonl"
        data.write_text("".join(json.dumps(dict(zip(HEADER, r, strict=True))) + "\n" for r in LONG))
    else:
        data = tmp_path / "toy.parquet"
        pl.DataFrame(LONG, schema=list(HEADER), orient="row").write_parquet(data)
    store = Store(tmp_path / "data")
    (result,) = ingest([data], store, declaration=declaration(tmp_path))
    check_tables(stored(store))
    assert result.stored.manifest["counts"] == {"items": 3, "raters": 2, "ratings": 6}
    assert result.stored.manifest["missing"] == {"toxicity": 1}


def test_json_lists_layout_with_split_from_the_name(tmp_path: Path) -> None:
    records = {
        "1": {"text": "hello", "annotators": "r1,r2", "annotations": "3,1"},
        "2": {"text": "bye", "annotators": "r1,r2", "annotations": "5,-1"},
    }
    data = tmp_path / "toy_train.json"
    data.write_text(json.dumps(records))
    path = declaration(
        tmp_path,
        item='["split", "key"]',
        rater='"annotators"',
        labels='{ toxicity = "annotations" }',
        layout='"lists"',
        format='"json"',
        from_name='{ split = "_(train|dev)\\\\.json$" }',
        rater_attributes="[]",
    )
    store = Store(tmp_path / "data")
    ingest([data], store, declaration=path)
    ratings = stored(store)["ratings"]
    assert ratings.select("item_id", "rater_id", "toxicity").rows() == [
        ("train-1", "r1", 3),
        ("train-1", "r2", 1),
        ("train-2", "r1", 5),
        ("train-2", "r2", None),
    ]


def test_several_files_joined_by_key(tmp_path: Path) -> None:
    write_long(tmp_path / "ratings.csv")
    (tmp_path / "raters.csv").write_text("rater_id,country\nr1,IN\nr2,US\n")
    path = tmp_path / "joined.toml"
    path.write_text(
        '[[dataset]]\nname = "toy"\n'
        '[[dataset.file]]\nrole = "raters"\nmatch = "raters*"\nrater = "rater_id"\n'
        'rater_attributes = ["country"]\n'
        '[[dataset.file]]\nmatch = "ratings*"\nitem = "item_id"\nrater = "rater_id"\n'
        f'labels = ["toxicity"]\n{SCALE}'
    )
    store = Store(tmp_path / "data")
    ingest([tmp_path / "raters.csv", tmp_path / "ratings.csv"], store, declaration=path)
    assert stored(store)["raters"].rows() == [("r1", "IN"), ("r2", "US")]


def test_a_file_that_breaks_its_declaration_gets_problem_records_with_lines(
    tmp_path: Path,
) -> None:
    data = tmp_path / "toy.csv"
    # The cell with a line break moves every later record's line: line 4 is record 3's.
    data.write_text(
        "item_id,rater_id,text,toxicity,gender,age\n"
        'i1,r1,"two\nlines",3,woman,18-24\n'
        "i2,r1,x,9,woman,18-24\n"
        ",r2,x,1,man,25-34\n"
    )
    with pytest.raises(InvalidInputError) as raised:
        ingest([data], Store(tmp_path / "data"), declaration=declaration(tmp_path))
    problems = [(p.type, p.line, p.value) for p in raised.value.report.problems]
    assert problems == [("not-in-enum", 4, "9"), ("missing-value", 5, None)]


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("", "dataset is missing"),
        ('[[dataset]]\nname = "Bad Name"', "dataset[0].name is 'Bad Name'"),
        ('[[dataset]]\nname = "x"\n[[dataset.file]]\nitem = "i"\nrater = "r"\nlabels = ["y"]',
         "dataset 'x'.scales.y is missing"),
        ('[[dataset]]\nname = "x"\n[[dataset.file]]\nitem = "i"\nrater = "r"\nlabels = ["y"]\n'
         '[dataset.scales.y]\nkind = "binary"\nvalues = ["a", "b"]',
         "dataset 'x'.scales.y.positive is missing"),
        ('[[dataset]]\nname = "x"\nfile = []\ncolour = 1', "dataset[0].colour is not a key"),
    ],
)  # fmt: skip
def test_bad_declarations_name_the_key(text: str, names: str) -> None:
    import tomllib

    with pytest.raises(DeclarationError, match=re.escape(f"my.toml: {names}")):
        parse_declaration(tomllib.loads(text), "my.toml")


def test_a_bad_declaration_is_a_usage_error_on_ingest(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[[dataset]]\nname = 3\n")
    with pytest.raises(UsageError, match=re.escape("dataset[0].name is 3, not text")):
        ingest([write_long(tmp_path / "toy.csv")], Store(tmp_path / "d"), declaration=bad)


def test_a_fake_family_is_found_by_info_sql_and_the_api(tmp_path: Path) -> None:
    data = tmp_path / "data"
    runner = CliRunner()
    ingested = runner.invoke(
        app,
        ["ingest", str(write_long(tmp_path / "toy.csv")), "--declaration",
         str(declaration(tmp_path, "fake_family")), "--data", str(data)],
    )  # fmt: skip
    assert ingested.exit_code == 0, ingested.output
    FAMILIES.pop("fake_family")  # a later process knows it from the data directory alone
    assert "fake_family" not in FAMILIES
    info = runner.invoke(app, ["info", "--data", str(data), "-f", "csv"])
    assert info.exit_code == 0, info.output
    assert "fake_family,3,2,6,0,toy.csv" in info.stdout
    query = "SELECT rater_id, count(*) AS n FROM ratings GROUP BY 1 ORDER BY 1"
    sql = runner.invoke(app, ["sql", "-d", "fake_family", query, "--data", str(data), "-f", "csv"])
    assert sql.exit_code == 0, sql.output
    assert sql.stdout == "rater_id,n\nr1,3\nr2,3\n"
    frame = dices_cli.open(data).sql(query, dataset="fake_family")
    assert frame.rows() == [("r1", 3), ("r2", 3)]


def test_every_built_in_declaration_parses_with_pinned_sources() -> None:
    declared = [
        f.declared
        for f in FAMILIES.values()
        if f.declared is not None and Path(f.declared.origin).parent == BUILT_IN
    ]
    names = {d.name for d in declared}
    assert {"popquorn_offensiveness", "hs_brexit", "armis", "md_agreement", "convabuse"} <= names
    assert "d3code" in names
    for one in declared:
        for spec in one.files:
            assert spec.source is not None and spec.source.commit, (one.name, spec.match)
            assert (spec.source.sha256 is None) == (spec.source.size is None)
            assert spec.source.sha256 is not None or spec.source.note, (one.name, spec.match)


def test_a_header_the_csv_module_refuses_is_recognised_by_no_declaration(tmp_path: Path) -> None:
    """A file whose first line holds a lone CR (a truncated, spliced file) is refused as not
    DICES data, never "a bug in dices" while the declared families look at it."""
    from typer.testing import CliRunner

    from dices_cli.cli.main import app

    broken = tmp_path / "broken.csv"
    broken.write_bytes(b"\rid,rater_id,rater_gender")
    result = CliRunner().invoke(app, ["validate", str(broken)])
    assert result.exit_code == 1
    assert "bug in dices" not in result.output
