"""Output paths: `-o FILE` (and `ingest --rejects FILE`) never overwrites an input of the
command, and overwrites an existing file only with `--force`.

Every command with -o is covered: validate, info, export, query (and query --list), sql,
filter-raters (its table, --audit and --ids-only), and ingest's --rejects. A refusal is
exit 1, `Error: ...` on stderr, nothing on stdout, and the file as it was.
"""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

import pytest
from fixtures.dices_csv import build, header, rows, to_csv
from typer.testing import CliRunner, Result

from dices_cli.cli.main import app

OLD = b"precious, do not overwrite\n"


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A small DICES-350 file and a data directory it is ingested into. Read-only."""
    root = tmp_path_factory.mktemp("small")
    source, data = root / "dices_350.csv", root / "data"
    source.write_bytes(build("350", 4, 5))
    result = CliRunner().invoke(app, ["ingest", str(source), "--data", str(data)])
    assert result.exit_code == 0, result.output
    return source, data


def existing(tmp_path: Path, name: str = "out.csv") -> Path:
    path = tmp_path / name
    path.write_bytes(OLD)
    return path


def assert_refused(result: Result, message: str) -> None:
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    assert result.stderr == f"Error: {message}\n"


def exists_message(path: Path) -> str:
    return f"{path} exists; use --force to overwrite it"


def input_message(path: Path, option: str = "-o") -> str:
    return f"{option} {path} is an input of this command; choose another file"


def commands(source: Path, data: Path, raters: Path) -> dict[str, list[str]]:
    """Each command with -o, as it is run (the -o FILE goes at the end)."""
    return {
        "validate": ["validate", str(source), "--format", "csv"],
        "info": ["info", "--data", str(data), "--format", "csv"],
        "export": ["export", "-d", "350", "--data", str(data)],
        "query": ["query", "overview", "--data", str(data), "--format", "csv"],
        "query --list": ["query", "--list", "--format", "csv"],
        "sql": ["sql", "SELECT count(*) AS n FROM ratings", "--data", str(data), "-f", "csv"],
        "filter-raters": ["filter-raters", "--data", str(data), "--format", "csv"],
        "filter-raters --audit": ["filter-raters", "--data", str(data), "--audit"],
        "filter-raters --ids-only": ["filter-raters", "--data", str(data), "--ids-only"],
        "query --raters": ["query", "overview", "--data", str(data), "--raters", str(raters)],
    }


COMMANDS = list(commands(Path(), Path(), Path()))


@pytest.fixture
def raters(tmp_path: Path) -> Path:
    path = tmp_path / "raters.txt"
    path.write_text("296708581782793\n296708581783793\n")
    return path


@pytest.mark.parametrize("name", COMMANDS)
def test_an_existing_file_is_refused_without_force(
    name: str, small: tuple[Path, Path], raters: Path, runner: CliRunner, tmp_path: Path
) -> None:
    args = commands(*small, raters)[name]
    out = existing(tmp_path)

    result = runner.invoke(app, [*args, "-o", str(out)])

    assert_refused(result, exists_message(out))
    assert out.read_bytes() == OLD


@pytest.mark.parametrize("name", COMMANDS)
def test_force_overwrites_an_existing_file_with_what_stdout_would_get(
    name: str, small: tuple[Path, Path], raters: Path, runner: CliRunner, tmp_path: Path
) -> None:
    args = commands(*small, raters)[name]
    out = existing(tmp_path)
    to_stdout = runner.invoke(app, args)
    assert to_stdout.exit_code == 0, to_stdout.output

    result = runner.invoke(app, [*args, "-o", str(out), "--force"])

    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert out.read_bytes() == to_stdout.stdout_bytes
    assert out.read_bytes() != OLD


@pytest.mark.parametrize("name", COMMANDS)
def test_a_new_file_needs_no_force(
    name: str, small: tuple[Path, Path], raters: Path, runner: CliRunner, tmp_path: Path
) -> None:
    args = commands(*small, raters)[name]
    out = tmp_path / "new.csv"

    result = runner.invoke(app, [*args, "-o", str(out)])

    assert result.exit_code == 0, result.output
    assert out.read_bytes() == runner.invoke(app, args).stdout_bytes


@pytest.mark.parametrize("name", ["query", "filter-raters", "export"])
def test_a_device_is_written_without_force(
    name: str, small: tuple[Path, Path], raters: Path, runner: CliRunner
) -> None:
    """/dev/null exists but is no file to lose: `-o /dev/null` needs no --force."""
    result = runner.invoke(app, [*commands(*small, raters)[name], "-o", os.devnull])

    assert result.exit_code == 0, result.output
    assert result.stdout == ""


# --- inputs are never overwritten, --force or not ---------------------------------------


@pytest.mark.parametrize("force", [[], ["--force"]], ids=["plain", "force"])
def test_validate_never_overwrites_the_file_it_checks(
    force: list[str], runner: CliRunner, tmp_path: Path
) -> None:
    first, second = tmp_path / "a.csv", tmp_path / "b.csv"
    first.write_bytes(build("350"))
    second.write_bytes(build("990"))

    result = runner.invoke(app, ["validate", str(first), str(second), "-o", str(second), *force])

    assert_refused(result, input_message(second))
    assert second.read_bytes() == build("990")


@pytest.mark.parametrize("spelling", ["relative", "symlink", "hardlink"])
def test_an_input_is_recognised_however_it_is_spelled(
    spelling: str, runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "dices.csv"
    source.write_bytes(build())
    monkeypatch.chdir(tmp_path)
    if spelling == "relative":
        out = Path("sub/../dices.csv")
        (tmp_path / "sub").mkdir()
    elif spelling == "symlink":
        out = tmp_path / "link.csv"
        out.symlink_to(source)
    else:
        out = tmp_path / "hard.csv"
        os.link(source, out)

    result = runner.invoke(app, ["validate", str(source), "-o", str(out), "--force"])

    assert_refused(result, input_message(out))
    assert source.read_bytes() == build()


@pytest.mark.parametrize("force", [[], ["--force"]], ids=["plain", "force"])
def test_export_never_overwrites_the_file_that_was_ingested(
    force: list[str], runner: CliRunner, tmp_path: Path
) -> None:
    source, data = tmp_path / "dices_350.csv", tmp_path / "data"
    source.write_bytes(build())
    assert runner.invoke(app, ["ingest", str(source), "--data", str(data)]).exit_code == 0

    result = runner.invoke(
        app, ["export", "-d", "350", "--data", str(data), "-o", str(source), *force]
    )

    assert_refused(result, input_message(source))
    assert source.read_bytes() == build()


@pytest.mark.parametrize(
    "name", ["info", "export", "query", "sql", "filter-raters", "filter-raters --ids-only"]
)
def test_nothing_in_the_data_directory_is_overwritten(
    name: str, small: tuple[Path, Path], raters: Path, runner: CliRunner
) -> None:
    _, data = small
    target = (data / "350" / "ratings.parquet").resolve()
    before = target.read_bytes()
    out = data / "350" / "ratings.parquet"

    result = runner.invoke(app, [*commands(*small, raters)[name], "-o", str(out), "--force"])

    assert_refused(result, f"-o {out} is inside the data directory {data}; choose another file")
    assert target.read_bytes() == before


@pytest.mark.parametrize("command", ["query", "sql"])
def test_the_raters_file_is_never_overwritten(
    command: str, small: tuple[Path, Path], raters: Path, runner: CliRunner
) -> None:
    _, data = small
    before = raters.read_bytes()
    args = {
        "query": ["query", "overview"],
        "sql": ["sql", "SELECT count(*) AS n FROM raters"],
    }[command]

    result = runner.invoke(
        app, [*args, "--data", str(data), "--raters", str(raters), "-o", str(raters), "--force"]
    )

    assert_refused(result, input_message(raters))
    assert raters.read_bytes() == before


def test_filter_raters_refuses_before_writing_a_filtered_directory(
    small: tuple[Path, Path], runner: CliRunner, tmp_path: Path
) -> None:
    _, data = small
    out, written = existing(tmp_path), tmp_path / "filtered"

    result = runner.invoke(
        app, ["filter-raters", "--data", str(data), "--write", str(written), "-o", str(out)]
    )

    assert_refused(result, exists_message(out))
    assert not written.exists()


def test_filter_raters_force_is_still_refused_alone(
    small: tuple[Path, Path], runner: CliRunner
) -> None:
    result = runner.invoke(app, ["filter-raters", "--data", str(small[1]), "--force"])

    assert result.exit_code == 2
    assert result.stderr.startswith("Error: --force only applies with --write DIR or -o FILE\n")


# --- ingest --rejects --------------------------------------------------------------------


def messy(tmp_path: Path) -> Path:
    """A DICES-350 file whose row 2 has a phase that does not exist."""
    body = rows("350", 2, 3)
    body[2]["phase"] = "Phase9"
    path = tmp_path / "messy.csv"
    path.write_bytes(to_csv(header("350"), [list(r.values()) for r in body]))
    return path


def test_rejects_refuses_an_existing_file_and_ingests_nothing(
    runner: CliRunner, tmp_path: Path
) -> None:
    source, data, rejects = messy(tmp_path), tmp_path / "data", existing(tmp_path, "rej.csv")

    result = runner.invoke(
        app, ["ingest", str(source), "--data", str(data), "--rejects", str(rejects)]
    )

    assert_refused(result, exists_message(rejects))
    assert rejects.read_bytes() == OLD
    assert not (data / "350").exists()


def test_rejects_with_force_replaces_the_file(runner: CliRunner, tmp_path: Path) -> None:
    source, data, rejects = messy(tmp_path), tmp_path / "data", existing(tmp_path, "rej.csv")

    result = runner.invoke(
        app, ["ingest", str(source), "--data", str(data), "--rejects", str(rejects), "--force"]
    )

    assert result.exit_code == 0, result.output
    records = list(csv.reader(io.StringIO(rejects.read_text(), newline="")))
    assert [r[:2] for r in records] == [["file", "line"], ["messy.csv", "8"]]
    assert records[1][2].startswith("not-in-enum in phase: 'Phase9' is not an allowed value")


@pytest.mark.parametrize("force", [[], ["--force"]], ids=["plain", "force"])
def test_rejects_never_overwrites_an_input(
    force: list[str], runner: CliRunner, tmp_path: Path
) -> None:
    source, data = messy(tmp_path), tmp_path / "data"
    before = source.read_bytes()

    result = runner.invoke(
        app, ["ingest", str(source), "--data", str(data), "--rejects", str(source), *force]
    )

    assert_refused(result, input_message(source, "--rejects"))
    assert source.read_bytes() == before
    assert not (data / "350").exists()


@pytest.mark.parametrize("name", ["validate", "export", "filter-raters --ids-only"])
def test_a_file_that_cannot_be_created_is_a_clear_error(
    name: str, small: tuple[Path, Path], raters: Path, runner: CliRunner, tmp_path: Path
) -> None:
    out = tmp_path / "missing" / "out.csv"

    result = runner.invoke(app, [*commands(*small, raters)[name], "-o", str(out)])

    assert result.exit_code == 1
    assert result.stdout == ""
    # (filter-raters prints its audit first: the file is opened once the ids are known)
    assert result.stderr.endswith(f"Error: cannot write {out}: No such file or directory\n")
    assert "Traceback" not in result.stderr
