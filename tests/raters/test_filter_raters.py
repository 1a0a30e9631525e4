"""`dices filter-raters`: the authors' preset, the score against their list, the audit, the
pipeline into queries, --write, --min-quality on every query, and every usage error.

Expected values come from the replica CSV read with pandas and from the replica generator's
own list of removed raters, never from the code under test.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pandas as pd
import pytest
from scipy.stats import fisher_exact
from typer.testing import CliRunner

from dices_cli.cli.main import app
from dices_cli.queries.catalog import catalog
from tests.conftest import GENERATOR
from tests.raters.test_quality import brute_force_p

ANSWERS = ["No", "Yes", "Unsure"]
DEMOGRAPHICS_350 = ["rater_gender", "rater_race", "rater_age", "rater_education"]
TABLE_HEADER = (
    "dataset,rater_id,score,speed,straightlining,consistency,agreement,comprehension,"
    "kept,published_removed"
)
ALL_NO_RATER = 297515729806999  # answered "No" to all 350 conversations (replica README)


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_replica", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def published_350(replica_350: Path) -> set[int]:
    return {int(i) for i in generator().REMOVED_350}


@pytest.fixture(scope="module")
def frame_350(replica_350: Path) -> pd.DataFrame:
    columns = ["rater_id", "item_id", "Q_overall", "answer_time_ms", *DEMOGRAPHICS_350]
    return pd.read_csv(replica_350, usecols=columns)


def filter_raters(runner: CliRunner, data: Path, *args: str) -> Any:
    return runner.invoke(app, ["filter-raters", "--data", str(data), *args])


def rows(stdout: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(stdout)))


def p_text(p: float) -> str:
    return f"{p:.3f}" if p >= 0.001 else "< 0.001"


# --- Must show: the authors' preset --------------------------------------------------------


def test_preset_authors_keeps_104_raters_and_every_conversation_104_ratings(
    runner: CliRunner, ingested: Path, tmp_path: Path, published_350: set[int]
) -> None:
    written = tmp_path / "filtered"
    result = filter_raters(
        runner, ingested, "-d", "350", "--preset", "authors", "--write", str(written), "-f", "csv"
    )
    assert result.exit_code == 0, result.output
    table = rows(result.stdout)
    assert len(table) == 123
    assert sum(r["kept"] == "true" for r in table) == 104
    assert {int(r["rater_id"]) for r in table if r["kept"] == "false"} == published_350
    assert "DICES-350: kept 104 of 123 raters (19 removed) and 36,400 of 43,050 ratings\n" in (
        result.stderr
    )
    assert f"wrote DICES-350: 104 raters, 36,400 ratings -> {written}" in result.stderr

    ratings = pd.read_parquet(written / "350" / "ratings.parquet")
    raters = pd.read_parquet(written / "350" / "raters.parquet")
    items = pd.read_parquet(written / "350" / "items.parquet")
    assert len(ratings) == 36_400 and len(raters) == 104 and len(items) == 350
    per_conversation = ratings.groupby("item_id").size()
    assert len(per_conversation) == 350 and (per_conversation == 104).all()
    assert not set(raters.rater_id) & published_350
    manifest = json.loads((written / "350" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["counts"] == {"conversations": 350, "raters": 104, "ratings": 36_400}
    assert manifest["filter"]["preset"] == "authors"
    assert manifest["filter"]["min_quality"] is None
    assert manifest["filter"]["raters_removed"] == 19
    assert set(manifest["filter"]["removed_rater_ids"]) == published_350
    assert manifest["filter"]["description"] == (
        "removed the raters the DICES authors removed (preset authors)"
    )


def pandas_conversation_changes(frame: pd.DataFrame, kept: set[int]) -> tuple[int, float]:
    """Plurality label changes ('tie' is a label) and mean total-variation distance."""

    def distribution(part: pd.DataFrame) -> pd.DataFrame:
        return pd.crosstab(part.item_id, part.Q_overall).reindex(columns=ANSWERS, fill_value=0)

    def label(counts: pd.DataFrame) -> pd.Series:
        top = counts.max(axis=1)
        winners = counts.eq(top, axis=0)
        return winners.idxmax(axis=1).where(winners.sum(axis=1) == 1, "tie")

    before = distribution(frame)
    after = distribution(frame[frame.rater_id.isin(kept)]).reindex(before.index, fill_value=0)
    flips = int((label(before) != label(after)).sum())
    shares_before = before.div(before.sum(axis=1), axis=0)
    shares_after = after.div(after.sum(axis=1), axis=0)
    tvd = 0.5 * (shares_before - shares_after).abs().sum(axis=1)
    return flips, float(tvd.mean())


def test_preset_authors_audit_agrees_with_pandas(
    runner: CliRunner, ingested: Path, frame_350: pd.DataFrame, published_350: set[int]
) -> None:
    result = filter_raters(runner, ingested, "-d", "350", "--preset", "authors", "--audit")
    assert result.exit_code == 0, result.output
    [audit] = json.loads(result.stdout)

    raters = frame_350.drop_duplicates("rater_id").set_index("rater_id")
    removed = raters.index.isin(published_350)
    kept = set(raters.index[~removed])
    assert (audit["raters"], audit["raters_kept"], audit["raters_removed"]) == (123, 104, 19)
    assert (audit["ratings"], audit["ratings_kept"]) == (43_050, 36_400)
    assert (audit["precision"], audit["recall"]) == (1.0, 1.0)

    by_column = {g["column"]: g for g in audit["groups"]}
    assert list(by_column) == DEMOGRAPHICS_350
    for column in DEMOGRAPHICS_350:
        sizes = raters[column].value_counts()
        removed_counts = raters[removed][column].value_counts().reindex(sizes.index, fill_value=0)
        got = {g["group"]: (g["raters"], g["removed"]) for g in by_column[column]["groups"]}
        assert got == {g: (int(sizes[g]), int(removed_counts[g])) for g in sizes.index}
        groups = list(sizes.index)
        if len(groups) == 2:
            table = [[int(removed_counts[g]), int(sizes[g] - removed_counts[g])] for g in groups]
            expected_p = fisher_exact(table).pvalue
            assert by_column[column]["test"] == "Fisher"
        else:
            expected_p = brute_force_p(
                [int(sizes[g]) for g in groups], [int(removed_counts[g]) for g in groups]
            )
            assert by_column[column]["test"] == "Freeman-Halton"
        assert by_column[column]["p_value"] == pytest.approx(expected_p, rel=1e-9)
        assert by_column[column]["depends_on_group"] == (expected_p < 0.05)

    flips, mean_tvd = pandas_conversation_changes(frame_350, kept)
    assert audit["plurality_changed"] == flips
    assert audit["mean_tvd"] == pytest.approx(mean_tvd, rel=1e-12)
    assert audit["conversations"] == 350 and audit["conversations_without_ratings"] == 0

    # the same numbers, for a person, on stderr
    gender = raters["rater_gender"].value_counts()
    gone = raters[removed]["rater_gender"].value_counts()
    p = fisher_exact([[gone[g], gender[g] - gone[g]] for g in ("Man", "Woman")]).pvalue
    assert (
        f"  removed by rater_gender: Man {gone['Man']}/{gender['Man']} "
        f"({gone['Man'] / gender['Man']:.0%}), Woman {gone['Woman']}/{gender['Woman']} "
        f"({gone['Woman'] / gender['Woman']:.0%}); Fisher exact p = {p_text(p)}\n"
    ) in result.stderr
    assert (
        f"  warning: removal is not independent of rater_gender (Fisher exact p = {p_text(p)}"
        " < 0.05): the filter changes the pool's rater_gender mix\n"
    ) in result.stderr
    assert (
        f"  conversations: {flips} of 350 change their plurality label; mean total-variation "
        f"distance {mean_tvd:.4f}"
    ) in result.stderr


# --- Must show: the default threshold finds most of the authors' removals -----------------


def test_default_threshold_finds_most_of_the_published_removals(
    runner: CliRunner, ingested: Path, published_350: set[int]
) -> None:
    result = filter_raters(runner, ingested, "-d", "350", "-f", "csv")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == TABLE_HEADER
    table = rows(result.stdout)
    assert all(r["kept"] == ("true" if float(r["score"]) >= 0.45 else "false") for r in table)
    removed = {int(r["rater_id"]) for r in table if r["kept"] == "false"}
    found, others = removed & published_350, removed - published_350
    assert len(found) >= 12
    assert len(others) <= 6
    assert ALL_NO_RATER in found
    recall, precision = len(found) / 19, len(found) / len(removed)
    assert (
        f"  vs the 19 raters the DICES authors removed: {len(found)} removed here too "
        f"(recall {recall:.2f}, precision {precision:.2f})\n"
    ) in result.stderr

    audit = json.loads(filter_raters(runner, ingested, "-d", "350", "--audit").stdout)[0]
    assert audit["recall"] == pytest.approx(recall)
    assert audit["precision"] == pytest.approx(precision)


def test_explain_says_what_lowered_the_score(
    runner: CliRunner, ingested: Path, frame_350: pd.DataFrame
) -> None:
    result = filter_raters(runner, ingested, "-d", "350", "--explain", "-f", "csv")
    assert result.exit_code == 0, result.output
    explained = {int(r["rater_id"]): r for r in rows(result.stdout)}
    assert len(explained) == 123
    medians = frame_350.groupby("rater_id").answer_time_ms.median()
    pool, own = medians.median(), medians[ALL_NO_RATER]
    assert explained[ALL_NO_RATER]["explanation"] == (
        "straightlining 0.00: gave the same Q_overall (No) to 350 of 350 conversations; "
        f"speed {own / pool:.2f}: answers {pool / own:.1f}x faster than the pool "
        f"(median {own / 1000:.0f} s vs {pool / 1000:.0f} s per conversation)"
    )
    fastest = medians.idxmin()
    assert explained[fastest]["explanation"].startswith(
        f"speed {medians[fastest] / pool:.2f}: answers {pool / medians[fastest]:.1f}x faster"
    )


# --- Must show: the pipeline, --write, and --min-quality on every query --------------------


def dices_executable() -> str:
    return str(Path(sys.executable).with_name("dices"))


def test_ids_only_pipes_into_a_query_from_a_shell(runner: CliRunner, ingested: Path) -> None:
    env = {**os.environ, "DICES_DATA": str(ingested)}
    dices = dices_executable()
    pipeline = (
        f"{dices} filter-raters --min-quality 0.6 --ids-only "
        f"| {dices} query qoverall-by-demographic --by rater_gender --raters - --format csv"
    )
    piped = subprocess.run(
        pipeline, shell=True, env=env, capture_output=True, text=True, check=True
    )
    table = rows(filter_raters(runner, ingested, "--min-quality", "0.6", "-f", "csv").stdout)
    kept = [r for r in table if r["kept"] == "true"]
    assert f"raters: {len(kept)} raters from stdin" in piped.stderr

    query = ["query", "qoverall-by-demographic", "--by", "rater_gender", "--min-quality", "0.6"]
    direct = runner.invoke(app, [*query, "--data", str(ingested), "--format", "csv"])
    assert direct.exit_code == 0, direct.output
    assert piped.stdout == direct.stdout
    per_group = {(r["dataset"], r["rater_gender"]): int(r["raters"]) for r in rows(direct.stdout)}
    assert sum(per_group.values()) == len(kept)


def test_ids_only_prints_kept_ids_one_per_line(
    runner: CliRunner, ingested: Path, tmp_path: Path
) -> None:
    table = rows(filter_raters(runner, ingested, "-f", "csv").stdout)
    expected = "".join(f"{r['rater_id']}\n" for r in table if r["kept"] == "true")
    result = filter_raters(runner, ingested, "--ids-only")
    assert result.exit_code == 0, result.output
    assert result.stdout == expected
    assert result.stderr.startswith("filter: removes raters with a quality score below 0.45")
    target = tmp_path / "ids.txt"
    assert filter_raters(runner, ingested, "--ids-only", "-o", str(target)).exit_code == 0
    assert target.read_text(encoding="utf-8") == expected


def query_arguments(name: str) -> list[str]:
    """What each canned query needs to run: its required options, and few permutations."""
    query = catalog()[name]
    arguments = [name]
    for parameter in query.parameters:
        if parameter.required:
            arguments += [f"--{parameter.name}", parameter.choices[0]]
        if parameter.name == "permutations":
            arguments += ["--permutations", "20"]
    return arguments


def test_written_data_works_with_every_query(
    runner: CliRunner, ingested: Path, tmp_path: Path
) -> None:
    written = tmp_path / "filtered"
    result = filter_raters(runner, ingested, "--write", str(written), "-f", "csv")
    assert result.exit_code == 0, result.output
    for name in catalog():
        ran = runner.invoke(app, ["query", *query_arguments(name), "--data", str(written)])
        assert ran.exit_code == 0, (name, ran.output)
        assert ran.stdout.count("\n") > 1, name

    def overview(*args: str) -> str:
        ran = runner.invoke(app, ["query", "overview", "-f", "csv", *args])
        assert ran.exit_code == 0, ran.output
        return str(ran.stdout)

    assert overview("--data", str(written)) == overview(
        "--data", str(ingested), "--min-quality", "0.45"
    )
    info = runner.invoke(app, ["info", "--data", str(written), "-f", "json"])
    described = {r["dataset"]: r["filter"] for r in json.loads(info.stdout)}
    assert described == {
        "350": "removed raters with a quality score below 0.45 (docs/rater-quality.md)",
        "990": "removed raters with a quality score below 0.45 (docs/rater-quality.md)",
    }


def test_preset_written_data_equals_excluding_the_published_raters(
    runner: CliRunner, ingested: Path, tmp_path: Path
) -> None:
    written = tmp_path / "authors"
    result = filter_raters(runner, ingested, "--preset", "authors", "--write", str(written))
    assert result.exit_code == 0, result.output
    for name in ("overview", "item-distribution"):
        mine = runner.invoke(app, ["query", name, "-f", "csv", "--data", str(written)])
        theirs = runner.invoke(
            app, ["query", name, "-f", "csv", "--data", str(ingested), "--exclude-removed"]
        )
        assert mine.stdout == theirs.stdout, name


def test_sql_and_query_accept_min_quality(runner: CliRunner, ingested: Path) -> None:
    table = rows(filter_raters(runner, ingested, "-d", "350", "-f", "csv").stdout)
    kept = sum(r["kept"] == "true" for r in table)
    selection = ["-d", "350", "--min-quality", "0.45", "--data", str(ingested), "-f", "csv"]
    counted = runner.invoke(app, ["sql", "SELECT count(*) AS raters FROM raters", *selection])
    assert counted.exit_code == 0, counted.output
    assert counted.stdout == f"raters\n{kept}\n"
    overview = runner.invoke(app, ["query", "overview", *selection])
    assert overview.exit_code == 0, overview.output
    assert rows(overview.stdout)[0]["raters"] == str(kept)
    assert overview.stderr == (
        f"raters: {kept} of 123 raters with a quality score of at least 0.45\n"
    )


# --- output forms --------------------------------------------------------------------------


def test_audit_as_json_lines_and_to_a_file(
    runner: CliRunner, ingested: Path, tmp_path: Path
) -> None:
    result = filter_raters(runner, ingested, "--audit", "-f", "jsonl")
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["dataset"] for r in records] == ["350", "990"]
    assert records[1]["groups"][-1]["column"] == "rater_locale"
    target = tmp_path / "audit.json"
    assert filter_raters(runner, ingested, "--audit", "-o", str(target)).exit_code == 0
    assert json.loads(target.read_text(encoding="utf-8")) == records


def test_990_has_no_speed_and_its_list_is_flagged_unverified(
    runner: CliRunner, ingested: Path
) -> None:
    result = filter_raters(runner, ingested, "-d", "990", "-f", "csv")
    assert result.exit_code == 0, result.output
    table = rows(result.stdout)
    assert len(table) == 173
    assert all(r["speed"] == "" for r in table)
    assert "(a list from one public source, unverified)" in result.stderr


# --- errors --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (
            ["--min-quality", "0.5", "--preset", "authors"],
            2,
            "Error: give --min-quality or --preset, not both",
        ),
        (["--min-quality", "1.5"], 2, "Error: --min-quality must be between 0 and 1 (got 1.5)"),
        (
            ["--ids-only", "--explain"],
            2,
            "Error: --ids-only prints plain ids; leave out --explain, --audit and --format",
        ),
        (
            ["--ids-only", "-f", "csv"],
            2,
            "Error: --ids-only prints plain ids; leave out --explain, --audit and --format",
        ),
        (
            ["--audit", "--explain"],
            2,
            "Error: --explain adds to the rater table, which --audit replaces",
        ),
        (
            ["--audit", "-f", "csv"],
            2,
            "Error: the audit is nested records: use --format json or jsonl with --audit",
        ),
        (["--force"], 2, "Error: --force only applies with --write DIR"),
    ],
)
def test_usage_errors(
    runner: CliRunner, ingested: Path, args: list[str], code: int, message: str
) -> None:
    result = filter_raters(runner, ingested, *args)
    assert result.exit_code == code
    assert message in result.stderr
    assert result.stdout == ""


def test_an_unknown_preset_is_a_usage_error(runner: CliRunner, ingested: Path) -> None:
    result = filter_raters(runner, ingested, "--preset", "mine")
    assert result.exit_code == 2
    assert "Invalid value for '--preset'" in result.stderr


def test_write_refuses_the_data_directory_it_reads(runner: CliRunner, ingested: Path) -> None:
    result = filter_raters(runner, ingested, "--write", str(ingested))
    assert result.exit_code == 2
    assert result.stderr.startswith(
        "Error: --write must name another data directory, not the one being read\n"
    )
    assert result.stdout == ""


def test_write_refuses_to_replace_without_force(
    runner: CliRunner, ingested: Path, tmp_path: Path
) -> None:
    written = tmp_path / "filtered"
    assert filter_raters(runner, ingested, "-d", "350", "--write", str(written)).exit_code == 0
    again = filter_raters(runner, ingested, "-d", "350", "--write", str(written))
    assert again.exit_code == 1
    assert again.stderr == (
        f"Error: DICES-350 is already ingested in {written}; use --force to replace it\n"
    )
    forced = filter_raters(
        runner, ingested, "-d", "350", "--preset", "authors", "--write", str(written), "--force"
    )
    assert forced.exit_code == 0, forced.output
    manifest = json.loads((written / "350" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["counts"]["raters"] == 104


def test_nothing_ingested(runner: CliRunner, tmp_path: Path) -> None:
    result = filter_raters(runner, tmp_path / "empty")
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: nothing is ingested in {tmp_path / 'empty'}")


def test_query_refuses_an_out_of_range_min_quality(runner: CliRunner, ingested: Path) -> None:
    result = runner.invoke(
        app, ["query", "overview", "--min-quality", "-0.1", "--data", str(ingested)]
    )
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: --min-quality must be between 0 and 1 (got -0.1)\n")
