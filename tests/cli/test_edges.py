"""Output and argument edges (issue 10): a full disk, --rejects and the lock, numeric
ranges, --raters spellings and encodings, and --by columns a dataset lacks.

Each test fails on the code before the fix: a full disk was "a bug" and left a truncated
file; a refused ingest left its --rejects file behind; --threshold nan ran; `--raters`
took `0007`; `--by rater_locale -d 350` returned a blank group.
"""

from __future__ import annotations

import csv
import errno
import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from fixtures.dices_csv import build, header, rows, to_csv
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner, Result

from dices_cli import output as output_module
from dices_cli.cli.main import app
from dices_cli.errors import DicesError
from dices_cli.queries.catalog import ParameterError, catalog, get_query, parse_query
from dices_cli.raters.id_list import parse_rater_ids
from dices_cli.store.datasets import Store

NO_SPACE = os.strerror(errno.ENOSPC)  # "No space left on device"
RATER = "296708581782793"  # the first rater of the small files


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory holding small DICES-350 and DICES-990 files. Read-only."""
    root = tmp_path_factory.mktemp("small")
    files = []
    for name in ("350", "990"):
        files.append(root / f"dices_{name}.csv")
        files[-1].write_bytes(build(name, 4, 5))
    data = root / "data"
    result = CliRunner().invoke(app, ["ingest", *map(str, files), "--data", str(data)])
    assert result.exit_code == 0, result.output
    return data


def run(runner: CliRunner, data: Path, *args: str, stdin: bytes | str | None = None) -> Result:
    return runner.invoke(app, [*args, "--data", str(data)], input=stdin)


def assert_usage_error(result: Result, message: str, command: str = "query") -> None:
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr == f"Error: {message}\nTry 'dices {command} -h' for help.\n"


def assert_error(result: Result, message: str) -> None:
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    assert result.stderr == f"Error: {message}\n"


def names_in(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.iterdir())


# --- a full disk: a plain error, and no truncated file --------------------------------------

# Commands that write a result, with the option that names them in a failure message.
WRITERS = {
    "query": ["query", "overview", "--format", "csv"],
    "query --list": ["query", "--list", "--format", "csv"],
    "sql": ["sql", "SELECT range AS n FROM range(10)", "--format", "csv"],
    "info": ["info", "--format", "csv"],
    "export": ["export", "-d", "350"],
    "filter-raters": ["filter-raters", "--format", "csv"],
    "filter-raters --ids-only": ["filter-raters", "--ids-only"],
}


def data_option(args: list[str], data: Path) -> list[str]:
    """--data DATA, for the writers that read data (`dices query --list` reads none, and
    takes only its own options)."""
    return [] if args[:2] == ["query", "--list"] else ["--data", str(data)]


def dices(*args: str, stdout: Any) -> subprocess.CompletedProcess[str]:
    """The real command in a process of its own, whose stdout is `stdout`."""
    env = {k: v for k, v in os.environ.items() if k != "DICES_DEBUG"}
    return subprocess.run(
        [sys.executable, "-m", "dices_cli", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


@pytest.mark.parametrize(
    "args",
    [
        *WRITERS.values(),
        ["query", "overview", "--format", "table"],
        ["query", "overview", "--format", "parquet"],
        ["query", "overview", "--explain"],
    ],
    ids=[*WRITERS, "query --format table", "query --format parquet", "query --explain"],
)
def test_stdout_on_a_full_disk_is_a_plain_error(args: list[str], small: Path) -> None:
    with open("/dev/full", "wb") as full:
        done = dices(*args, *data_option(args, small), stdout=full)
    assert done.returncode == 1
    # (filter-raters reports its audit on stderr before the result)
    assert done.stderr.endswith(f"Error: cannot write to standard output: {NO_SPACE}\n")
    assert "a bug in dices" not in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow  # the whole demo in a fresh process
def test_the_demo_on_a_full_disk_is_a_plain_error(tmp_path: Path) -> None:
    with open("/dev/full", "wb") as full:
        done = dices("demo", "--keep", str(tmp_path / "demo"), stdout=full)
    assert done.returncode == 1
    assert done.stderr.endswith(f"Error: cannot write to standard output: {NO_SPACE}\n")
    assert "a bug in dices" not in done.stderr


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["query", "-h"], ["query"]])
def test_help_and_usage_on_a_full_disk_are_a_plain_error(args: list[str]) -> None:
    """Click writes help and usage itself, before our error handling: `run()` catches it."""
    with open("/dev/full", "wb") as full:
        done = dices(*args, stdout=full)
    assert done.returncode == 1
    assert done.stderr == f"Error: cannot write to standard output: {NO_SPACE}\n"


@pytest.mark.parametrize("name", WRITERS)
def test_o_on_a_full_device_is_a_plain_error(name: str, small: Path, runner: CliRunner) -> None:
    args = WRITERS[name]
    result = runner.invoke(app, [*args, "-o", "/dev/full", *data_option(args, small)])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.endswith(f"Error: cannot write /dev/full: {NO_SPACE}\n")
    assert "a bug in dices" not in result.stderr


WRITE_RESULT = output_module.write_result  # the real one, which the fixture replaces


def half_then_no_space(table: Any, fmt: Any, handle: Any) -> None:
    """Write half of the result, then fail as a full disk does."""
    whole = io.BytesIO()
    WRITE_RESULT(table, fmt, whole)
    handle.write(whole.getvalue()[: len(whole.getvalue()) // 2])
    handle.flush()
    raise OSError(errno.ENOSPC, NO_SPACE)


@pytest.fixture
def full_disk_midway(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(output_module, "write_result", half_then_no_space)


@pytest.mark.usefixtures("full_disk_midway")
@pytest.mark.parametrize("force", [False, True], ids=["new file", "--force over a file"])
def test_a_full_disk_leaves_no_truncated_file(
    force: bool, small: Path, runner: CliRunner, tmp_path: Path
) -> None:
    out = tmp_path / "out" / "result.csv"
    out.parent.mkdir()
    if force:
        out.write_bytes(b"the previous result\n")
    result = run(runner, small, *WRITERS["query"], "-o", str(out), *(["--force"] * force))
    assert_error(result, f"cannot write {out}: {NO_SPACE}")
    if force:
        assert out.read_bytes() == b"the previous result\n"
        assert names_in(out.parent) == ["result.csv"]
    else:
        assert names_in(out.parent) == []  # neither the file nor a temporary one


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EIO])
def test_a_failed_sync_leaves_no_file(
    code: int, small: Path, runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Some file systems (NFS, delayed allocation) report a full disk only at fsync."""

    def failing(_descriptor: int) -> None:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, "fsync", failing)
    out = tmp_path / "result.csv"
    result = run(runner, small, *WRITERS["export"], "-o", str(out))
    assert_error(result, f"cannot write {out}: {os.strerror(code)}")
    assert names_in(tmp_path) == []


def test_export_on_a_full_disk_midway(
    small: Path, runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Polars reports a full disk as a bare OSError without an errno; still a plain error."""
    from dices_cli.formats.dices import export

    real = export.write_csv

    def half(stored: Any, handle: Any, excel_safe: bool = False) -> None:
        whole = io.BytesIO()
        real(stored, whole, excel_safe)
        handle.write(whole.getvalue()[: len(whole.getvalue()) // 2])
        handle.flush()
        raise OSError(f"{NO_SPACE} (os error {errno.ENOSPC})")

    monkeypatch.setattr(export, "write_csv", half)
    out = tmp_path / "export.csv"
    result = run(runner, small, *WRITERS["export"], "-o", str(out))
    assert_error(result, f"cannot write {out}: {NO_SPACE}")
    assert names_in(tmp_path) == []


def test_a_file_that_appears_while_writing_is_not_overwritten(
    small: Path, runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "result.csv"
    real = output_module.write_result

    def write_while_another_appears(table: Any, fmt: Any, handle: Any) -> None:
        out.write_bytes(b"someone else's\n")
        real(table, fmt, handle)

    monkeypatch.setattr(output_module, "write_result", write_while_another_appears)
    result = run(runner, small, *WRITERS["query"], "-o", str(out))
    assert_error(result, f"{out} exists; use --force to overwrite it")
    assert out.read_bytes() == b"someone else's\n"
    assert names_in(tmp_path) == ["result.csv"]


def test_a_file_system_without_hard_links(
    small: Path, runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FAT refuses link(2) with EPERM: the file is renamed into place instead."""

    def no_links(*_: Any) -> None:
        raise OSError(errno.EPERM, os.strerror(errno.EPERM))

    monkeypatch.setattr(os, "link", no_links)
    out = tmp_path / "result.csv"
    result = run(runner, small, *WRITERS["query"], "-o", str(out))
    assert result.exit_code == 0, result.output
    assert out.read_bytes() == run(runner, small, *WRITERS["query"]).stdout_bytes
    assert names_in(tmp_path) == ["result.csv"]


def test_force_replaces_a_link_never_its_target(
    small: Path, runner: CliRunner, tmp_path: Path
) -> None:
    """-o LINK --force replaces the link with the file; what it pointed at is left alone (a
    link planted where an output goes must not redirect the write)."""
    target = tmp_path / "target.csv"
    target.write_bytes(b"old\n")
    target.chmod(0o640)
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    result = run(runner, small, *WRITERS["query"], "-o", str(link), "--force")
    assert result.exit_code == 0, result.output
    assert not link.is_symlink()
    assert link.read_bytes() == run(runner, small, *WRITERS["query"]).stdout_bytes
    assert target.read_bytes() == b"old\n"
    assert target.stat().st_mode & 0o777 == 0o640
    assert names_in(tmp_path) == ["link.csv", "target.csv"]


# --- --rejects appears only with the data it belongs to -------------------------------------


def messy(directory: Path) -> Path:
    """A DICES-350 file whose row 2 has a phase that does not exist."""
    body = rows("350", 2, 3)
    body[2]["phase"] = "Phase9"
    path = directory / "messy.csv"
    path.write_bytes(to_csv(header("350"), [list(r.values()) for r in body]))
    return path


def test_a_refused_ingest_leaves_no_rejects_file(runner: CliRunner, tmp_path: Path) -> None:
    source, data, rejects = messy(tmp_path), tmp_path / "data", tmp_path / "rejects.csv"
    args = ["ingest", str(source), "--rejects", str(rejects)]
    with Store(data).locked():  # another writer holds the data directory
        result = run(runner, data, *args)
    assert_error(
        result,
        f"{data} is being written by dices (pid {os.getpid()}); "
        "wait for it to finish, then run this again",
    )
    assert not rejects.exists()
    assert names_in(tmp_path) == ["data", "messy.csv"]
    # The rerun is not refused by a file the refused run left.
    result = run(runner, data, *args)
    assert result.exit_code == 0, result.output
    assert [r[:2] for r in csv.reader(io.StringIO(rejects.read_text()))] == [
        ["file", "line"],
        ["messy.csv", "8"],
    ]


def test_a_failed_ingest_leaves_no_rejects_file(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source, data, rejects = messy(tmp_path), tmp_path / "data", tmp_path / "rejects.csv"

    def no_space(*_: Any, **__: Any) -> None:
        raise OSError(errno.ENOSPC, NO_SPACE)

    with monkeypatch.context() as patched:
        patched.setattr(pl.DataFrame, "write_parquet", no_space)
        result = run(runner, data, "ingest", str(source), "--rejects", str(rejects))
    assert_error(
        result,
        f"could not write DICES-350 to {data}: {NO_SPACE}; the previous data (if any) is unchanged",
    )
    assert names_in(tmp_path) == ["data", "messy.csv"]
    result = run(runner, data, "ingest", str(source), "--rejects", str(rejects))
    assert result.exit_code == 0, result.output
    assert rejects.exists()


def test_rejects_on_a_full_disk_publishes_nothing(runner: CliRunner, tmp_path: Path) -> None:
    source, data = messy(tmp_path), tmp_path / "data"
    result = run(runner, data, "ingest", str(source), "--rejects", "/dev/full")
    assert result.exit_code == 1
    assert result.stderr.endswith(f"Error: cannot write /dev/full: {NO_SPACE}\n")
    assert not (data / "350").exists()


# --- numeric options: a documented range, enforced as a usage error -------------------------

# A query's range is Click's to enforce (from the .sql header), in Click's words.
OUT_OF_RANGE = [
    *(
        (
            ["gold-vs-crowd", "--rule", "threshold", "--threshold", value],
            f"Invalid value for '--threshold': {shown} is not in the range 0.0<=x<=1.0.",
        )
        for value, shown in [
            ("nan", "nan"),
            ("inf", "inf"),
            ("-inf", "-inf"),
            ("-1", "-1.0"),
            ("1.0000001", "1.0000001"),
            ("1e308", "1e+308"),
        ]
    ),
    *(
        (
            ["agreement", "--by", "rater_age", "--permutations", value],
            f"Invalid value for '--permutations': {value} is not in the range 0<=x<=100000.",
        )
        for value in ["-1", "100001", "100000000"]
    ),
    *(
        (
            ["agreement", "--by", "rater_age", "--seed", value],
            f"Invalid value for '--seed': {value} is not in the range 0<=x<=4294967295.",
        )
        for value in ["-1", str(2**32), str(10**30)]
    ),
]


@pytest.mark.parametrize(
    ("args", "words"), OUT_OF_RANGE, ids=[" ".join(args[-2:]) for args, _ in OUT_OF_RANGE]
)
def test_a_value_outside_its_range_is_a_usage_error(
    args: list[str], words: str, small: Path, runner: CliRunner
) -> None:
    result = run(runner, small, "query", *args)
    assert (result.exit_code, result.stdout) == (2, "")
    assert words in " ".join(result.stderr.replace("│", " ").split())


@pytest.mark.parametrize("value", ["nan", "inf"])
def test_min_quality_outside_its_range_is_a_usage_error(
    value: str, small: Path, runner: CliRunner
) -> None:
    assert_usage_error(
        run(runner, small, "query", "overview", "--min-quality", value),
        f"--min-quality must be between 0 and 1 (got {value})",
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--min-quality", "nan"], "--min-quality must be between 0 and 1 (got nan)"),
        (["--min-quality", "-inf"], "--min-quality must be between 0 and 1 (got -inf)"),
    ],
)
def test_filter_raters_refuses_nan(
    args: list[str], message: str, small: Path, runner: CliRunner
) -> None:
    assert_usage_error(run(runner, small, "filter-raters", *args), message, "filter-raters")


def test_sql_timeout_refuses_nan_and_takes_inf_as_no_limit(small: Path, runner: CliRunner) -> None:
    statement = "SELECT 1 AS n"
    assert_usage_error(
        run(runner, small, "sql", statement, "--timeout", "nan"),
        "--timeout must be at least 0.1 s (got nan)",
        "sql",
    )
    result = run(runner, small, "sql", statement, "--timeout", "inf", "-f", "csv")
    assert (result.exit_code, result.stdout) == (0, "n\n1\n")


@pytest.mark.parametrize(
    "args",
    [
        ["gold-vs-crowd", "--rule", "threshold", "--threshold", "0"],
        ["gold-vs-crowd", "--rule", "threshold", "--threshold", "1"],
        ["agreement", "--by", "rater_age", "--permutations", "0"],
        ["agreement", "--by", "rater_age", "--permutations", "100000", "--seed", "4294967295"],
        [
            "group-disagreement",
            "--by",
            "rater_age",
            "--min-raters",
            "1",
            "--permutations",
            "100000",
            "--seed",
            "4294967295",
        ],
        [
            "group-disagreement",
            "--by",
            "rater_age",
            "--min-raters",
            "100000",
            "--permutations",
            "0",
            "--seed",
            "0",
        ],
    ],
)
def test_the_ends_of_a_range_are_inside_it(args: list[str], small: Path, runner: CliRunner) -> None:
    result = run(runner, small, "query", *args, "-f", "csv")
    assert result.exit_code == 0, result.output


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_threshold_accepts_exactly_the_numbers_in_its_range(value: float) -> None:
    parameter = get_query("gold-vs-crowd").parameter("threshold")
    assert parameter is not None
    if 0 <= value <= 1:
        assert parameter.convert(value) == value
    else:
        with pytest.raises(ParameterError, match=r"^parameter threshold must be a number betwe"):
            parameter.convert(value)


def test_every_numeric_parameter_has_a_range_holding_its_default() -> None:
    numeric = [
        (query.name, p)
        for query in catalog().values()
        for p in query.parameters
        if p.type in {"float", "integer"}
    ]
    assert {(name, p.name) for name, p in numeric} == {
        ("agreement", "permutations"),
        ("agreement", "seed"),
        ("gold-vs-crowd", "threshold"),
        ("gold-vs-crowd-summary", "threshold"),
        *(
            (name, parameter)
            for name in ("qoverall-by-demographic", "degree-of-harm")
            for parameter in ("permutations", "seed")
        ),
        ("group-disagreement", "min_raters"),
        ("group-disagreement", "permutations"),
        ("group-disagreement", "seed"),
    }
    for _, parameter in numeric:
        assert parameter.range is not None
        low, high = parameter.bounds
        assert low <= parameter.convert(None) <= high  # type: ignore[operator]


HEADER = "-- name: q\n-- summary: s.\n-- param x: {declared}: Help.\nSELECT 1\n"


@pytest.mark.parametrize(
    ("declared", "problem"),
    [
        ("float = 0.5", "a float or integer parameter, and only one, declares its range"),
        ("choice(a|b) in [0, 1] = a", "a float or integer parameter, and only one"),
        ("float in [0, 1] = 2", "bad range or default: parameter x must be a number between 0"),
        ("float in [1, 0] = 0.5", "bad range or default: [1.0, 0.0] is not a finite range"),
        ("float in [0, inf] = 1", "bad range or default: [0.0, inf] is not a finite range"),
        ("integer in [0, 1.5] = 1", "bad range or default: invalid literal for int()"),
    ],
)
def test_a_header_without_a_sound_range_is_refused(declared: str, problem: str) -> None:
    with pytest.raises(ValueError, match=r"^q\.sql: parameter x: ") as refused:
        parse_query(Path("q.sql"), HEADER.format(declared=declared))
    assert problem in str(refused.value)


def test_help_and_explain_show_the_ranges(runner: CliRunner) -> None:
    def words(*args: str) -> str:
        result = runner.invoke(app, [*args, "--help"], env={"COLUMNS": "200"})
        return " ".join(result.stdout.replace("│", " ").split())

    threshold = words("query", "gold-vs-crowd")
    assert "--threshold <float range> [0.0<=x<=1.0]" in threshold
    assert "makes the crowd say Yes. [default: 0.5]" in threshold
    agreement = words("query", "agreement")
    assert "--permutations <int range> [0<=x<=100000]" in agreement
    assert "(0 = none). [default: 1000]" in agreement
    assert "--seed <int range> [0<=x<=4294967295]" in agreement
    assert "at least Q (0 to 1; see dices filter-raters)." in threshold
    assert "(at least 0.1; inf: no limit)" in " ".join(
        runner.invoke(app, ["sql", "--help"], env={"COLUMNS": "200"}).stdout.split()
    )
    explained = runner.invoke(app, ["query", "agreement", "--explain"]).stdout
    assert "  --permutations (integer in [0, 100000], default 1000): " in explained
    assert "  --seed (integer in [0, 4294967295], default 0): " in explained


# --- --raters: ids spelled as ingest spells them, and UTF-8 ---------------------------------

SPELLINGS = [RATER, "0", "1_000", "+5", "٣", "0007", "-5", "-0", "5.0", "9223372036854775808"]


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_raters_take_exactly_the_ids_ingest_takes(spelling: str, tmp_path: Path) -> None:
    body = rows("350", 1, 1)
    body[0]["rater_id"] = spelling
    source = tmp_path / "one.csv"
    source.write_bytes(to_csv(header("350"), [list(r.values()) for r in body]))
    checked = CliRunner().invoke(app, ["validate", str(source), "--format", "csv"])
    problems = list(csv.DictReader(io.StringIO(checked.stdout)))
    ingest_takes = not any(p["column"] == "rater_id" for p in problems)
    try:
        parsed = parse_rater_ids(f"{spelling}\n".encode(), "list")
    except DicesError as error:
        assert str(error) == f"list: line 1: {spelling!r} is not a rater id"
        parsed = None
    assert (parsed is not None) == ingest_takes
    assert ingest_takes == (spelling in (RATER, "0"))
    if parsed is not None:
        assert parsed == {int(spelling)}


@pytest.mark.parametrize("spelling", ["1_000", "+5", "٣", "0007"])
def test_a_raters_file_with_an_id_ingest_refuses(
    spelling: str, small: Path, runner: CliRunner, tmp_path: Path
) -> None:
    path = tmp_path / "raters.txt"
    path.write_text(f"{RATER}\n{spelling}\n", encoding="utf-8")
    result = run(runner, small, "query", "overview", "--raters", str(path))
    assert_error(result, f"{path}: line 2: {spelling!r} is not a rater id")


@pytest.mark.parametrize("source", ["file", "stdin"])
def test_a_raters_list_that_is_not_utf8(
    source: str, small: Path, runner: CliRunner, tmp_path: Path
) -> None:
    content = f"{RATER}\n\xe9\n".encode("latin-1")
    path = tmp_path / "raters.txt"
    path.write_bytes(content)
    named = str(path) if source == "file" else "-"
    result = run(runner, small, "query", "overview", "--raters", named, stdin=content)
    shown = str(path) if source == "file" else "stdin"
    assert_error(result, f"{shown}: line 2 is not UTF-8 text; save the list as UTF-8")


def test_a_raters_csv_with_a_byte_order_mark(small: Path, runner: CliRunner) -> None:
    """Spreadsheets save UTF-8 CSV with a byte-order mark; ingest accepts one too."""
    content = f"\ufeffrater_id,note\n{RATER},kept\n".encode()
    result = run(runner, small, "query", "overview", "--raters", "-", "-f", "csv", stdin=content)
    assert result.exit_code == 0, result.output
    assert result.stderr == "raters: 1 raters from stdin\n"
    assert [line.split(",")[2] for line in result.stdout.splitlines()[1:]] == ["1", "1"]


# --- --by a column a dataset lacks -----------------------------------------------------------

GROUPED = sorted(
    query.name for query in catalog().values() if any(p.type == "columns" for p in query.parameters)
)
LOCALE = "rater_locale is a DICES-990 column; DICES-350 has no rater_locale"


@pytest.mark.parametrize("name", GROUPED)
def test_a_group_column_the_dataset_lacks_is_a_usage_error(
    name: str, small: Path, runner: CliRunner
) -> None:
    assert_usage_error(
        run(runner, small, "query", name, "--by", "rater_locale", "-d", "350"), LOCALE
    )


@pytest.mark.parametrize("name", GROUPED)
def test_all_datasets_by_a_column_one_lacks(name: str, small: Path, runner: CliRunner) -> None:
    """With --dataset all, the datasets that have the column are shown, with a note; a query
    that applies only to the one that lacks it is refused."""
    # the fixture's 5 raters make groups below group-disagreement's default --min-raters
    smallest = ["--min-raters", "1"] if name == "group-disagreement" else []
    result = run(runner, small, "query", name, "--by", "rater_locale", *smallest, "-f", "csv")
    if get_query(name).datasets == ("350",):
        assert_usage_error(result, LOCALE)
        return
    assert result.exit_code == 0, result.output
    assert result.stderr == f"note: {LOCALE}, so it is left out\n"
    body = list(csv.DictReader(io.StringIO(result.stdout)))
    assert body and {r["dataset"] for r in body} == {"990"}
    if "rater_locale" in body[0]:
        assert {r["rater_locale"] for r in body} == {"IN", "US"}  # no blank group
    else:  # group-disagreement names the groups it compares
        named = {r[f"{end}_group"] for r in body for end in ("highest", "lowest")}
        assert named <= {"IN", "US"}


def test_only_the_dataset_that_lacks_the_column_is_ingested(
    small: Path, runner: CliRunner, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "350").symlink_to((small / "350").resolve())
    result = run(runner, data, "query", "qoverall-by-demographic", "--by", "rater_locale")
    assert_usage_error(result, LOCALE)


def test_columns_both_datasets_have_are_not_refused(small: Path, runner: CliRunner) -> None:
    result = run(runner, small, "query", "qoverall-by-demographic", "--by", "phase", "-f", "csv")
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    assert {line.split(",")[0] for line in result.stdout.splitlines()[1:]} == {"350", "990"}
