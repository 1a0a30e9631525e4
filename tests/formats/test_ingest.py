"""Ingest: the replica files become typed Parquet, export gives the same cells back, the
accepted quirks of real files work, --rejects keeps the good rows, --force replaces.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import os
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from fixtures.dices_csv import (
    build,
    header,
    line_of,
    quote,
    read_cells,
    rows,
    to_csv,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner, Result

from dices_cli import __version__
from dices_cli.cli.main import app
from dices_cli.families.schema import DATASETS, Column, Dataset, Entity, Kind
from dices_cli.formats.dices.tables import split

ANSWER = pl.Enum(["No", "Yes", "Unsure"])
REPLICA_COUNTS = {  # dataset: (ratings, conversations, raters)
    "350": (43_050, 350, 123),
    "990": (72_103, 990, 173),
}


def ingest(runner: CliRunner, path: Path, data: Path, *options: str) -> Result:
    return runner.invoke(app, ["ingest", str(path), "--data", str(data), *options])


def export(runner: CliRunner, data: Path, name: str) -> bytes:
    result = runner.invoke(app, ["export", "--dataset", name, "--data", str(data)])
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    return result.stdout_bytes


def manifest(data: Path, name: str) -> dict[str, Any]:
    return json.loads((data / name / "manifest.json").read_text(encoding="utf-8"))


def table(data: Path, name: str, which: str) -> pl.DataFrame:
    return pl.read_parquet(data / name / f"{which}.parquet")


def column_cells(path: Path, name: str) -> list[str]:
    cells = read_cells(path.read_bytes())
    index = cells[0].index(name)
    return [row[index] for row in cells[1:]]


# --- the replica files ---------------------------------------------------------------


@pytest.fixture(scope="module")
def replicas(replica_350: Path, replica_990: Path) -> dict[str, Path]:
    return {"350": replica_350, "990": replica_990}


@pytest.mark.parametrize("name", ["350", "990"])
def test_replica_ingests_via_cli(
    name: str, replicas: dict[str, Path], runner: CliRunner, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    ratings, conversations, raters = REPLICA_COUNTS[name]

    result = ingest(runner, replicas[name], data)

    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert result.stderr == (
        f"DICES-{name}: {ratings:,} rows read = {ratings:,} written + 0 rejected; "
        f"{conversations:,} conversations, {raters:,} raters -> {data / name}\n"
    )
    assert sorted(p.name for p in data.iterdir() if not p.name.startswith(".")) == [name]


@pytest.mark.parametrize("name", ["350", "990"])
def test_replica_manifest(name: str, replicas: dict[str, Path], ingested: Path) -> None:
    source = replicas[name]
    ratings, conversations, raters = REPLICA_COUNTS[name]

    found = manifest(ingested, name)

    assert found["dataset"] == name
    assert found["title"] == f"DICES-{name}"
    assert found["source"]["name"] == source.name
    assert found["source"]["path"] == str(source.resolve())
    assert found["source"]["size"] == source.stat().st_size
    assert found["source"]["sha256"] == hashlib.sha256(source.read_bytes()).hexdigest()
    assert found["rows"] == {"read": ratings, "written": ratings, "rejected": 0}
    assert found["counts"] == {
        "conversations": conversations,
        "raters": raters,
        "ratings": ratings,
    }
    assert found["warnings"] == {}
    with source.open(newline="", encoding="utf-8-sig") as text:
        assert found["header"] == next(csv.reader(text))
    assert found["schema_version"] == 1
    assert found["tool_version"] == __version__
    created = datetime.fromisoformat(found["created"])
    assert created.utcoffset() == timedelta(0)
    assert datetime.now(UTC) - timedelta(hours=1) < created <= datetime.now(UTC)


@pytest.mark.parametrize("name", ["350", "990"])
def test_replica_parquet_row_counts(name: str, ingested: Path) -> None:
    ratings, conversations, raters = REPLICA_COUNTS[name]
    assert table(ingested, name, "ratings").height == ratings
    assert table(ingested, name, "items").height == conversations
    assert table(ingested, name, "raters").height == raters
    # One row per conversation and per rater: the keys are unique.
    assert table(ingested, name, "items")["item_id"].n_unique() == conversations
    assert table(ingested, name, "raters")["rater_id"].n_unique() == raters


@pytest.mark.parametrize("name", ["350", "990"])
def test_replica_parquet_types(name: str, ingested: Path) -> None:
    dataset = DATASETS[name]
    ratings = table(ingested, name, "ratings").schema
    raters = table(ingested, name, "raters").schema
    items = table(ingested, name, "items").schema

    for key in ("id", "rater_id", "item_id"):
        assert ratings[key] == pl.Int64
    assert raters["rater_id"] == pl.Int64
    assert items["item_id"] == pl.Int64
    assert ratings["Q_overall"] == ANSWER
    for question in dataset.sub_questions:
        assert ratings[question] == ANSWER, question
    assert ratings["phase"] == pl.Enum(["Phase1", "Phase2", "Phase3"])
    assert ratings["Q1_whole_conversation_evaluation"] == pl.Enum(
        [
            "None of the above - it is in English, it makes sense, and I am familiar with "
            "the topic",
            "It is nonsensical (repetitive, incomprehensible, gibberish)",
            "It is in a language other than English",
            "I am not familiar with the topic of the conversation",
        ]
    )
    assert raters["rater_age"] == pl.Enum(["gen z", "millenial", "gen x+"])
    assert raters["rater_gender"] == pl.Enum(["Man", "Woman", "Nonbinary", "Self-describe (below)"])
    assert raters["rater_education"] == pl.Enum(
        ["High school or below", "College degree or higher", "Other"]
    )
    assert raters["rater_race"] == pl.Enum(
        [
            "White",
            "Black/African American",
            "LatinX, Latino, Hispanic or Spanish Origin",
            "Asian/Asian subcontinent",
            "Multiracial",
            "Other",
        ]
    )
    assert raters["rater_raw_race"] == pl.String
    assert items["degree_of_harm"] == pl.Enum(["Benign", "Debatable", "Moderate", "Extreme"])
    assert items["context"] == pl.String
    assert items["harm_type"] == pl.String
    assert items["harm_tags"] == pl.List(pl.String)
    if name == "350":
        assert ratings["answer_time_ms"] == pl.Int64
        assert ratings["answer_timestamp"] == pl.Datetime("us", "UTC")
        assert items["safety_gold"] == pl.Enum(["No", "Yes"])
        assert items["safety_gold_reasons"] == pl.List(pl.String)
    else:
        assert raters["rater_locale"] == pl.Enum(["IN", "US"])
        assert "answer_timestamp" not in ratings
        assert "safety_gold" not in items


def test_replica_timestamps_are_utc_seconds(replica_350: Path, ingested: Path) -> None:
    stored = table(ingested, "350", "ratings")["answer_timestamp"]
    seconds = [int(cell) for cell in column_cells(replica_350, "answer_timestamp")]
    assert stored.dt.epoch("s").to_list() == seconds
    first = datetime.fromtimestamp(seconds[0], UTC)
    assert stored[0] == first


def test_replica_990_empty_harm_cells_are_null(replica_990: Path, ingested: Path) -> None:
    items = table(ingested, "990", "items")
    cells = read_cells(replica_990.read_bytes())
    head = cells[0]
    by_item = {
        int(r[head.index("item_id")]): (r[head.index("degree_of_harm")], r[head.index("harm_type")])
        for r in cells[1:]
    }
    empty_degree = {item for item, (degree, _) in by_item.items() if degree == ""}
    empty_harm = {item for item, (_, harm) in by_item.items() if harm == ""}
    assert empty_degree  # the real DICES-990 has conversations without them; so does the replica

    assert set(items.filter(pl.col("degree_of_harm").is_null())["item_id"]) == empty_degree
    assert set(items.filter(pl.col("harm_type").is_null())["item_id"]) == empty_harm
    assert set(items.filter(pl.col("harm_tags").is_null())["item_id"]) == empty_harm


@pytest.mark.parametrize("name", ["350", "990"])
def test_replica_harm_tags(name: str, ingested: Path) -> None:
    items = table(ingested, name, "items").filter(pl.col("harm_type").is_not_null())
    for harm, tags in items.select("harm_type", "harm_tags").iter_rows():
        assert tags == [t.strip().lower() for t in harm.split(",") if t.strip()], harm
    all_tags = {t for tags in items["harm_tags"] for t in tags}
    assert "racial" in all_tags
    assert all(t == t.strip().lower() for t in all_tags)


def _reasons(literal: str) -> list[str]:
    """A reason list literal read by hand: the names between the commas, quotes removed."""
    inner = literal.strip()[1:-1]
    return [part.strip().strip('"') for part in inner.split(",") if part.strip()]


def test_replica_gold_reasons_include_malformed_literals(ingested: Path) -> None:
    items = table(ingested, "350", "items")
    pairs = items.select("safety_gold_reason", "safety_gold_reasons").rows()
    malformed = [(raw, parsed) for raw, parsed in pairs if raw.count('"') % 2]
    assert malformed  # the real file has a few; so does the replica
    for raw, parsed in pairs:
        assert parsed == _reasons(raw), raw
    assert ("[]", []) in pairs


# --- export round trip -------------------------------------------------------------------


@pytest.mark.parametrize("name", ["350", "990"])
def test_replica_export_to_file_round_trips(
    name: str, replicas: dict[str, Path], ingested: Path, runner: CliRunner, tmp_path: Path
) -> None:
    out = tmp_path / "out.csv"

    result = runner.invoke(
        app, ["export", "--dataset", name, "--data", str(ingested), "-o", str(out)]
    )

    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert result.stderr == ""
    # The file is the source byte for byte, as stdout is (test_real_values.py's
    # test_export_of_a_replica_is_byte_identical).
    assert out.read_bytes() == replicas[name].read_bytes()


# --- accepted quirks ---------------------------------------------------------------------


def _crlf_everywhere(name: str) -> bytes:
    """CRLF after every record and inside every multi-line context."""
    body = rows(name, 2, 3)
    for row in body:
        row["context"] = row["context"].replace("\n", "\r\n")
    return to_csv(header(name), [list(r.values()) for r in body], eol="\r\n")


def _reordered(name: str) -> bytes:
    head = header(name)
    order = sorted(range(len(head)), key=lambda i: (i * 7919) % len(head))  # a fixed shuffle
    body = [list(r.values()) for r in rows(name, 2, 3)]
    return to_csv([head[i] for i in order], [[row[i] for i in order] for row in body])


def _recased(name: str) -> bytes:
    head = [h.upper() if i % 2 else h.title() for i, h in enumerate(header(name))]
    return to_csv(head, [list(r.values()) for r in rows(name, 2, 3)])


def _renamed(name: str, old: str, new: str) -> bytes:
    head = [new if h == old else h for h in header(name)]
    assert old in header(name)
    return to_csv(head, [list(r.values()) for r in rows(name, 2, 3)])


QUIRKS = {
    "column-order": _reordered,
    "header-case": _recased,
    "utf8-bom": lambda name: b"\xef\xbb\xbf" + build(name),
    "crlf": _crlf_everywhere,
    "gzip": lambda name: gzip.compress(build(name)),
    "gzip-bom-crlf": lambda name: gzip.compress(b"\xef\xbb\xbf" + _crlf_everywhere(name)),
    "no-final-newline": lambda name: build(name).rstrip(b"\n"),
    "blank-lines": lambda name: build(name).replace(b"\n1,", b"\n\n1,") + b"\n\n",
    "every-cell-quoted": lambda name: to_csv(
        header(name), [list(r.values()) for r in rows(name, 2, 3)], quote_all=True
    ),
}


@pytest.mark.parametrize("name", ["350", "990"])
@pytest.mark.parametrize("quirk", list(QUIRKS))
def test_accepted_quirk_ingests_and_exports_same_cells(
    quirk: str, name: str, runner: CliRunner, tmp_path: Path
) -> None:
    path, data = tmp_path / "quirky.csv", tmp_path / "data"
    path.write_bytes(QUIRKS[quirk](name))

    result = ingest(runner, path, data)

    assert result.exit_code == 0, result.output
    published = DATASETS[name].published
    assert result.stderr == (
        f"DICES-{name}: 6 rows read = 6 written + 0 rejected; 2 conversations, 3 raters "
        f"-> {data / name}\n"
        f"  warning: the file holds fewer than the published DICES-{name}: "
        f"2 of {published.conversations} conversations, 3 of {published.raters} raters, "
        f"6 of {published.ratings:,} ratings; it may be cut short [incomplete-dataset]\n"
    )
    assert read_cells(export(runner, data, name)) == read_cells(path.read_bytes())


@pytest.mark.parametrize(
    ("name", "table_name", "spelling", "canonical"),
    [
        ("990", "raters", "rater_race_raw", "rater_raw_race"),  # the real DICES-990 header
        ("990", "raters", "rater_raw_race", "rater_raw_race"),  # the DICES-350 spelling
        ("350", "ratings", "Q6_policy_guidelines_other_type", "Q6_policy_guidelines_other"),
    ],
)
def test_column_aliases(
    name: str,
    table_name: str,
    spelling: str,
    canonical: str,
    runner: CliRunner,
    tmp_path: Path,
) -> None:
    """A column under another known name is stored under its canonical name and exported
    under the name the file used."""
    path, data = tmp_path / "alias.csv", tmp_path / "data"
    built = "rater_race_raw" if name == "990" else canonical  # how `header()` spells it
    path.write_bytes(_renamed(name, built, spelling))

    result = ingest(runner, path, data)

    assert result.exit_code == 0, result.output
    stored = table(data, name, table_name).columns
    assert canonical in stored
    assert spelling == canonical or spelling not in stored
    exported = read_cells(export(runner, data, name))
    assert spelling in exported[0]
    assert exported == read_cells(path.read_bytes())


def test_small_file_values(runner: CliRunner, tmp_path: Path) -> None:
    """The built DICES-990 file's awkward cells, as stored."""
    path, data = tmp_path / "990.csv", tmp_path / "data"
    path.write_bytes(build("990", items=4, raters=2))
    assert ingest(runner, path, data).exit_code == 0

    items = table(data, "990", "items").rows(named=True)
    assert [i["item_id"] for i in items] == [173, 32, 859, 4]
    assert [i["degree_of_harm"] for i in items] == ["Extreme", "Benign", None, "Moderate"]
    assert [i["harm_type"] for i in items] == [
        "Racial,political",
        None,
        "Gendered & Sexist, Terrorism ",
        "Violent/gory",
    ]
    assert [i["harm_tags"] for i in items] == [
        ["racial", "political"],
        None,
        ["gendered & sexist", "terrorism"],
        ["violent/gory"],
    ]
    assert items[0]["context"].count("\\n") == 3 and "\n" not in items[0]["context"]
    raters = table(data, "990", "raters").rows(named=True)
    assert [r["rater_id"] for r in raters] == [296708581782793, 296708581783793]
    assert [r["rater_locale"] for r in raters] == ["IN", "US"]


def test_small_file_gold_reasons(runner: CliRunner, tmp_path: Path) -> None:
    path, data = tmp_path / "350.csv", tmp_path / "data"
    path.write_bytes(build("350", items=4, raters=1))
    assert ingest(runner, path, data).exit_code == 0

    items = table(data, "350", "items")
    assert items.select("safety_gold_reason", "safety_gold_reasons").rows() == [
        (
            '["safety_bias_beliefs", "policy_polarizing"]',
            ["safety_bias_beliefs", "policy_polarizing"],
        ),
        ("[]", []),
        ('["a", b", "c"]', ["a", "b", "c"]),
        ('["safety_harmful_advice"]', ["safety_harmful_advice"]),
    ]
    ratings = table(data, "350", "ratings")
    assert ratings["answer_timestamp"].to_list() == [
        datetime(2022, 12, 9, 10, 54, 27, tzinfo=UTC) + timedelta(hours=h) for h in range(4)
    ]


# --- --rejects -----------------------------------------------------------------------------


def _some_bad_rows(eol: str) -> tuple[bytes, dict[int, str]]:
    """3 conversations x 3 raters with rows 2, 4 and 6 bad, and the problem text of each."""
    body = rows("350", 3, 3)
    body[2]["phase"] = "Phase9"
    body[4]["answer_time_ms"] = "-5"
    for row in body:
        row["context"] = row["context"].replace("\n", eol)
    cells = [list(r.values()) for r in body]
    cells[6] = cells[6][:13]  # cut after the response: a structural problem
    problems = {
        2: "not-in-enum in phase: 'Phase9' is not an allowed value; "
        "allowed: 'Phase1', 'Phase2', 'Phase3'",
        4: "out-of-range in answer_time_ms: -5 is outside the range 0..9223372036854775807",
        6: "wrong-field-count: the record has 13 fields but the header has 41",
    }
    return to_csv(header("350"), cells, eol), problems


def _records(data: bytes, ids: list[str]) -> dict[str, bytes]:
    """Each record's exact bytes, cut at the line where the next record starts."""
    lines = data.splitlines(keepends=True)
    starts = [line_of(data, i) for i in ids] + [len(lines) + 1]
    return {
        i: b"".join(lines[start - 1 : end - 1])
        for i, start, end in zip(ids, starts, starts[1:], strict=False)
    }


@pytest.mark.parametrize("eol", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_rejects_file_holds_every_rejected_record_verbatim(
    eol: str, runner: CliRunner, tmp_path: Path
) -> None:
    path, data, rejects = tmp_path / "some-bad.csv", tmp_path / "data", tmp_path / "rejects.csv"
    original, problems = _some_bad_rows(eol)
    path.write_bytes(original)
    records = _records(original, [str(i) for i in range(9)])

    result = ingest(runner, path, data, "--rejects", str(rejects))

    assert result.exit_code == 0, result.output
    assert result.stderr == (
        f"DICES-350: 9 rows read = 6 written + 3 rejected; 3 conversations, 3 raters "
        f"-> {data / '350'}\n"
        f"  rejected rows and their problems: {rejects}\n"
    )
    assert manifest(data, "350")["rows"] == {"read": 9, "written": 6, "rejected": 3}
    with rejects.open(newline="", encoding="utf-8") as handle:
        found = list(csv.DictReader(handle))
    assert found == [
        {
            "file": path.name,
            "line": str(line_of(original, str(row))),
            "problems": text,
            "record": records[str(row)].decode(),
        }
        for row, text in problems.items()
    ]
    # The dataset holds exactly the rows that were not rejected, in file order.
    kept = read_cells(export(runner, data, "350"))
    assert kept[0] == header("350")
    assert [r[0] for r in kept[1:]] == ["0", "1", "3", "5", "7", "8"]
    assert kept == [c for c in read_cells(original) if c[0] not in {"2", "4", "6"}]


def test_rejects_file_for_a_gzip_file_holds_the_decompressed_record(
    runner: CliRunner, tmp_path: Path
) -> None:
    path, data, rejects = tmp_path / "bad.csv.gz", tmp_path / "data", tmp_path / "rejects.csv"
    body = rows("990", 2, 3)
    body[5]["rater_age"] = "boomer"
    plain = to_csv(header("990"), [list(r.values()) for r in body])
    path.write_bytes(gzip.compress(plain))

    result = ingest(runner, path, data, "--rejects", str(rejects))

    assert result.exit_code == 0, result.output
    with rejects.open(newline="", encoding="utf-8") as handle:
        (found,) = list(csv.DictReader(handle))
    assert found["line"] == "7"
    assert found["record"].encode() == plain.splitlines(keepends=True)[6]
    assert found["problems"] == (
        "inconsistent-rater in rater_age: rater 296708581784793 has rater_age 'gen x+' on line 4, "
        "but 'boomer' here"
    )


def test_without_rejects_the_same_file_is_refused_whole(runner: CliRunner, tmp_path: Path) -> None:
    path, data = tmp_path / "some-bad.csv", tmp_path / "data"
    path.write_bytes(_some_bad_rows("\n")[0])

    result = ingest(runner, path, data)

    assert result.exit_code == 1
    assert result.stderr.splitlines()[:2] == [
        f"Error: {path} is not valid DICES data; nothing was written",
        f"{path}: 3 errors (DICES-350); 9 rows read, 3 would be rejected "
        "[1 not-in-enum, 1 out-of-range, 1 wrong-field-count]",
    ]
    assert not data.exists() or not any(data.iterdir())


def test_rejects_with_a_valid_file_writes_an_empty_rejects_file(
    runner: CliRunner, tmp_path: Path
) -> None:
    path, data, rejects = tmp_path / "good.csv", tmp_path / "data", tmp_path / "rejects.csv"
    path.write_bytes(build())

    result = ingest(runner, path, data, "--rejects", str(rejects))

    assert result.exit_code == 0, result.output
    assert rejects.read_bytes() == b"file,line,problems,record\r\n"
    assert "rejected rows" not in result.stderr


# --- replacing data ------------------------------------------------------------------------


def _versions(data: Path, name: str) -> list[str]:
    return sorted(p.name for p in (data / ".store").iterdir() if p.name.startswith(f"{name}-"))


def test_reingest_needs_force(runner: CliRunner, tmp_path: Path) -> None:
    data, first, second = tmp_path / "data", tmp_path / "first.csv", tmp_path / "second.csv"
    first.write_bytes(build(items=2))
    second.write_bytes(build(items=3))
    assert ingest(runner, first, data).exit_code == 0
    target = (data / "350").resolve()
    before = (target / "ratings.parquet").read_bytes()

    result = ingest(runner, second, data)

    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == (
        f"Error: DICES-350 is already ingested in {data}; use --force to replace it\n"
    )
    assert (data / "350").resolve() == target
    assert (target / "ratings.parquet").read_bytes() == before
    assert read_cells(export(runner, data, "350")) == read_cells(first.read_bytes())

    result = ingest(runner, second, data, "--force")

    assert result.exit_code == 0, result.output
    assert (data / "350").resolve() != target
    assert read_cells(export(runner, data, "350")) == read_cells(second.read_bytes())
    assert (
        manifest(data, "350")["source"]["sha256"] == hashlib.sha256(second.read_bytes()).hexdigest()
    )
    assert manifest(data, "350")["counts"]["conversations"] == 3


def test_force_keeps_only_the_current_and_previous_version(
    runner: CliRunner, tmp_path: Path
) -> None:
    data, path = tmp_path / "data", tmp_path / "file.csv"
    links = []
    for items in (1, 2, 3):
        path.write_bytes(build(items=items))
        assert ingest(runner, path, data, "--force").exit_code == 0
        links.append((data / "350").resolve().name)

    assert _versions(data, "350") == sorted(links[1:])
    assert not [p for p in (data / ".store").iterdir() if p.name.startswith(".tmp-")]


def test_failed_reingest_leaves_previous_data(runner: CliRunner, tmp_path: Path) -> None:
    data, good, bad = tmp_path / "data", tmp_path / "good.csv", tmp_path / "bad.csv"
    good.write_bytes(build())
    body = rows("350", 3, 3)
    body[7]["rater_gender"] = "Other"
    bad.write_bytes(to_csv(header("350"), [list(r.values()) for r in body]))
    assert ingest(runner, good, data).exit_code == 0
    target = (data / "350").resolve()
    files = {p.name: p.read_bytes() for p in target.iterdir()}

    result = ingest(runner, bad, data, "--force")

    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: {bad} is not valid DICES data; nothing was written\n")
    assert (data / "350").resolve() == target
    assert {p.name: p.read_bytes() for p in target.iterdir()} == files
    assert _versions(data, "350") == [target.name]
    assert read_cells(export(runner, data, "350")) == read_cells(good.read_bytes())


def test_replacing_one_dataset_leaves_the_other(
    ingested_copy: Path, replica_990: Path, runner: CliRunner, tmp_path: Path
) -> None:
    path = tmp_path / "small.csv"
    path.write_bytes(build("350"))
    before_990 = (ingested_copy / "990").resolve()

    result = ingest(runner, path, ingested_copy, "--force")

    assert result.exit_code == 0, result.output
    assert manifest(ingested_copy, "350")["counts"]["ratings"] == 6
    assert (ingested_copy / "990").resolve() == before_990
    assert manifest(ingested_copy, "990")["counts"]["ratings"] == 72_103


# --- properties ----------------------------------------------------------------------------

INT64 = 2**63 - 1
TOKENS = [",", '"', '""', "\n", "\r\n", " ", "\\n", "'", "é", "世界", "😀", "\t", "[]", "No"]
PLAIN = st.text(
    alphabet=st.characters(exclude_categories=("Cs",), exclude_characters="\x00\r\n"),
    max_size=6,
)


def texts(lone_cr: bool) -> st.SearchStrategy[str]:
    tokens = st.sampled_from([*TOKENS, "\r"] if lone_cr else TOKENS)
    return st.lists(st.one_of(tokens, PLAIN), max_size=6).map("".join)


REASON_NAMES = st.lists(st.from_regex(r"[A-Za-z_]{1,10}", fullmatch=True), max_size=3)


@st.composite
def reason_lists(draw: st.DrawFn) -> str:
    names = draw(REASON_NAMES)
    separator = draw(st.sampled_from([", ", ","]))
    parts = [f'"{n}"' for n in names]
    if len(parts) > 1 and draw(st.booleans()):
        parts[1] = parts[1][1:]  # the malformed form of the real file: a missing quote
    return "[" + separator.join(parts) + "]"


def cells_for(column: Column, lone_cr: bool) -> st.SearchStrategy[str]:
    if column.kind is Kind.INTEGER:
        return st.integers(column.minimum or 0, INT64).map(str)
    if column.kind is Kind.TIMESTAMP:
        return st.integers(0, 253_402_300_799).map(str)
    if column.kind is Kind.ENUM:
        return st.sampled_from([*column.values, *([""] if column.nullable else [])])
    if column.kind is Kind.REASON_LIST:
        return reason_lists()
    return texts(lone_cr)


KEYS = {"id", "rater_id", "item_id"}


@st.composite
def dices_tables(draw: st.DrawFn, lone_cr: bool = True) -> tuple[str, list[dict[str, str]]]:
    """A valid DICES table: random values, consistent per conversation and per rater."""
    name = draw(st.sampled_from(["350", "990"]))
    dataset = DATASETS[name]
    n_items, n_raters = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    item_ids = draw(
        st.lists(st.integers(0, INT64), min_size=n_items, max_size=n_items, unique=True)
    )
    rater_ids = draw(
        st.lists(st.integers(0, INT64), min_size=n_raters, max_size=n_raters, unique=True)
    )
    pairs = draw(st.permutations([(i, r) for i in range(n_items) for r in range(n_raters)]))
    pairs = pairs[: draw(st.integers(1, len(pairs)))]
    row_ids = draw(
        st.lists(st.integers(0, INT64), min_size=len(pairs), max_size=len(pairs), unique=True)
    )

    def values(entity: Entity) -> dict[str, str]:
        return {
            c.name: draw(cells_for(c, lone_cr)) for c in dataset.of(entity) if c.name not in KEYS
        }

    items = [values(Entity.ITEM) for _ in range(n_items)]
    raters = [values(Entity.RATER) for _ in range(n_raters)]
    table = []
    for row_id, (item, rater) in zip(row_ids, pairs, strict=True):
        cells = {
            "id": str(row_id),
            "item_id": str(item_ids[item]),
            "rater_id": str(rater_ids[rater]),
            **items[item],
            **raters[rater],
            **values(Entity.RATING),
        }
        table.append({c: cells[c] for c in dataset.names})
    return name, table


@st.composite
def dices_files(draw: st.DrawFn) -> tuple[str, bytes]:
    """A valid DICES file with the quirks real files may have, drawn at random."""
    name, table = draw(dices_tables())
    dataset = DATASETS[name]
    spellings = {canonical: alias for alias, canonical in dataset.aliases.items()}
    head = []
    for column in dataset.names:
        spelled = spellings[column] if column in spellings and draw(st.booleans()) else column
        head.append(draw(st.sampled_from([spelled, spelled.upper(), spelled.lower()])))
    order = draw(st.permutations(range(len(head))))
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    data = to_csv(
        [head[i] for i in order],
        [[list(row.values())[i] for i in order] for row in table],
        eol=eol,
        quote_all=draw(st.booleans()),
    )
    if draw(st.booleans()):
        data = b"\xef\xbb\xbf" + data
    if draw(st.booleans()):
        data = gzip.compress(data)
    return name, data


PROPERTY = settings(
    # Modest by default so the suite stays fast; DICES_EXAMPLES=1000 for a deeper search.
    max_examples=int(os.environ.get("DICES_EXAMPLES", "30")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.slow
@PROPERTY
@given(dices_files())
def test_property_ingest_then_export_gives_the_same_cells(file: tuple[str, bytes]) -> None:
    name, data = file
    runner = CliRunner()
    with tempfile.TemporaryDirectory() as scratch:
        path, store = Path(scratch) / "in.csv", Path(scratch) / "data"
        path.write_bytes(data)

        result = ingest(runner, path, store)

        assert result.exit_code == 0, result.output
        assert read_cells(export(runner, store, name)) == read_cells(data)


@pytest.mark.slow
@PROPERTY
@given(dices_tables(lone_cr=False), st.data())
def test_property_problem_lines_are_physical_lines(
    drawn: tuple[str, list[dict[str, str]]], data: st.DataObject
) -> None:
    """A bad cell in any record is reported on the line where that record starts, counting
    the newlines inside quoted cells, whichever parser reads the file."""
    name, table = drawn
    eol = data.draw(st.sampled_from(["\n", "\r\n"]))
    bad = data.draw(st.integers(0, len(table) - 1))
    broken = data.draw(st.sampled_from([None, *range(len(table))]))
    records = [list(header(name))] + [list(r.values()) for r in table]
    records[bad + 1][records[0].index("phase")] = "Phase0"
    if broken is not None:  # a record with a field too few sends the file to the strict parser
        records[broken + 1] = records[broken + 1][:-1]
    rendered = [",".join(quote(c) for c in record) + eol for record in records]
    starts = [1 + sum(r.count("\n") for r in rendered[:i]) for i in range(len(rendered))]
    expected = {(starts[bad + 1], "not-in-enum")}
    if broken is not None:
        expected = {(starts[broken + 1], "wrong-field-count")} | (
            set() if broken == bad else expected
        )

    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "bad.csv"
        path.write_bytes("".join(rendered).encode())
        result = CliRunner().invoke(app, ["validate", str(path), "--format", "csv"])

    assert result.exit_code == 1
    errors = {
        (int(r["line"]), r["type"])
        for r in csv.DictReader(io.StringIO(result.stdout))
        if r["severity"] == "error"
    }
    assert errors == expected


# --- typing the cells ------------------------------------------------------------------


def cells_of_one_row(dataset: Dataset, rows: int) -> pl.DataFrame:
    """`rows` copies of one valid record, every cell Categorical over one set of strings, as
    the parser gives them: far more rows than distinct strings."""
    first = {Kind.ENUM: lambda c: c.values[0], Kind.REASON_LIST: lambda c: '["x"]'}
    row = {c.name: first.get(c.kind, lambda c: "1")(c) for c in dataset.columns}
    categories = pl.Categories.random()
    return pl.DataFrame(
        {name: [cell] * rows for name, cell in row.items()},
        schema={name: pl.Categorical(categories) for name in row},
    )


def test_enum_cells_looked_up_by_code_are_the_cast_cells() -> None:
    """Where rows outnumber the file's strings, an Enum column's values are picked by category
    code (`tables._enum_lookup`), not cast row by row: the same values, of the same type, a
    column with categories of its own (other codes for the same strings) included."""
    dataset = DATASETS["350"]
    answers = pl.Series("Q_overall", ["Unsure", "Yes", "No", "Yes"] * 125)
    cells = cells_of_one_row(dataset, 500).with_columns(
        answers.cast(pl.Categorical(pl.Categories.random()))
    )
    ratings = split(dataset, cells)["ratings"]

    answer_names = [c.name for c in dataset.of(Entity.RATING) if c.is_answer]
    cast = cells.select(pl.col(name).cast(ANSWER) for name in answer_names)
    assert ratings.select(answer_names).equals(cast)
    assert ratings.get_column("Q_overall").cast(pl.String).equals(answers)


def test_a_value_outside_an_enum_is_refused_when_looked_up_as_when_cast() -> None:
    """A string outside the Enum, which the lookup by code would leave null, is refused as a
    cast refuses it: never stored as a missing answer."""
    dataset = DATASETS["350"]
    cells = cells_of_one_row(dataset, 500)
    categories = cells.schema["Q_overall"]
    cells = cells.with_columns(
        pl.when(pl.int_range(pl.len()) == 7)
        .then(pl.lit("Maybe"))
        .otherwise(pl.col("Q_overall").cast(pl.String))
        .cast(categories)
        .alias("Q_overall")
    )

    with pytest.raises(pl.exceptions.InvalidOperationError, match="Maybe"):
        split(dataset, cells)
