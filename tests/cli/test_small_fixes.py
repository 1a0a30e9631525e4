"""Smaller things a user hits (issue 11, section 5): each with its exact output and exit code."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from fixtures.dices_csv import build
from typer.testing import CliRunner

from dices_cli import __version__
from dices_cli.cli.main import app
from dices_cli.runs.demo import demo_predictions_path
from tests.drivers.demo import KeptDemo, kept_demo_fixture  # noqa: F401 (a fixture)

KNOWN = ".csv, .tsv, .tab, .json, .jsonl, .ndjson, .parquet"


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory holding a small DICES-350. Read-only."""
    root = tmp_path_factory.mktemp("small")
    source, data = root / "dices_350.csv", root / "data"
    source.write_bytes(build("350", 4, 5))
    result = CliRunner().invoke(app, ["ingest", str(source), "--data", str(data)])
    assert result.exit_code == 0, result.output
    return data


# ----------------------------------------------------------------- -o with an unknown extension


@pytest.mark.parametrize(
    ("command", "name"),
    [
        (["query", "--list"], "out.xlsx"),
        (["info"], "out.txt"),
        (["query", "overview"], "OUT.XLSX"),
        (["sql", "SELECT 1 AS one"], "out.csv.bak"),
        (["filter-raters"], "raters.xlsx"),
    ],
)
def test_an_unknown_output_extension_is_a_usage_error(
    runner: CliRunner, small: Path, tmp_path: Path, command: list[str], name: str
) -> None:
    out = tmp_path / name
    data = ["--data", str(small)] if command != ["query", "--list"] else []
    result = runner.invoke(app, [*command, *data, "-o", str(out)])
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    suffix = Path(name).suffix
    assert result.stderr == (
        f"Error: -o {out}: dices does not write {suffix} files; name it {KNOWN}, "
        "or give --format\n"
        f"Try 'dices {command[0]} -h' for help.\n"
    )
    assert not out.exists()


def test_filter_raters_refuses_the_extension_before_writing(
    runner: CliRunner, small: Path, tmp_path: Path
) -> None:
    written, out = tmp_path / "filtered", tmp_path / "raters.xlsx"
    result = runner.invoke(
        app, ["filter-raters", "--data", str(small), "--write", str(written), "-o", str(out)]
    )
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"Error: -o {out}: dices does not write .xlsx files")
    assert not written.exists()
    assert not out.exists()


@pytest.mark.parametrize(("fmt", "expected"), [("csv", "one\n1\n"), ("json", '[{"one": 1}]\n')])
def test_format_given_writes_any_extension(
    runner: CliRunner, small: Path, tmp_path: Path, fmt: str, expected: str
) -> None:
    out = tmp_path / "out.txt"
    result = runner.invoke(
        app, ["sql", "SELECT 1 AS one", "--data", str(small), "--format", fmt, "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert out.read_text() == expected


def test_no_extension_is_csv(runner: CliRunner, small: Path, tmp_path: Path) -> None:
    out = tmp_path / "results"
    result = runner.invoke(app, ["sql", "SELECT 1 AS one", "--data", str(small), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text() == "one\n1\n"


# ----------------------------------------------------------------------------- -V


@pytest.mark.parametrize("flag", ["-V", "--version"])
def test_version(runner: CliRunner, flag: str) -> None:
    result = runner.invoke(app, [flag])
    assert result.exit_code == 0, result.output
    assert result.stdout == f"dices {__version__}\n"
    assert result.stderr == ""


# ----------------------------------------------------------------------------- demo hints


def demo_hints(stderr: str) -> list[str]:
    return [line.removeprefix("  try: ") for line in stderr.splitlines() if "try:" in line]


def test_the_demo_keeps_its_data_in_dices_demo_and_every_hint_works(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["demo"])
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith("Ingesting the bundled sample into dices-demo ...\n")
    assert result.stderr.endswith(
        "\nThe sample stays in dices-demo; remove that directory when you are done.\n"
    )
    hints = demo_hints(result.stderr)
    assert hints == [
        "dices info --data dices-demo",
        "dices query overview --data dices-demo",
        "dices query qoverall-by-demographic --by rater_age --data dices-demo",
        "dices query gold-vs-crowd --data dices-demo",
        "dices query item-distribution --sort -entropy_bits --limit 5 --data dices-demo",
        f"dices evaluate {shlex.quote(str(demo_predictions_path()))} --data dices-demo",
        "dices judge --model baseline:random --seed 1 --data dices-demo -o judge.csv --evaluate",
    ]
    for hint in hints:
        command = shlex.split(hint)
        assert command[0] == "dices"
        typed = runner.invoke(app, command[1:])
        assert typed.exit_code == 0, (hint, typed.output)
        assert typed.stdout != ""
    # the most contested conversations come first (the section's rows: see
    # tests/cli/test_canned_commands.py::test_the_demo_recipe_runs_as_typed)
    typed = runner.invoke(app, [*shlex.split(hints[4])[1:], "-f", "csv"])
    entropy = [float(row.split(",")[-1]) for row in typed.stdout.splitlines()[1:]]
    assert len(entropy) == 5 and entropy == sorted(entropy, reverse=True)
    # The demo again, after its hints ran there, replaces its sample: the same tour.
    again = runner.invoke(app, ["demo"])
    assert again.exit_code == 0, again.output
    assert again.stdout == result.stdout


def test_the_demo_hints_name_a_kept_directory_quoted(
    runner: CliRunner, kept_demo: KeptDemo
) -> None:
    result, keep = kept_demo.result, kept_demo.keep
    assert " " in keep.name
    assert result.exit_code == 0, result.output
    data = shlex.quote(str(keep))
    assert demo_hints(result.stderr)[:2] == [
        f"dices info --data {data}",
        f"dices query overview --data {data}",
    ]
    typed = runner.invoke(app, shlex.split(demo_hints(result.stderr)[1])[1:])
    assert typed.exit_code == 0, typed.output


def test_the_demo_refuses_a_directory_holding_other_data(
    runner: CliRunner, small: Path, tmp_path: Path
) -> None:
    before = sorted(p.name for p in small.rglob("*"))
    result = runner.invoke(app, ["demo", "--keep", str(small)])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == (
        f"Ingesting the bundled sample into {small} ...\n"
        f"Error: {small} holds DICES-350 ingested from dices_350.csv, not the demo sample; "
        "give the demo another directory\n"
    )
    assert sorted(p.name for p in small.rglob("*")) == before


# ----------------------------------------------------------------------------- dices sql


def sql(runner: CliRunner, data: Path, *args: str) -> str:
    result = runner.invoke(app, ["sql", *args, "--data", str(data), "--format", "csv"])
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    return result.stdout


@pytest.mark.parametrize(
    "statement",
    [
        "SHOW TABLES",
        "SELECT table_name AS name FROM information_schema.tables "
        "WHERE table_schema = current_schema() ORDER BY name",
    ],
)
def test_sql_lists_only_the_views(runner: CliRunner, small: Path, statement: str) -> None:
    assert sql(runner, small, statement) == (
        "name\nitems\npublished_removed\nraters\nratings\nratings_wide\n"
    )


@pytest.mark.parametrize("flags", [[], ["--raters", "-"], ["--exclude-removed"]])
def test_the_views_still_read_the_internal_tables(
    runner: CliRunner, small: Path, flags: list[str]
) -> None:
    two_raters = sql(runner, small, "SELECT rater_id FROM raters ORDER BY rater_id LIMIT 2")
    result = runner.invoke(
        app,
        ["sql", "SELECT count(*) AS n FROM ratings", "--data", str(small), "-f", "csv", *flags],
        input=two_raters,
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == ("n\n8\n" if flags == ["--raters", "-"] else "n\n20\n")


def test_sql_schema(runner: CliRunner, small: Path) -> None:
    lines = sql(runner, small, "--schema").splitlines()
    assert lines[:13] == [
        "view,column,type,values",
        "items,dataset,VARCHAR,",
        "items,item_id,BIGINT,",
        "items,context,VARCHAR,",
        "items,response,VARCHAR,",
        "items,degree_of_harm,ENUM,Benign|Debatable|Moderate|Extreme",
        "items,harm_type,VARCHAR,",
        "items,safety_gold,ENUM,No|Yes",
        "items,safety_gold_reason,VARCHAR,",
        "items,harm_tags,VARCHAR[],",
        "items,safety_gold_reasons,VARCHAR[],",
        "published_removed,dataset,VARCHAR,",
        "published_removed,rater_id,BIGINT,",
    ]
    assert "raters,rater_age,ENUM,gen z|millenial|gen x+" in lines
    assert "ratings,answer_timestamp,TIMESTAMP WITH TIME ZONE," in lines
    assert "ratings,Q_overall,ENUM,No|Yes|Unsure" in lines
    assert "ratings,granular_answers,ENUM[],No|Yes|Unsure" in lines
    assert "ratings_wide,implied_overall,ENUM,No|Yes|Unsure" in lines
    assert {line.split(",")[0] for line in lines[1:]} == {
        "items",
        "published_removed",
        "raters",
        "ratings",
        "ratings_wide",
    }


def test_sql_schema_goes_through_the_output_path(
    runner: CliRunner, small: Path, tmp_path: Path
) -> None:
    out = tmp_path / "schema.jsonl"
    result = runner.invoke(app, ["sql", "--schema", "--data", str(small), "-o", str(out)])
    assert result.exit_code == 0, result.output
    first = out.read_text().splitlines()[0]
    assert first == '{"view": "items", "column": "dataset", "type": "VARCHAR", "values": null}'


@pytest.mark.parametrize("args", [[], ["SELECT 1", "--schema"]])
def test_sql_wants_a_statement_or_schema(runner: CliRunner, small: Path, args: list[str]) -> None:
    result = runner.invoke(app, ["sql", *args, "--data", str(small)])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == (
        "Error: give either one SELECT statement or --schema\nTry 'dices sql -h' for help.\n"
    )


# ----------------------------------------------------------------------------- -q/--quiet


@pytest.mark.parametrize("flag", ["-q", "--quiet"])
def test_quiet_ingest_and_demo_say_nothing(runner: CliRunner, tmp_path: Path, flag: str) -> None:
    source = tmp_path / "dices_350.csv"
    source.write_bytes(build("350", 4, 5))
    ingested = runner.invoke(app, ["ingest", str(source), "--data", str(tmp_path / "d"), flag])
    assert ingested.exit_code == 0, ingested.output
    assert ingested.stderr == ""
    demo = runner.invoke(app, [flag, "demo", "--keep", str(tmp_path / "demo")])
    assert demo.exit_code == 0, demo.output
    assert demo.stderr == ""
    assert "How raters answered Q_overall" in demo.stdout


def test_quiet_filter_raters_keeps_the_data_and_drops_the_audit(
    runner: CliRunner, small: Path
) -> None:
    loud = runner.invoke(app, ["filter-raters", "--data", str(small), "-f", "csv"])
    quiet = runner.invoke(app, ["filter-raters", "--data", str(small), "-f", "csv", "-q"])
    assert loud.exit_code == quiet.exit_code == 0, quiet.output
    assert loud.stderr != ""
    assert quiet.stderr == ""
    assert quiet.stdout == loud.stdout


def test_quiet_still_shows_errors(runner: CliRunner, tmp_path: Path) -> None:
    missing = tmp_path / "none"
    result = runner.invoke(app, ["info", "-q", "--data", str(missing)])
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: nothing is ingested in {missing}; run `dices ingest FILE --data {missing}` first\n"
    )
    usage = runner.invoke(app, ["-q", "sql", "--data", str(missing)])
    assert usage.exit_code == 2
    assert usage.stderr == (
        "Error: give either one SELECT statement or --schema\nTry 'dices sql -h' for help.\n"
    )


def test_quiet_lasts_one_run(runner: CliRunner, small: Path) -> None:
    runner.invoke(app, ["-q", "query", "--list"])
    result = runner.invoke(app, ["filter-raters", "--data", str(small), "-f", "csv"])
    assert result.stderr.startswith("filter: removes raters")


@pytest.mark.parametrize(
    "command",
    ["ingest", "validate", "info", "export", "demo", "query", "sql", "filter-raters", "verify"],
)
def test_every_command_takes_quiet(runner: CliRunner, command: str) -> None:
    result = runner.invoke(app, [command, "-h"])
    assert result.exit_code == 0
    assert "--quiet" in result.stdout
    assert "-q" in result.stdout


# ----------------------------------------------------------------------------- filter-raters

SUMMARY = (
    "filter: removes raters with a quality score below 0.45 (docs/rater-quality.md)\n"
    "DICES-350: kept 2 of 5 raters (3 removed) and 8 of 20 ratings\n"
    "  signals scored: speed, straightlining, consistency, agreement, comprehension\n"
    "  vs the 0 raters the DICES authors removed: 0 removed here too "
    "(recall n/a, precision 0.00)\n"
)


@pytest.mark.parametrize("args", [["-f", "csv"], ["--ids-only"]])
def test_filter_raters_says_a_short_summary(
    runner: CliRunner, small: Path, args: list[str]
) -> None:
    result = runner.invoke(app, ["filter-raters", "--data", str(small), *args])
    assert result.exit_code == 0, result.output
    assert result.stderr == SUMMARY + "(--audit prints the whole audit)\n"


def test_filter_raters_audit_says_all_of_it(runner: CliRunner, small: Path) -> None:
    result = runner.invoke(app, ["filter-raters", "--data", str(small), "--audit"])
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith(SUMMARY + "  removed by rater_gender: Man 0/2 (0%), ")
    assert result.stderr.endswith(
        "  conversations: 2 of 4 change their plurality label; mean total-variation distance "
        "0.5000 (largest 0.6000)\n"
    )


def test_filter_raters_write_prints_no_table_unless_asked(
    runner: CliRunner, small: Path, tmp_path: Path
) -> None:
    written = tmp_path / "filtered"
    result = runner.invoke(app, ["filter-raters", "--data", str(small), "--write", str(written)])
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert result.stderr == (
        SUMMARY
        + "(--audit prints the whole audit)\n"
        + f"wrote DICES-350: 2 raters, 8 ratings -> {written} (use --data {written})\n"
    )
    asked = runner.invoke(
        app,
        ["filter-raters", "--data", str(small), "--write", str(written), "--force", "-f", "csv"],
    )
    assert asked.exit_code == 0, asked.output
    assert asked.stdout.startswith("dataset,rater_id,score,")


def test_ctrl_c_during_a_duckdb_statement_exits_130_quietly(
    runner: CliRunner, small: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What DuckDB raises when SIGINT arrives while it runs a statement (a real SIGINT would
    # need a timed signal: a flaky test).
    def interrupted(*args: object, **kwargs: object) -> None:
        raise RuntimeError("Query interrupted")

    monkeypatch.setattr("dices_cli.queries.engine.relation_stream", interrupted)
    result = runner.invoke(app, ["sql", "--data", str(small), "SELECT * FROM items"])
    assert (result.exit_code, result.stdout, result.stderr) == (130, "", "")
