"""`dices sql -d prosocial`: ProsocialDialog's views (items, ratings) in the same locked-down
sandbox as DICES's, reading only the stored files a statement names.

Every sandbox case of tests/queries/test_sql_sandbox.py and
tests/hostile/test_hostile_sql.py is taken from
those tests' own parameters (`cases_of`), not copied, and refused here the same way; each
runs from a directory holding only a canary file, with a planted `.tmp` (both layouts).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from typer.testing import CliRunner, Result

from dices_cli.cli.main import app
from dices_cli.queries import engine
from dices_cli.runs.demo import sample_paths
from tests.conftest import CappedRunner
from tests.hostile import test_hostile_sql as hostile
from tests.hostile.test_hostile_sql import (  # noqa: F401 (fixtures, used by name)
    CANARY_TEXT,
    canary,
    temp_canary,
)
from tests.queries import test_sql_sandbox as sandbox_tests
from tests.queries.test_sandbox_tempdir import DISABLED, assert_no_canary

REPO = Path(__file__).resolve().parents[2]
READ_ONLY = "dices sql is read-only"


@pytest.fixture(scope="module")
def prosocial(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300 synthetic train lines and 100 test lines (seed 5), ingested: the folder holding
    train.json, test.json and the data directory `data`. Read-only."""
    folder = tmp_path_factory.mktemp("prosocial")
    for split, rows in (("train", 300), ("test", 100)):
        subprocess.run(
            [
                *(sys.executable, str(REPO / "scripts" / "make_prosocial.py"), str(folder)),
                *("--split", split, "--rows", str(rows), "--seed", "5"),
            ],
            check=True,
        )
    arguments = ["ingest", *(str(folder / f"{s}.json") for s in ("train", "test"))]
    result = CliRunner().invoke(app, [*arguments, "--data", str(folder / "data")])
    assert result.exit_code == 0, result.output
    return folder


def sql(data: Path, statement: str, *options: str) -> Result:
    result = CappedRunner().invoke(
        app, ["sql", statement, "--data", str(data), "-d", "prosocial", *options]
    )
    assert_no_canary(result)
    return result


def published(folder: Path) -> pl.DataFrame:
    """The JSON Lines as they came, one row per utterance, with its split."""
    return pl.concat(
        pl.read_ndjson(folder / f"{split}.json").with_columns(split=pl.lit(split))
        for split in ("train", "test")
    )


# --- statements over the views -----------------------------------------------------------


def test_a_count_per_source(prosocial: Path) -> None:
    result = sql(
        prosocial / "data", "select source, count(*) AS n from items group by 1 order by 1"
    )
    assert (result.exit_code, result.stderr) == (0, "")
    # The ENUM's order, as the family declares it.
    assert (
        result.stdout == "source,n\nsocialchemistry,180\nsbic,96\nethics_amt,82\nethics_reddit,42\n"
    )
    counts = published(prosocial)["source"].value_counts()
    assert {row["source"]: row["count"] for row in counts.iter_rows(named=True)} == {
        "socialchemistry": 180,
        "sbic": 96,
        "ethics_amt": 82,
        "ethics_reddit": 42,
    }


def test_annotations_per_split_agree_with_the_json_lines(prosocial: Path) -> None:
    statement = (
        "SELECT split, annotation, count(*) AS n FROM ratings JOIN items USING (item_id) "
        "GROUP BY ALL ORDER BY split, annotation"
    )
    result = sql(prosocial / "data", statement, "-f", "jsonl")
    assert (result.exit_code, result.stderr) == (0, "")
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    expected = (
        published(prosocial)
        .explode("safety_annotations")
        .group_by("split", "safety_annotations")
        .len()
    )
    assert {(r["split"], r["annotation"]): r["n"] for r in rows} == {
        (r["split"], r["safety_annotations"]): r["len"] for r in expected.iter_rows(named=True)
    }
    assert sum(r["n"] for r in rows) == 1200
    assert [r["split"] for r in rows] == ["train"] * 3 + ["test"] * 3  # the split ENUM's order


def test_the_first_utterance_and_its_three_annotations(prosocial: Path) -> None:
    first = json.loads((prosocial / "train.json").read_text(encoding="utf-8").splitlines()[0])
    statement = (
        "SELECT dataset, item_id, response, annotator_slot, annotation, reason "
        "FROM items JOIN ratings USING (dataset, item_id) "
        "WHERE item_id = 'train-0-0' ORDER BY annotator_slot"
    )
    result = sql(prosocial / "data", statement, "-f", "json")
    assert (result.exit_code, result.stderr) == (0, "")
    assert json.loads(result.stdout) == [
        {
            "dataset": "prosocial",
            "item_id": "train-0-0",
            "response": first["response"],
            "annotator_slot": slot,
            "annotation": annotation,
            "reason": reason,
        }
        for slot, (annotation, reason) in enumerate(
            zip(first["safety_annotations"], first["safety_annotation_reasons"], strict=True)
        )
    ]


SCHEMA = """view,column,type,values
items,dataset,ENUM,prosocial
items,item_id,VARCHAR,
items,split,ENUM,train|valid|test
items,dialogue_id,BIGINT,
items,response_id,INTEGER,
items,context,VARCHAR,
items,response,VARCHAR,
items,rots,VARCHAR[],
items,safety_label,ENUM,{labels}
items,safety_label_recomputed,ENUM,{labels}
items,source,ENUM,socialchemistry|sbic|ethics_amt|ethics_reddit
items,etc,VARCHAR,
items,episode_done,BOOLEAN,
ratings,dataset,ENUM,prosocial
ratings,item_id,VARCHAR,
ratings,annotator_slot,UTINYINT,
ratings,annotation,ENUM,casual|needs caution|needs intervention
ratings,reason,VARCHAR,
""".format(
    labels="__casual__|__possibly_needs_caution__|__probably_needs_caution__|"
    "__needs_caution__|__needs_intervention__"
)


def test_the_schema_lists_the_views_columns_types_and_enum_values(prosocial: Path) -> None:
    result = CliRunner().invoke(
        app, ["sql", "-d", "prosocial", "--schema", "--data", str(prosocial / "data"), "-f", "csv"]
    )
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == SCHEMA


def test_show_tables_lists_the_views_only(prosocial: Path) -> None:
    result = sql(prosocial / "data", "SHOW TABLES")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "name\nitems\nratings\n", "")


def test_a_table_of_your_own(prosocial: Path, tmp_path: Path) -> None:
    predictions = tmp_path / "predictions.csv"
    predictions.write_text("item_id,label\ntrain-0-0,Yes\ntest-0-0,No\nnone-9-9,No\n")
    statement = (
        "SELECT p.item_id, label, split FROM p JOIN items USING (item_id) ORDER BY p.item_id"
    )
    result = sql(prosocial / "data", statement, "--table", f"p={predictions}")
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == "item_id,label,split\ntest-0-0,No,test\ntrain-0-0,Yes,train\n"
    schema = CliRunner().invoke(
        app,
        [
            *("sql", "-d", "prosocial", "--schema", "--table", f"p={predictions}"),
            *("--data", str(prosocial / "data"), "-f", "csv"),
        ],
    )
    assert (schema.exit_code, schema.stderr) == (0, "")
    items, ratings = SCHEMA.split("ratings,dataset", 1)  # tables in name order
    assert schema.stdout == f"{items}p,item_id,VARCHAR,\np,label,VARCHAR,\nratings,dataset{ratings}"


@pytest.mark.parametrize(
    ("statement", "opened"),
    [
        ("SELECT count(*) AS n FROM items", ("n\n400\n", ["items.parquet"])),
        (
            "SELECT count(*) AS n FROM internal.ratings_prosocial",
            ("n\n1200\n", ["ratings.parquet"]),
        ),
        ("SHOW TABLES", ("name\nitems\nratings\n", ["items.parquet", "ratings.parquet"])),
    ],
)
def test_a_statement_opens_only_the_stored_files_it_reads(
    statement: str,
    opened: tuple[str, list[str]],
    prosocial: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Like DICES's: only those are made views, and only those may be read."""
    registered: list[str] = []
    stored_view = engine.stored_view

    def record(name: str) -> str:
        registered.append(name.removesuffix("_prosocial") + ".parquet")
        return stored_view(name)

    monkeypatch.setattr(engine, "stored_view", record)
    result = sql(prosocial / "data", statement, "-f", "csv")
    assert (result.exit_code, result.stderr) == (0, "")
    assert (result.stdout, sorted(registered)) == opened


# --- the sandbox: every case of the DICES tests, with -d prosocial -----------------------


def cases_of(test: Callable[..., None]) -> list[Any]:
    """The values another test is parametrized over (its one @pytest.mark.parametrize), so
    that a case added there is run here too."""
    (mark,) = [mark for mark in getattr(test, "pytestmark", []) if mark.name == "parametrize"]
    return list(mark.args[1])


def _refused_kind(statement: str, kind: str) -> tuple[str, int, str]:
    return statement, 1, f"Error: only SELECT is allowed here, not {kind}; {READ_ONLY}\n"


def _several(statement: str) -> tuple[str, int, str]:
    return statement, 1, f"Error: give exactly one statement (got {statement.count(';') + 1})\n"


# (statement, exit code, the whole stderr), the statement a template of {canary}, {dir}.
REFUSED_EXACTLY = [
    *(
        _refused_kind(*case)
        for case in cases_of(sandbox_tests.test_statements_other_than_select_are_refused)
    ),
    *(_refused_kind(*case) for case in cases_of(hostile.test_other_statements_are_refused)),
    *map(_several, cases_of(sandbox_tests.test_several_statements_are_refused)),
    *map(_several, cases_of(hostile.test_a_second_statement_behind_a_comment_is_refused)),
    (
        "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t) SELECT count(*) FROM t",
        1,
        "Error: the query ran longer than 0.5 s and was stopped\n",
    ),
]


def _parquet(data: Path) -> Path:
    """A copy of a stored Parquet file, beside the data directory: no statement may read it."""
    copy = data.parent / "ratings-copy.parquet"
    if not copy.exists():
        shutil.copyfile(data / "prosocial" / "ratings.parquet", copy)
    return copy


def run_hostile(data: Path, template: str, *options: str) -> Result:
    """`template` with {canary}, {dir} and {parquet} filled in, run from the directory of the
    `canary` fixture (test_hostile_sql.py), which holds only canary.csv."""
    canary_path = Path.cwd() / "canary.csv"
    statement = template.format(canary=canary_path, dir=canary_path.parent, parquet=_parquet(data))
    return sql(data, statement, *options)


@pytest.mark.parametrize(("statement", "exit_code", "stderr"), REFUSED_EXACTLY)
@pytest.mark.usefixtures("temp_canary")
def test_what_the_dices_sandbox_refuses_is_refused(
    statement: str, exit_code: int, stderr: str, prosocial: Path
) -> None:
    result = run_hostile(prosocial / "data", statement, "--timeout", "0.5")
    assert (result.exit_code, result.stdout, result.stderr) == (exit_code, "", stderr)


FILE_READERS = [
    *cases_of(sandbox_tests.test_reading_files_is_refused),
    *cases_of(hostile.test_urls_and_other_file_readers_are_refused),
]


@pytest.mark.parametrize("function", FILE_READERS)
@pytest.mark.usefixtures("temp_canary")
def test_files_and_urls_are_not_read(function: str, prosocial: Path) -> None:
    assert _parquet(prosocial / "data").is_file()
    result = run_hostile(prosocial / "data", "SELECT * FROM " + function)
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr.startswith("Error: the query failed: Permission Error: ")
    assert DISABLED in result.stderr
    assert CANARY_TEXT.split()[1] not in result.stderr


@pytest.mark.parametrize("path", cases_of(sandbox_tests.test_a_file_name_as_a_table_is_not_read))
@pytest.mark.usefixtures("temp_canary")
def test_a_file_name_as_a_table_is_not_read(path: str, prosocial: Path) -> None:
    result = run_hostile(prosocial / "data", f"SELECT * FROM '{path}'")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr.startswith("Error: the query failed: ")
    assert "root:" not in result.stderr
    assert CANARY_TEXT.split()[1] not in result.stderr


@pytest.mark.parametrize(
    ("function", "extension"), cases_of(hostile.test_extension_functions_are_not_loaded)
)
@pytest.mark.usefixtures("temp_canary")
def test_extension_functions_are_not_loaded(function: str, extension: str, prosocial: Path) -> None:
    name = function.split("(")[0]
    result = run_hostile(prosocial / "data", "SELECT * FROM " + function)
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr.startswith(
        f'Error: the query failed: Catalog Error: Table Function with name "{name}" is not in '
        f"the catalog, but it exists in the {extension} extension."
    )


@pytest.mark.parametrize(
    ("statement", "output"), cases_of(hostile.test_a_statement_in_a_string_or_comment_is_only_text)
)
@pytest.mark.usefixtures("temp_canary")
def test_a_statement_in_a_string_or_comment_is_only_text(
    statement: str, output: str, prosocial: Path
) -> None:
    result = sql(prosocial / "data", statement)
    assert (result.exit_code, result.stdout, result.stderr) == (0, output, "")


@pytest.mark.usefixtures("temp_canary")
def test_the_connection_is_locked(prosocial: Path) -> None:
    statement = (
        "SELECT name, value FROM duckdb_settings() WHERE name IN ('enable_external_access', "
        "'lock_configuration', 'temp_directory', 'autoload_known_extensions') ORDER BY name"
    )
    result = sql(prosocial / "data", statement)
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == (
        "name,value\nautoload_known_extensions,false\nenable_external_access,false\n"
        "lock_configuration,true\ntemp_directory,\n"
    )


# --- what cannot apply --------------------------------------------------------------------


@pytest.mark.parametrize(
    "option", [["--exclude-removed"], ["--raters", "ids.txt"], ["--min-quality", "0.5"]]
)
def test_rater_selection_is_refused_in_one_line(option: list[str], prosocial: Path) -> None:
    result = sql(prosocial / "data", "SELECT 1", *option)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr.splitlines() == [
        "Error: ProsocialDialog has no rater ids; --exclude-removed, --raters and "
        "--min-quality choose raters",
        "Try 'dices sql -h' for help.",
    ]


@pytest.mark.parametrize("arguments", [["SELECT 1"], ["--schema"]])
def test_nothing_ingested(arguments: list[str], tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    result = CliRunner().invoke(app, ["sql", *arguments, "-d", "prosocial", "--data", str(empty)])
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        f"Error: nothing is ingested in {empty}; run `dices ingest FILE --data {empty}` first\n"
    )


def test_all_is_dices_only(prosocial: Path) -> None:
    """-d all never reads ProsocialDialog: with only it ingested, DICES has nothing."""
    data = prosocial / "data"
    result = CliRunner().invoke(app, ["sql", "SELECT count(*) FROM items", "--data", str(data)])
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        f"Error: no DICES dataset is ingested in {data} (only ProsocialDialog); "
        f"run `dices ingest FILE --data {data}` first\n"
    )


def test_prosocial_not_ingested_next_to_dices(tmp_path: Path) -> None:
    data = tmp_path / "data"
    dices_350 = sample_paths()[0]
    assert CliRunner().invoke(app, ["ingest", str(dices_350), "--data", str(data)]).exit_code == 0
    result = sql(data, "SELECT count(*) FROM items")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        f"Error: ProsocialDialog is not ingested in {data}; "
        f"run `dices ingest FILE --data {data}` first\n"
    )
