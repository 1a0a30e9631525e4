"""The Python API (`import dices_cli`): its frames hold the rows the command line writes, its
errors are the command line's (parameters said by name, never a SystemExit), its names are
the changelog's, and importing it loads no heavy library."""

from __future__ import annotations

import csv
import io
import json
import math
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import polars as pl
import pytest
from typer.testing import CliRunner

import dices_cli as dices
from dices_cli.cli.main import app
from dices_cli.errors import DicesError, NotIngestedError, UsageError
from dices_cli.output import text_cell
from dices_cli.queries.catalog import catalog, family_queries
from dices_cli.runs.demo import demo_predictions_path, sample_paths

REPO = Path(__file__).resolve().parents[2]
HEAVY = {"polars", "pyarrow", "numpy", "duckdb", "typer", "rich", "pandas", "click"}
# Parameters a query needs beyond its defaults (a required `by`), and fewer resamples.
GIVEN: dict[str, dict[str, Any]] = {
    "qoverall-by-demographic": {"by": ["rater_gender"]},
    "group-disagreement": {"by": ["rater_gender"]},
}


def cli(*args: str | Path) -> str:
    """What `dices ARGS` writes to stdout; it must succeed."""
    result = CliRunner().invoke(app, [str(arg) for arg in args])
    assert result.exit_code == 0, result.output
    return result.stdout


def cli_error(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(app, [str(arg) for arg in args])
    assert result.stdout == ""
    return result.exit_code, result.stderr.splitlines()[0]


def assert_same_rows(csv_text: str, frame: pl.DataFrame) -> None:
    """The CSV's header and cells are the frame's columns and values, each value as a CSV
    cell says it; a float to within 1e-12 of itself, as DuckDB's parallel sums add in any
    order (ProsocialDialog's agreement differs in the last bit from run to run)."""
    rows = list(csv.reader(io.StringIO(csv_text)))
    assert rows[0] == frame.columns
    cells = [[text_cell(value) for value in row] for row in frame.rows()]
    assert len(rows[1:]) == len(cells)
    for written, made in zip(rows[1:], cells, strict=True):
        assert len(written) == len(made)
        for one, other in zip(written, made, strict=True):
            assert one == other or math.isclose(float(one), float(other), rel_tol=1e-12), (
                written,
                made,
            )
    assert frame.height > 0  # a comparison of nothing proves nothing


def options(given: dict[str, Any]) -> list[str]:
    """`given` parameters as command-line options."""
    said = []
    for name, value in given.items():
        for one in value if isinstance(value, list) else [value]:
            said += [f"--{name.replace('_', '-')}", str(one)]
    return said


CANNED = [
    (name, dataset) for name, query in catalog().items() for dataset in ("all", *query.datasets)
]


@pytest.mark.parametrize(("name", "dataset"), CANNED)
def test_every_canned_query_gives_the_command_lines_rows(
    name: str, dataset: str, sample: Path
) -> None:
    given = GIVEN.get(name, {})
    d = dices.open(sample)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dices.DicesNote)  # the CLI's notes on stderr
        frame = d.query(name, dataset=dataset, **given)
    written = cli("query", name, "-d", dataset, *options(given), "--data", sample, "-f", "csv")
    assert_same_rows(written, frame)


@pytest.fixture(scope="module")
def prosocial(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory with 200 synthetic ProsocialDialog test lines."""
    folder = tmp_path_factory.mktemp("prosocial")
    subprocess.run(
        [
            sys.executable,
            REPO / "scripts" / "make_prosocial.py",
            folder,
            "--split",
            "test",
            "--rows",
            "200",
            "--seed",
            "5",
        ],
        check=True,
    )
    dices.ingest([folder / "test.json"], folder / "data")
    return folder / "data"


@pytest.mark.parametrize("name", sorted(family_queries("prosocial")))
def test_every_prosocial_query_gives_the_command_lines_rows(name: str, prosocial: Path) -> None:
    frame = dices.open(prosocial).query(name, dataset="prosocial")
    written = cli("query", name, "-d", "prosocial", "--data", prosocial, "-f", "csv")
    assert_same_rows(written, frame)


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT dataset, rater_gender, count(*) AS n, avg(rater_id % 7) AS mean "
        "FROM ratings_wide GROUP BY ALL ORDER BY ALL",
        "SELECT * FROM ratings_wide ORDER BY dataset, item_id, rater_id LIMIT 300",
        "SELECT * FROM items ORDER BY dataset, item_id",
    ],
)
def test_sql_gives_the_command_lines_rows(statement: str, sample: Path) -> None:
    frame = dices.open(sample).sql(statement)
    assert_same_rows(cli("sql", statement, "--data", sample, "-f", "csv"), frame)


def test_sql_takes_tables_as_files_and_frames(sample: Path, tmp_path: Path) -> None:
    statement = "SELECT p.item_id, i.safety_gold FROM p JOIN items i USING (item_id) ORDER BY 1"
    mine = tmp_path / "p.csv"
    mine.write_text("item_id\n13\n20\n", encoding="utf-8")
    written = cli("sql", "--table", f"p={mine}", "-d", "350", statement, "--data", sample)
    d = dices.open(sample)
    for table in (mine, pl.read_csv(mine), pd.read_csv(mine)):
        assert_same_rows(written, d.sql(statement, tables={"p": table}, dataset="350"))


@pytest.mark.parametrize("by", [[], ["rater_gender"]])
def test_evaluate_gives_the_command_lines_rows_for_a_file_and_frames(
    by: list[str], sample: Path
) -> None:
    settings = ["--bootstrap", "30", "--permutations", "20", "--seed", "3"]
    written = cli(
        "evaluate", demo_predictions_path(), *settings, *options({"by": by}), "--data", sample
    )
    d = dices.open(sample)
    given = pl.read_csv(demo_predictions_path())
    for predictions in (demo_predictions_path(), str(demo_predictions_path()), given):
        with pytest.warns(dices.DicesNote, match="five-raters-flipped"):
            frame = d.evaluate(predictions, by=by, bootstrap=30, permutations=20, seed=3)
        assert_same_rows(written, frame)
    with pytest.warns(dices.DicesNote):
        frame = d.evaluate(given.to_pandas(), by=by, bootstrap=30, permutations=20, seed=3)
    assert_same_rows(written, frame)
    if by:  # one column, as a query takes it
        with pytest.warns(dices.DicesNote):
            alone = d.evaluate(given, by=by[0], bootstrap=30, permutations=20, seed=3)
        assert_same_rows(written, alone)


def test_filter_raters_gives_the_command_lines_table_ids_and_audit(sample: Path) -> None:
    d = dices.open(sample)
    chosen = d.filter_raters(min_quality=0.7, explain=True)
    data = ["--data", sample, "--min-quality", "0.7"]
    assert_same_rows(cli("filter-raters", *data, "--explain", "-f", "csv"), chosen.raters)
    ids = {int(line) for line in cli("filter-raters", *data, "--ids-only").split()}
    assert chosen.kept == ids
    audit = json.loads(cli("filter-raters", *data, "--audit", "-f", "json"))
    assert audit == json.loads(chosen.audit.write_json())
    # The kept raters, passed on, are the raters a query sees (as `--raters -` with the ids).
    seen = d.query("overview", raters=chosen)
    ids_file = io.StringIO("".join(f"{i}\n" for i in sorted(ids)))
    piped = CliRunner().invoke(
        app,
        ["query", "overview", "--data", str(sample), "--raters", "-", "-f", "csv"],
        input=ids_file.getvalue(),
    )
    assert piped.exit_code == 0, piped.output
    assert_same_rows(piped.stdout, seen)
    assert_same_rows(cli("query", "overview", *data, "-f", "csv"), seen)


def test_a_query_takes_rater_ids_and_an_ids_file(sample: Path, tmp_path: Path) -> None:
    d = dices.open(sample)
    ids = sorted(d.sql("SELECT DISTINCT rater_id FROM raters ORDER BY 1 LIMIT 9")["rater_id"])
    listed = tmp_path / "ids.txt"
    listed.write_text("".join(f"{i}\n" for i in ids), encoding="utf-8")
    written = cli("query", "overview", "--raters", listed, "--data", sample, "-f", "csv")
    assert_same_rows(written, d.query("overview", raters=ids))
    assert_same_rows(written, d.query("overview", raters=listed))


def test_ingest_and_validate_say_what_the_command_line_says(tmp_path: Path) -> None:
    summary = dices.ingest(sample_paths(), tmp_path / "data")
    result = CliRunner().invoke(app, ["info", "--data", str(tmp_path / "data"), "-f", "csv"])
    counts = {
        row["dataset"]: int(row["ratings"]) for row in csv.DictReader(io.StringIO(result.stdout))
    }
    assert summary == dices.IngestSummary(
        sum(counts.values()), sum(counts.values()), 0, ("350", "990")
    )
    broken = tmp_path / "broken.csv"
    lines = sample_paths()[0].read_bytes()
    import gzip

    text = gzip.decompress(lines).decode("utf-8").splitlines()
    broken.write_text("\n".join([text[0], text[1].replace(",", ",x", 1), *text[2:5]]) + "\n")
    report = dices.validate(broken)
    assert not report.ok
    written = cli_validate(broken)
    rows = list(csv.reader(io.StringIO(written)))
    assert rows[0] == ["file", *report.problems.columns]
    assert [row[1:] for row in rows[1:]] == [
        [text_cell(v) for v in row] for row in report.problems.rows()
    ]


def cli_validate(path: Path) -> str:
    result = CliRunner().invoke(app, ["validate", str(path), "-f", "csv"])
    assert result.exit_code == 1, result.output
    return result.stdout


# --- errors: the command line's, with each parameter said by name -----------------------------


ERRORS = [  # (the call, its command line, the API's message, the command line's)
    (
        lambda d: d.query("gold-vs-crowd", threshold=0.3),
        ["query", "gold-vs-crowd", "--threshold", "0.3"],
        "threshold applies only with rule threshold",
        "--threshold applies only with --rule threshold",
    ),
    (
        lambda d: d.query("overveiw"),
        ["query", "overveiw"],
        "no query 'overveiw': did you mean 'overview'? The queries are: agreement, ",
        "no query 'overveiw': did you mean 'overview'? The queries are: agreement, ",
    ),
    (
        lambda d: d.query("label-check", dataset="350"),
        ["query", "label-check", "-d", "350"],
        "label-check applies to ProsocialDialog only: give dataset prosocial",
        "label-check applies to ProsocialDialog only: give --dataset prosocial",
    ),
    (
        lambda d: d.evaluate(demo_predictions_path(), against=["nope"]),
        ["evaluate", str(demo_predictions_path()), "--against", "nope"],
        "against nope: choose from gold, crowd, crowd-share",
        "--against nope: choose from gold, crowd, crowd-share",
    ),
    (
        lambda d: d.evaluate(demo_predictions_path(), dataset="prosocial", by=["rater_age"]),
        ["evaluate", str(demo_predictions_path()), "-d", "prosocial", "--by", "rater_age"],
        "ProsocialDialog has no rater ids or demographics; `evaluate by` needs them",
        "ProsocialDialog has no rater ids or demographics; `evaluate --by` needs them",
    ),
    (
        lambda d: d.query("overview", dataset="prosocial", exclude_removed=True),
        ["query", "overview", "-d", "prosocial", "--exclude-removed"],
        "ProsocialDialog has no rater ids; exclude_removed, raters and min_quality choose raters",
        "ProsocialDialog has no rater ids; --exclude-removed, --raters and --min-quality "
        "choose raters",
    ),
    (
        lambda d: d.filter_raters(min_quality=0.5, preset="authors"),
        ["filter-raters", "--min-quality", "0.5", "--preset", "authors"],
        "give min_quality or preset, not both",
        "give --min-quality or --preset, not both",
    ),
]


@pytest.mark.parametrize(("call", "args", "api_message", "cli_message"), ERRORS)
def test_errors_are_the_command_lines_with_parameters_by_name(
    call: Any, args: list[str], api_message: str, cli_message: str, sample: Path
) -> None:
    with pytest.raises(UsageError) as raised:
        call(dices.open(sample))
    assert str(raised.value).startswith(api_message)
    code, line = cli_error(*args, "--data", str(sample))
    assert code == 2
    assert line.startswith(f"Error: {cli_message}")


@pytest.mark.parametrize(
    ("call", "message"),
    [
        # Click checks the command line's ranges (its own message); the API, the header's.
        (
            lambda d: d.query("gold-vs-crowd", threshold=2),
            "threshold must be a number between 0 and 1 (got 2)",
        ),
        (lambda d: d.query("overview", dataset="999"), "dataset must be one of: all, 350, "),
        (lambda d: d.query("overview", by=["rater_age"]), "overview does not take by; "),
        (lambda d: d.evaluate(demo_predictions_path(), threshold=1.5), "threshold must be "),
        (lambda d: d.evaluate(demo_predictions_path(), bootstrap=-1), "bootstrap must be "),
        (lambda d: d.evaluate(demo_predictions_path(), ties="maybe"), "ties must be one of: "),
        (lambda d: d.evaluate(12), "predictions is a path, a polars or a pandas DataFrame"),
        (lambda d: d.sql("DROP TABLE items"), "only SELECT is allowed here, not DROP"),
        (lambda d: d.query("qoverall-by-demographic"), "this query needs by"),
    ],
)
def test_a_bad_argument_is_our_error_never_a_system_exit(
    call: Any, message: str, sample: Path
) -> None:
    with pytest.raises(DicesError, match=re.escape(message)):
        call(dices.open(sample))


def test_an_empty_directory_says_nothing_is_ingested(tmp_path: Path) -> None:
    with pytest.raises(NotIngestedError, match=f"nothing is ingested in {tmp_path}"):
        dices.open(tmp_path).query("overview")


def test_open_resolves_the_directory_as_the_command_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DICES_DATA", raising=False)
    assert dices.open().root == Path("dices-data")
    monkeypatch.setenv("DICES_DATA", str(tmp_path / "elsewhere"))
    assert dices.open().root == tmp_path / "elsewhere"
    assert dices.open("mine").root == Path("mine")


def test_report_leaves_a_page_that_exists(sample: Path, tmp_path: Path) -> None:
    """(The page it writes, and the path it gives: test_commands_and_api_agree.py.)"""
    existing = tmp_path / "r.html"
    existing.write_text("mine\n", encoding="utf-8")
    with pytest.raises(DicesError, match=r"r\.html exists; use force to overwrite it"):
        dices.open(sample).report(existing, dataset="350")
    assert existing.read_text(encoding="utf-8") == "mine\n"


def test_report_options_that_score_need_predictions(sample: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"^strict scores predictions: give predictions FILE too$"):
        dices.open(sample).report(tmp_path / "r.html", strict=True)


# --- the names, and what importing them costs -------------------------------------------------


def test_all_names_the_changelogs_latest_list_and_each_is_there() -> None:
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    listed = re.search(r"^Public names \(`dices_cli.__all__`\): (.+)$", changelog, re.M)
    assert listed is not None, "CHANGELOG.md lists the public names of the latest version"
    assert sorted(re.findall(r"`([^`]+)`", listed[1])) == sorted(dices.__all__)
    for name in dices.__all__:
        assert getattr(dices, name) is not None


def test_the_api_functions_are_the_packages_names_even_after_their_modules_load() -> None:
    import importlib

    from dices_cli import api

    for module in (
        "dices_cli.formats.ingest",
        "dices_cli.formats.validate",
    ):  # the modules of the same name
        importlib.import_module(module)

    assert dices.ingest is api.ingest
    assert dices.validate is api.validate
    assert sys.modules["dices_cli.formats.validate"].__name__ == "dices_cli.formats.validate"


def test_every_public_function_shows_an_example() -> None:
    from dices_cli import api

    shown = [
        api.open,
        api.ingest,
        api.validate,
        *(getattr(api.Data, name) for name in ("query", "sql", "evaluate", "filter_raters")),
    ]
    for function in shown:
        assert ">>> " in (function.__doc__ or ""), function.__qualname__


def test_import_dices_cli_loads_no_heavy_library() -> None:
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json, sys, dices_cli; print(json.dumps(sorted(sys.modules)))",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    modules = {name.split(".")[0] for name in json.loads(loaded.stdout)}
    assert not modules & HEAVY
    assert not {name for name in json.loads(loaded.stdout) if name.startswith("dices_cli.")}


# --- hostile arguments (issue 36): checked before use, our errors only ------------------------

HOSTILE_TABLE_NAMES = ["../x", "p=/etc/x", "a/b", "", "1p", "items", "select", 12, None]


@pytest.mark.parametrize("name", [*HOSTILE_TABLE_NAMES, "ABSOLUTE"])
def test_a_table_name_is_checked_before_its_frame_is_written(
    name: Any, sample: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A frame given as table NAME was written to NAME.parquet in a temporary directory
    before NAME was checked: `../x` or an absolute name overwrote any *.parquet."""
    import tempfile

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    victim = tmp_path / "victim.parquet"
    victim.write_bytes(b"canary")
    if name == "ABSOLUTE":
        name = str(tmp_path / "victim")
    with pytest.raises(UsageError) as refused:
        dices.open(sample).sql("SELECT 1", tables={name: pl.DataFrame({"a": [1]})})
    message = str(refused.value)
    if name in ("items",):
        assert message.startswith("the table name 'items' is taken")
    elif name == "select":
        assert message == "'select' is an SQL keyword; choose another table name"
    else:
        assert message == (
            f"a table name is letters, digits and _, not starting with a digit: {name!r}"
        )
    assert victim.read_bytes() == b"canary"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scratch", "victim.parquet"]
    assert list(scratch.iterdir()) == []


@pytest.mark.parametrize(
    ("raters", "message"),
    [
        ([1.5], "raters holds 1.5, which is not a rater id (a whole number)"),
        ([float("nan")], "raters holds nan, which is not a rater id (a whole number)"),
        (["abc"], "raters holds 'abc', which is not a rater id (a whole number)"),
        ([True], "raters holds True, which is not a rater id (a whole number)"),
        (12, "raters is a RaterFilterResult, rater ids or an ids file, not int"),
        ({"a": 1}, "raters is a RaterFilterResult, rater ids or an ids file, not dict"),
    ],
)
def test_rater_ids_are_whole_numbers_never_truncated(
    raters: Any, message: str, sample: Path
) -> None:
    """`raters=[296708581782793.5]` was taken as rater 296708581782793, silently."""
    with pytest.raises(UsageError) as refused:
        dices.open(sample).query("overview", raters=raters)
    assert str(refused.value) == message


def test_a_whole_float_rater_id_is_that_rater(sample: Path) -> None:
    d = dices.open(sample)
    ids = d.sql("SELECT DISTINCT rater_id FROM raters ORDER BY 1 LIMIT 3")["rater_id"].to_list()
    as_floats = d.query("overview", raters=[float(i) for i in ids])
    assert as_floats.equals(d.query("overview", raters=ids))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda d: d.sql("SELECT 1", timeout="5"), "timeout is a number of seconds, not '5'"),
        (lambda d: d.sql("SELECT 1", timeout=None), "timeout is a number of seconds, not None"),
        (lambda d: d.sql(b"SELECT 1"), "the statement is text, not bytes"),
        (lambda d: d.sql("SELECT 1", tables=[("p", "x.csv")]), "tables is a mapping of names"),
    ],
)
def test_a_bad_sql_argument_is_a_usage_error(call: Any, message: str, sample: Path) -> None:
    with pytest.raises(UsageError) as refused:
        call(dices.open(sample))
    assert str(refused.value).startswith(message)


def test_a_rater_filter_result_prints_in_one_line(sample: Path) -> None:
    good = dices.open(sample).filter_raters(min_quality=0.6)
    assert repr(good) == (
        f"RaterFilterResult({len(good.kept)} of {good.raters.height} raters kept: "
        f"{good.description})"
    )
    assert "\n" not in repr(good) and len(repr(good)) < 200
