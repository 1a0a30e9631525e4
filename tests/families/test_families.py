"""A dataset family is one declaration (issue 14). A toy third family, declared in this
module and nowhere else (its files and where they are published, its recogniser, its
validator, its ingester), is registered by patching the registry, then validated by
`dices validate`, ingested by `dices ingest`, fetched and listed in the help by
`dices download`, with no line of validate.py, ingest.py or download.py written for it."""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import polars as pl
import pytest
from fixtures.dices_csv import build
from typer.testing import CliRunner

from dices_cli import download as download_module
from dices_cli.cli.main import app
from dices_cli.families import FAMILIES, Family, SourceFile, all_members
from dices_cli.formats.ingest import IngestRequest, IngestResult
from dices_cli.formats.validate import ValidateRequest
from dices_cli.problems import Problem, ProblemType, Report

# The toy format: JSON Lines of {"item": ..., "rating": ...}, one rating a line.
TOY_LINES = b'{"item": "a", "rating": 1}\n{"item": "a", "rating": 0}\n{"item": "b", "rating": 1}\n'
TOY_SHA256 = hashlib.sha256(TOY_LINES).hexdigest()
TOY_CREATED = "2026-01-02T03:04:05+00:00"  # when the toy ingester says it stored a version
# The first line of a ProsocialDialog file, as far as recognising it goes.
PROSOCIAL_LINE = b'{"context": "c", "dialogue_id": 0, "safety_annotations": []}\n'


def recognises_toy(first: bytes) -> bool:
    try:
        line = json.loads(first.split(b"\n", 1)[0])
    except ValueError:
        return False
    return isinstance(line, dict) and set(line) == {"item", "rating"}


def validate_toy(request: ValidateRequest) -> Report:
    """The toy family's validator: every line's rating is 0 or 1."""
    report = Report(request.source.name, "toy")
    with request.source.open_text() as text:
        for number, line in enumerate(text, start=1):
            report.rows_read += 1
            rating = json.loads(line)["rating"]
            if rating not in (0, 1):
                report.rows_rejected += 1
                message = f"a toy rating is 0 or 1, not {rating}"
                report.problems.append(
                    Problem(ProblemType.OUT_OF_RANGE, number, "rating", str(rating), message)
                )
    return report


def ingest_toy(request: IngestRequest) -> list[IngestResult]:
    """The toy family's ingester: every file's lines become one stored dataset, DIR/toy."""
    from dices_cli.problems import Report

    rows = []
    for source in request.sources:
        with source.open_text() as text:
            rows += [json.loads(line) for line in text]
    ratings = pl.DataFrame(rows, schema={"item": pl.String, "rating": pl.Int8}, orient="row")
    items = ratings.group_by("item", maintain_order=True).agg(ratings=pl.len())
    manifest = {
        "dataset": "toy",
        "title": "Toy",
        "sources": [
            {"name": source.display_name, "sha256": source.digest().sha256}
            for source in request.sources
        ],
        "rows": {"read": len(rows), "rejected": 0},
        "counts": {"items": items.height, "ratings": ratings.height},
        "created": TOY_CREATED,
    }
    store = request.store
    store.check_replaceable("toy", request.force)
    with store.locked():
        stored = store.publish("toy", {"items": items, "ratings": ratings}, manifest)
    report = Report(", ".join(s.name for s in request.sources), "toy", rows_read=len(rows))
    note = f"Toy: {ratings.height} ratings of {items.height} items -> {store.link('toy')}"
    return [IngestResult(report, stored, (note,))]


def toy_family(base: str) -> Family:
    return Family(
        name="toy",
        title="Toy",
        members=("toy",),
        files=(
            SourceFile(
                "toy.jsonl",
                "toy",
                3,
                "three ratings of two items",
                (base,),
                "releases/v1/toy.jsonl",
                size=len(TOY_LINES),
                sha256=TOY_SHA256,
                folder="toy",
            ),
        ),
        recognised_by="JSON Lines whose first object has the keys item and rating, no more",
        recognises=recognises_toy,
        validates=f"{__name__}:validate_toy",
        ingests=f"{__name__}:ingest_toy",
        tables=("items", "ratings"),
        entities={"items": "one item", "ratings": "one rating of one item"},
        enums={},
        published={"toy": {"ratings": 3}},
        manifest={"sources": list, "counts": {"items": int}},
        queries=(),
        has_raters=False,
        has_demographics=False,
        has_gold=False,
    )


def register_toy(monkeypatch: pytest.MonkeyPatch, base: str = "https://toy.invalid/") -> None:
    monkeypatch.setitem(FAMILIES, "toy", toy_family(base))


def test_a_family_declared_in_a_test_is_ingested(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    register_toy(monkeypatch)
    toy, data = tmp_path / "toy.jsonl", tmp_path / "data"
    toy.write_bytes(TOY_LINES)
    result = runner.invoke(app, ["ingest", str(toy), "--data", str(data)])
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert result.stderr == f"Toy: 3 ratings of 2 items -> {data / 'toy'}\n"
    stored = data / "toy"
    manifest = json.loads((stored / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["dataset"] == "toy"
    assert manifest["sources"] == [{"name": "toy.jsonl", "sha256": TOY_SHA256}]
    assert manifest["counts"] == {"items": 2, "ratings": 3}
    assert sorted(manifest["files"]) == ["items.parquet", "ratings.parquet"]
    for name, record in manifest["files"].items():
        assert record["sha256"] == hashlib.sha256((stored / name).read_bytes()).hexdigest()
    assert pl.read_parquet(stored / "ratings.parquet").rows() == [("a", 1), ("a", 0), ("b", 1)]
    assert pl.read_parquet(stored / "items.parquet").rows() == [("a", 2), ("b", 1)]


def test_info_and_verify_read_the_family_from_its_declaration(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its tables (what verify checks) and its manifest's shape (what info reads) are the
    declaration's: no line of the store (`dices_cli.store.datasets`) names the toy."""
    register_toy(monkeypatch)
    toy, data = tmp_path / "toy.jsonl", tmp_path / "data"
    toy.write_bytes(TOY_LINES)
    assert runner.invoke(app, ["ingest", str(toy), "--data", str(data)]).exit_code == 0
    stored = (data / "toy").resolve()
    result = runner.invoke(app, ["info", "--data", str(data), "--format", "csv"])
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        "dataset,items,raters,ratings,rows_rejected,source,sha256,ingested,filter,path\n"
        f"toy,2,,3,0,toy.jsonl,{TOY_SHA256},{TOY_CREATED},,{stored}\n"
    )
    result = runner.invoke(app, ["verify", "--data", str(data)])
    assert result.exit_code == 0, result.output
    assert result.stderr == f"Toy: ok, 2 files match their SHA-256 in {stored}\n"
    size = json.loads((stored / "manifest.json").read_text())["files"]["ratings.parquet"]["size"]
    (stored / "ratings.parquet").write_bytes(b"not parquet")
    result = runner.invoke(app, ["verify", "--data", str(data)])
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: Toy: {stored / 'ratings.parquet'} is damaged (11 bytes, expected {size}); "
        "ingest the dataset again (`dices ingest FILE --force`)\n"
    )


def test_a_manifest_without_what_the_declaration_names_is_damaged(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    register_toy(monkeypatch)
    toy, data = tmp_path / "toy.jsonl", tmp_path / "data"
    toy.write_bytes(TOY_LINES)
    assert runner.invoke(app, ["ingest", str(toy), "--data", str(data)]).exit_code == 0
    manifest_path = (data / "toy").resolve() / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    del manifest["counts"]["items"]  # the declaration's, not every family's
    manifest_path.write_text(json.dumps(manifest))
    result = runner.invoke(app, ["info", "--data", str(data)])
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == (
        f"Error: Toy: {manifest_path} is damaged (it has no counts.items); "
        "ingest the dataset again (`dices ingest FILE --force`)"
    )


def test_without_its_declaration_the_toy_file_is_not_data(
    runner: CliRunner, tmp_path: Path
) -> None:
    """The test above passes because of the declaration: unregistered, the file is JSON no
    family recognises, and is refused in one line that says so."""
    toy, data = tmp_path / "toy.jsonl", tmp_path / "data"
    toy.write_bytes(TOY_LINES)
    result = runner.invoke(app, ["ingest", str(toy), "--data", str(data)])
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: {toy} is JSON, not a table dices reads: DICES CSV files (plain or "
        "gzip-compressed) and ProsocialDialog's JSON Lines files\n"
    )
    assert not data.exists()


@pytest.mark.parametrize(
    ("others", "families"),
    [
        (("dices.csv",), "Toy and DICES"),
        (("train.json",), "ProsocialDialog and Toy"),
        (("dices.csv", "train.json"), "ProsocialDialog, Toy and DICES"),
    ],
)
def test_files_of_several_families_are_refused_in_one_line(
    runner: CliRunner,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    others: tuple[str, ...],
    families: str,
) -> None:
    register_toy(monkeypatch)
    (tmp_path / "toy.jsonl").write_bytes(TOY_LINES)
    (tmp_path / "dices.csv").write_bytes(build("350", items=2, raters=2))
    (tmp_path / "train.json").write_bytes(PROSOCIAL_LINE)
    paths = [str(tmp_path / name) for name in ("toy.jsonl", *others)]
    result = runner.invoke(app, ["ingest", *paths, "--data", str(tmp_path / "data")])
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == (
        f"Error: {families} files are ingested separately; give the files of one family at a time"
    )
    assert not (tmp_path / "data").exists()


@pytest.fixture
def published(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A local HTTP server publishing the toy file under its declared path; its address.
    No proxy or mirror from the machine's environment."""
    for variable in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(variable, raising=False)
        monkeypatch.delenv(variable.upper(), raising=False)
    monkeypatch.delenv(download_module.BASE_VARIABLE, raising=False)
    root = tmp_path / "site"
    (root / "releases" / "v1").mkdir(parents=True)
    (root / "releases" / "v1" / "toy.jsonl").write_bytes(TOY_LINES)

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *_args: object) -> None:
            return None

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=root))
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


def test_download_fetches_the_declared_file_and_ingests_it(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, published: str
) -> None:
    register_toy(monkeypatch, published)
    files, data = tmp_path / "files", tmp_path / "data"
    args = ["download", "toy", "--dir", str(files), "--ingest", "--data", str(data)]
    result = runner.invoke(app, args)
    target = files / "toy" / "toy.jsonl"
    assert result.exit_code == 0, result.output
    assert result.stdout == f"{target}\n"
    assert result.stderr.splitlines() == [
        f"Toy: downloaded from {published}releases/v1/toy.jsonl, {len(TOY_LINES)} bytes, "
        f"SHA-256 verified -> {target}",
        f"Toy: 3 ratings of 2 items -> {data / 'toy'}",
    ]
    assert target.read_bytes() == TOY_LINES
    assert json.loads((data / "toy" / "manifest.json").read_text())["counts"]["ratings"] == 3


def test_download_checks_the_declared_checksum(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, published: str
) -> None:
    (tmp_path / "site" / "releases" / "v1" / "toy.jsonl").write_bytes(TOY_LINES.upper())
    register_toy(monkeypatch, published)
    result = runner.invoke(app, ["download", "toy", "--dir", str(tmp_path / "files")])
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: {published}releases/v1/toy.jsonl served different bytes "
        f"(SHA-256 {hashlib.sha256(TOY_LINES.upper()).hexdigest()}, expected {TOY_SHA256}), "
        "which were not kept\n"
    )
    assert not (tmp_path / "files" / "toy" / "toy.jsonl").exists()


def test_download_names_the_declared_datasets(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    register_toy(monkeypatch)
    result = runner.invoke(app, ["download", "nothing", "--dir", str(tmp_path)])
    assert result.exit_code == 2
    words = " ".join(result.stderr.replace("│", " ").replace("╭", " ").replace("╰", " ").split())
    names = [*all_members(), "all"]
    expected = f"Invalid value for '{'|'.join(names)}': 'nothing' is not one of " + ", ".join(
        repr(n) for n in names
    )
    assert expected.replace(" ", "") in words.replace(" ", ""), words
    result = runner.invoke(app, ["download", "all", "--url", "http://127.0.0.1/x"])
    assert result.exit_code == 2
    assert result.stderr == (
        "Error: --url is for one file, and all has 32: name 350, 990, mhs, "
        "popquorn_offensiveness, popquorn_politeness or toy\n"
        "Try 'dices download -h' for help.\n"
    )


def test_a_family_declared_in_a_test_is_validated(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    register_toy(monkeypatch)
    toy = tmp_path / "toy.jsonl"
    toy.write_bytes(TOY_LINES)
    result = runner.invoke(app, ["validate", str(toy)])
    assert result.exit_code == 0, result.output
    assert result.stdout == "file,type,severity,line,column,value,message\n"
    assert result.stderr == f"{toy}: valid (Toy); 3 rows read, 0 would be rejected\n"


def test_a_broken_file_of_the_family_gets_its_validators_message(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its own validator's, not DICES's: validate dispatches as ingest does."""
    register_toy(monkeypatch)
    toy = tmp_path / "toy.jsonl"
    toy.write_bytes(TOY_LINES + b'{"item": "c", "rating": 7}\n')
    result = runner.invoke(app, ["validate", str(toy)])
    assert result.exit_code == 1
    assert result.stdout == (
        "file,type,severity,line,column,value,message\n"
        f'{toy},out-of-range,error,4,rating,7,"a toy rating is 0 or 1, not 7"\n'
    )
    assert result.stderr == (
        f"{toy}: 1 error (Toy); 4 rows read, 1 would be rejected [1 out-of-range]\n"
    )


def test_download_help_lists_the_declared_datasets(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer import rich_utils

    register_toy(monkeypatch)
    monkeypatch.setattr(rich_utils, "MAX_WIDTH", 240)  # each help on one line
    result = runner.invoke(app, ["download", "--help"])
    assert result.exit_code == 0
    choices = "|".join([*all_members(), "all"])
    flat = "".join(result.stdout.split())
    assert f"Usage:dicesdownload[OPTIONS]{{{choices}}}" in flat
    lines = [" ".join(line.strip(" │").split()) for line in result.stdout.splitlines()]
    assert (
        "--url <str> Fetch the one file of 350, 990, mhs, popquorn_offensiveness, "
        "popquorn_politeness or toy from URL (a mirror): "
        "it must still be the published file, unless --sha256 is given."
    ) in lines, result.stdout


def test_declarations_import_nothing_heavy_and_name_code_that_exists() -> None:
    """families/ is on the start-up path: facts and light recognisers only; the validator
    and the ingester a declaration names are imported when a file of the family is
    validated or ingested."""
    code = (
        "import sys, dices_cli.families\n"
        "print(sorted(m for m in ('polars', 'duckdb', 'pyarrow', 'numpy', 'rich') "
        "if m in sys.modules))"
    )
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert shown.stdout == "[]\n"
    for family in FAMILIES.values():
        for dotted in (family.validates, family.ingests):
            module, _, name = dotted.partition(":")
            assert callable(getattr(importlib.import_module(module), name)), dotted
    catch_all = [f.name for f in FAMILIES.values() if f.recognises is None]
    assert catch_all == ["dices"]


def test_each_recogniser_knows_its_own_files_only() -> None:
    prosocial = FAMILIES["prosocial"].recognises
    assert prosocial is not None
    assert prosocial(PROSOCIAL_LINE)
    assert not prosocial(build("350", items=1, raters=1))
    assert not prosocial(TOY_LINES)
    assert not prosocial(b"\xff\xfe not text\n")
    assert not prosocial(b'{"context": "a line cut short by the first MiB')
