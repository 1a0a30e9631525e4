"""`dices query NAME`: commands generated from the catalogue, the result's shape options
(--columns, --sort, --limit), and the documentation generated from the code."""

from __future__ import annotations

import csv
import io
import math
import shlex
import textwrap
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner, Result

from dices_cli.cli.commands import cli_docs
from dices_cli.cli.commands.data import demo_command
from dices_cli.cli.main import app
from dices_cli.errors import UsageError
from dices_cli.output import Stream, Table
from dices_cli.queries import catalog as catalog_module
from dices_cli.queries.catalog import (
    GROUP_COLUMNS,
    ConditionError,
    MissingParameterError,
    ParameterError,
    UnknownQueryError,
    catalog,
    get_query,
)
from dices_cli.queries.engine import NothingIngestedError, chosen_datasets
from dices_cli.runs.demo import MOST_CONTESTED
from dices_cli.shape import Shape, UnknownColumnError, apply
from dices_cli.store.datasets import Store
from tests.drivers.demo import Toured, toured_fixture  # noqa: F401 (a fixture)


def query(data: Path, *args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(app, ["query", *args, "--data", str(data)], env=env)


def help_of(*words: str) -> str:
    """`dices WORDS --help` at the width docs/cli.md uses, with each line's box and blanks
    taken off, so that a test reads it as words."""
    text = cli_docs.help_text(list(words))
    return "\n".join(line.strip("│ ").rstrip() for line in text.splitlines())


def usage_error(result: Result) -> str:
    """The message of one of our usage errors (exit 2, nothing on stdout)."""
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    first, hint = result.stderr.splitlines()
    assert hint == "Try 'dices query -h' for help."
    return first.removeprefix("Error: ")


def click_error(result: Result) -> str:
    """The words of a usage error Click reports (exit 2, in a box on stderr)."""
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    return " ".join(result.stderr.replace("│", " ").replace("╭─ Error ", " ").split())


def csv_rows(result: Result) -> list[list[str]]:
    assert result.exit_code == 0, result.output
    return list(csv.reader(io.StringIO(result.stdout)))


# --- the commands: one per query, with its own options ---------------------------------------


def test_every_query_is_a_command_with_its_own_options_only() -> None:
    commands = {tuple(words): command for words, command in cli_docs.commands()}
    for name, canned in catalog().items():
        text = help_of("query", name)
        assert text.splitlines()[0] == f"Usage: dices query {name} [OPTIONS]"
        assert canned.summary in " ".join(text.split())
        options = {o for p in commands["query", name].params for o in p.opts if o[:2] == "--"}
        options.add("--help")
        shown = {w for line in text.splitlines() for w in line.removeprefix("* ").split()[:1]}
        assert options <= shown, name
        own = {f"--{p.name.replace('_', '-')}" for p in canned.parameters}
        every = {"--dataset", "--exclude-removed", "--raters", "--min-quality", "--show-sql"}
        every |= {"--columns", "--sort", "--limit", "--data", "--format", "--output", "--force"}
        assert options == own | every | {"--explain", "--quiet", "--help"}, name


def test_help_shows_types_ranges_defaults_choices_and_columns() -> None:
    text = help_of("query", "gold-vs-crowd")
    lines = text.splitlines()
    assert "Confusion of the experts' safety_gold with the crowd's label per conversation." in lines
    assert "Datasets: DICES-350. SQL: gold-vs-crowd.sql." in lines
    assert "Columns:" in lines
    assert "dataset: The dataset: 350 or 990." in lines
    assert "(--by): One column per --by column, holding the group's value (phase first, then" in (
        text
    )
    words = " ".join(text.split())
    assert "--rule <plurality|threshold> How the crowd's label is decided." in words
    assert "decided. [default: plurality]" in words
    assert "--threshold <float range> [0.0<=x<=1.0]" in words
    assert "makes the crowd say Yes. [default: 0.5]" in words
    assert (
        "--by COLUMN Compute the crowd label from this group's raters only. One of: "
        + (", ".join(GROUP_COLUMNS) + ".")
        in words
    )
    assert "--permutations" not in words
    agreement = " ".join(help_of("query", "agreement").split())
    assert "--question COLUMN The answer column to measure agreement on. A column with" in agreement
    assert "--seed <int range> [0<=x<=4294967295]" in agreement
    assert "[required]" in " ".join(help_of("query", "qoverall-by-demographic").split())


def test_explain_still_works_and_needs_no_required_option(sample: Path) -> None:
    result = query(sample, "qoverall-by-demographic", "--explain")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("qoverall-by-demographic: Q_overall per demographic group")
    assert "  --by (columns, required): " in result.stdout


def test_an_unknown_query_says_the_nearest_then_lists_the_queries(sample: Path) -> None:
    """The nearest name first; then every query, those of ProsocialDialog alone marked."""
    listed = (
        "agreement, degree-of-harm, gold-vs-crowd-summary, gold-vs-crowd, group-disagreement, "
        "harm-types, item-distribution, overview, qoverall-by-demographic, rater-quality, "
        "label-check (ProsocialDialog only), source-breakdown (ProsocialDialog only), "
        "gold-vs-crowd-items (declared datasets only), "
        "label-by-group (declared datasets only), label-distribution (declared datasets only) "
        "(`dices query --list` describes them)"
    )
    result = query(sample, "qoveral-by-demographic")
    assert result.exit_code == 2
    assert usage_error(result) == (
        f"no query 'qoveral-by-demographic': did you mean 'qoverall-by-demographic'? "
        f"The queries are: {listed}"
    )
    assert usage_error(query(sample, "xyz")) == f"no query 'xyz'; the queries are: {listed}"


def test_an_option_of_another_query_is_named(sample: Path) -> None:
    assert usage_error(query(sample, "overview", "--rule", "threshold")) == (
        "overview does not take --rule; it takes: no options"
    )
    # An option no query has is Click's to report.
    assert "No such option: --bogus" in click_error(query(sample, "overview", "--bogus", "1"))


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["gold-vs-crowd", "--rule", "x"], "Invalid value for '--rule': 'x' is not one of"),
        (["gold-vs-crowd", "--rule", "threshold", "--threshold", "nan"], "nan is not in the range"),
        (["qoverall-by-demographic"], "Missing option '--by'."),
        (["item-distribution", "--by", "rater_height"], "'rater_height' is not one of"),
    ],
)
def test_click_checks_values_against_the_header(args: list[str], words: str, sample: Path) -> None:
    assert words in click_error(query(sample, *args))


def test_the_threshold_rule_is_a_header_condition(sample: Path) -> None:
    assert usage_error(query(sample, "gold-vs-crowd", "--threshold", "0.3")) == (
        "--threshold applies only with --rule threshold"
    )
    condition = get_query("gold-vs-crowd").conditions[0]
    assert (condition.parameter, condition.other, condition.value) == (
        "threshold",
        "rule",
        "threshold",
    )
    # The default threshold is not "given": the plurality rule runs.
    assert query(sample, "gold-vs-crowd", "-f", "csv").exit_code == 0


def test_the_core_raises_facts_not_flags() -> None:
    canned = get_query("gold-vs-crowd")
    with pytest.raises(ConditionError) as condition:
        canned.bind({"threshold": 0.3})
    assert (condition.value.parameter, condition.value.other, condition.value.value) == (
        "threshold",
        "rule",
        "threshold",
    )
    with pytest.raises(MissingParameterError) as missing:
        get_query("qoverall-by-demographic").bind({})
    assert missing.value.parameter == "by"
    with pytest.raises(ParameterError) as outside:
        canned.bind({"rule": "threshold", "threshold": 2})
    assert (outside.value.parameter, outside.value.reason) == (
        "threshold",
        "must be a number between 0 and 1 (got 2)",
    )
    with pytest.raises(UnknownQueryError) as unknown:
        get_query("nope")
    assert unknown.value.known == tuple(sorted(catalog()))
    for error in (condition, missing, outside, unknown):
        assert "--" not in str(error.value)


# --- a new query is a new file --------------------------------------------------------------

NEW_QUERY = """\
-- name: long-conversations
-- summary: Conversations with at least a cutoff number of ratings per rater, per dataset.
-- datasets: 350 990
-- param cutoff: float in [0, 5] = 1: Least ratings per rater a conversation needs.
-- column dataset: The dataset.
-- column conversations: Conversations at or above the cutoff.
-- explanation:
--   A query that exists only in a test's catalogue.
SELECT dataset, count(*) FILTER (WHERE per_rater >= $cutoff) AS conversations
FROM (
    SELECT dataset, item_id, count(*) / count(DISTINCT rater_id) AS per_rater
    FROM ratings GROUP BY ALL
)
GROUP BY dataset ORDER BY dataset
"""


def test_a_new_sql_file_makes_a_working_command(
    sample: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "long-conversations.sql").write_text(NEW_QUERY, encoding="utf-8")
    monkeypatch.setenv("DICES_SQL_DIR", str(tmp_path))
    assert list(catalog()) == ["long-conversations"]

    text = help_of("query", "long-conversations")
    words = " ".join(text.split())
    assert "--cutoff <float range> [0.0<=x<=5.0] Least ratings per rater" in words
    assert "[default: 1]" in words
    assert "conversations: Conversations at or above the cutoff." in text.splitlines()

    rows = csv_rows(query(sample, "long-conversations", "--cutoff", "2", "-f", "csv"))
    assert rows == [["dataset", "conversations"], ["350", "0"], ["990", "0"]]
    rows = csv_rows(query(sample, "long-conversations", "--cutoff", "0", "-f", "csv"))
    sample_items = CliRunner().invoke(
        app,
        [
            *("sql", "SELECT dataset, count(*) FROM items GROUP BY ALL ORDER BY 1"),
            *("--data", str(sample), "-f", "csv"),
        ],
    )
    assert rows[1:] == csv_rows(sample_items)[1:]
    assert "not in the range 0.0<=x<=5.0" in click_error(
        query(sample, "long-conversations", "--cutoff", "6")
    )
    listed = CliRunner().invoke(app, ["query", "--list", "-f", "csv"])
    assert csv_rows(listed)[1][:3] == ["long-conversations", "350 990", "--cutoff"]


# --- the declared columns are the real ones -------------------------------------------------


def _variants(name: str) -> list[dict[str, Any]]:
    """Values to run each query with: its required parameters, and a group when it takes one."""
    canned = get_query(name)
    fast = {"permutations": 10} if canned.parameter("permutations") else {}
    if canned.parameter("by") is None:
        return [fast]
    grouped = {**fast, "by": ["rater_age", "phase"]}  # given out of the data's order
    return [grouped] if canned.parameter("by").required else [fast, grouped]  # type: ignore[union-attr]


def _arguments(values: dict[str, Any]) -> list[str]:
    arguments = []
    for name, value in values.items():
        for item in value if isinstance(value, list) else [value]:
            arguments += [f"--{name}", str(item)]
    return arguments


@pytest.mark.parametrize("name", sorted(catalog()))
def test_every_query_has_the_columns_its_header_declares(name: str, sample: Path) -> None:
    canned = get_query(name)
    for values in _variants(name):
        rows = csv_rows(query(sample, name, *_arguments(values), "-f", "csv"))
        assert rows[0] == canned.output_columns(canned.bind(values)), values
        assert len(rows) > 1


# --- --columns, --sort, --limit ---------------------------------------------------------------


def test_sort_descending_limit_and_columns(sample: Path) -> None:
    every = csv_rows(query(sample, "item-distribution", "-f", "csv"))
    entropy = every[0].index("entropy_bits")
    expected = sorted(every[1:], key=lambda row: -float(row[entropy]))[:3]
    rows = csv_rows(
        query(
            sample,
            "item-distribution",
            "--sort",
            "-entropy_bits",
            "--limit",
            "3",
            "--columns",
            "item_id,entropy_bits",
            "-f",
            "csv",
        )
    )
    assert rows == [["item_id", "entropy_bits"], *([r[1], r[entropy]] for r in expected)]


def test_unknown_columns_name_the_columns_there_are(sample: Path) -> None:
    columns = "dataset, conversations, raters, ratings, share_no, share_yes, share_unsure"
    for option in ("--sort", "--columns"):
        assert usage_error(query(sample, "overview", option, "-nope")) == (
            f"the result has no column {'-nope' if option == '--columns' else 'nope'!r}; "
            f"its columns are: {columns}"
        )


def test_dices_sql_takes_the_shape_options(sample: Path) -> None:
    statement = "SELECT dataset, item_id FROM items"
    result = CliRunner().invoke(
        app,
        [
            *("sql", statement, "--sort", "-item_id", "--limit", "2", "--columns", "item_id"),
            *("--data", str(sample), "-f", "csv"),
        ],
    )
    top = csv_rows(
        CliRunner().invoke(
            app,
            ["sql", "SELECT max(item_id) AS m FROM items", "--data", str(sample), "-f", "csv"],
        )
    )[1][0]
    rows = csv_rows(result)
    assert rows[0] == ["item_id"] and rows[1] == [top] and len(rows) == 3


@pytest.mark.parametrize(
    ("columns", "sort", "message"),
    [
        ("a,,b", None, "give column names separated by commas (got 'a,,b')"),
        ("a,b,a", None, "column 'a' is named twice"),
        (None, "-", "name the column to sort by, with - in front to sort descending"),
    ],
)
def test_bad_shapes(columns: str | None, sort: str | None, message: str) -> None:
    with pytest.raises(UsageError) as refused:
        Shape.parse(columns, sort, None)
    assert str(refused.value) == message


# Rows of (key, value): every value of one type, as in a query's column, or missing.
ROWS = st.sampled_from(
    [st.integers(-5, 5), st.floats(allow_infinity=False), st.sampled_from(["a", "B", ""])]
).flatmap(lambda kind: st.lists(st.tuples(st.integers(0, 3), st.none() | kind), max_size=30))


@given(ROWS, st.sampled_from(["key", "value"]), st.booleans(), st.none() | st.integers(0, 40))
def test_a_table_and_a_stream_take_the_same_shape(
    rows: list[tuple[Any, Any]], sort: str, descending: bool, limit: int | None
) -> None:
    shape = Shape(("value", "key"), sort, descending, limit)
    table = apply(Table(["key", "value"], [True, False], rows), shape)
    assert isinstance(table, Table)
    arrow = pa.table({"key": [r[0] for r in rows], "value": [r[1] for r in rows]})
    stream = apply(Stream(arrow.schema, iter(arrow.to_batches(max_chunksize=4))), shape)
    assert isinstance(stream, Stream)
    streamed = [tuple(r.values()) for b in stream.batches for r in b.to_pylist()]
    assert _same(streamed, table.rows)
    assert len(table.rows) == min(len(rows), len(rows) if limit is None else limit)
    sorted_by = [row[0 if sort == "value" else 1] for row in table.rows]
    ranks = [_missing(v) for v in sorted_by]
    assert ranks == sorted(ranks)  # values, then NaN, then missing values
    values = [v for v in sorted_by if _missing(v) == 0]
    assert values == sorted(values, reverse=descending)


def _missing(value: Any) -> int:
    if value is None:
        return 2
    return 1 if isinstance(value, float) and math.isnan(value) else 0


def _same(left: list[tuple], right: list[tuple]) -> bool:
    def key(row: tuple) -> tuple:
        return tuple("nan" if isinstance(v, float) and math.isnan(v) else v for v in row)

    return [key(r) for r in left] == [key(r) for r in right]


def test_a_limited_stream_reads_no_batch_after_the_rows_it_keeps() -> None:
    read = []
    schema = pa.schema([("n", pa.int64())])

    def batches() -> Any:
        for start in range(0, 100, 10):
            read.append(start)
            yield pa.record_batch([pa.array(range(start, start + 10))], schema=schema)

    stream = apply(Stream(schema, batches()), Shape(limit=15))
    assert isinstance(stream, Stream)
    assert [n for b in stream.batches for n in b.column(0).to_pylist()] == list(range(15))
    assert read == [0, 10]
    with pytest.raises(UnknownColumnError):
        apply(Stream(schema, batches()), Shape(sort="m"))


def test_the_demo_recipe_runs_as_typed(toured: Toured) -> None:
    contested = next(s for s in toured.sections if "most contested" in s.title)
    words = shlex.split(demo_command(contested.name, toured.workdir))
    assert words[:2] == ["dices", "query"] and "|" not in words
    rows = csv_rows(CliRunner().invoke(app, [*words[1:], "-f", "csv"]))
    assert len(rows) == MOST_CONTESTED + 1
    ids = rows[0].index("item_id"), rows[0].index("dataset")
    shown = [(str(r[1]), str(r[0])) for r in contested.table.rows]
    assert [(r[ids[0]], r[ids[1]]) for r in rows[1:]] == shown


# --- documentation generated from the code ----------------------------------------------------


def test_docs_cli_md_is_what_the_code_says() -> None:
    assert cli_docs.CLI_DOC.read_text(encoding="utf-8") == cli_docs.cli_markdown(), (
        f"docs/cli.md is out of date: run `{cli_docs.REGENERATE}`"
    )


def test_the_readme_query_table_is_the_catalogue() -> None:
    readme = cli_docs.README.read_text(encoding="utf-8")
    assert readme == cli_docs.readme_with_table(readme), (
        f"README.md's query table is out of date: run `{cli_docs.REGENERATE}`"
    )


def test_every_command_and_option_has_help() -> None:
    seen = 0
    for words, command in cli_docs.commands():
        assert (command.help or "").strip(), f"dices {' '.join(words)} has no help"
        for parameter in command.params:
            assert (getattr(parameter, "help", None) or "").strip(), (
                f"dices {' '.join(words)}: {parameter.name} has no help"
            )
            seen += 1
    assert seen > 200


def test_the_generated_table_lists_every_query() -> None:
    table = cli_docs.query_table()
    for name in catalog():
        assert f"| `{name}` |" in table
    assert "`--rule plurality\\|threshold`" in table
    assert "`--threshold 0..1`" in table
    assert textwrap.dedent(table).startswith(
        "| query | what it tells | options | columns (**the answer**) |"
    )
    assert (
        "| dataset, the --by columns, raters, ratings, n_no, n_yes, n_unsure, share_no, "
        "**share_yes**, share_unsure, **share_yes_ci_low**, **share_yes_ci_high**, interval, "
        "interval_note, difference, difference_ci_low, difference_ci_high, p_value, p_adjusted, "
        "p_groups_differ |" in table
    )


def test_dices_help_reads_no_sql(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(directory: Path) -> None:
        raise AssertionError(f"dices --help read the catalogue in {directory}")

    monkeypatch.setattr(catalog_module, "_read_catalog", refuse)
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0, result.output
    assert "query" in result.stdout


def test_nothing_ingested_is_a_fact_the_command_line_words(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    with pytest.raises(NothingIngestedError) as raised:
        chosen_datasets(Store(empty), "all")
    assert (str(raised.value), raised.value.root) == (f"nothing is ingested in {empty}", empty)
    result = CliRunner().invoke(app, ["query", "overview", "--data", str(empty)])
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        f"Error: nothing is ingested in {empty}; run `dices ingest FILE --data {empty}` first\n"
    )
