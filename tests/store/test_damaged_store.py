"""A damaged data directory is an error that names the damaged file and says to ingest the
dataset again, never wrong data served silently and never "a bug in dices".

The manifest records the size and SHA-256 of every stored Parquet file; `dices verify` and
`dices info --verify` compare them; a reader checks the sizes (a stat per file) and the
manifest's structure. A data directory copied with its links resolved (`DIR/350` a real
directory) can be replaced by `ingest --force`.
"""

from __future__ import annotations

import hashlib
import json
import pathlib
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from drivers.datadir import subset
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from dices_cli.cli.main import app
from dices_cli.store.datasets import ADOPTING_PREFIX
from tests.drivers.datadir import TABLES

PARQUET_FILES = [f"{table}.parquet" for table in TABLES]
ADVICE = "ingest the dataset again (`dices ingest FILE --force`)"


def damaged(path: Path, what: str, dataset: str = "350") -> str:
    return f"Error: DICES-{dataset}: {path} {what}; {ADVICE}\n"


def intact(data: Path, dataset: str) -> str:
    version = (data / dataset).resolve()
    return f"DICES-{dataset}: ok, 3 files match their SHA-256 in {version}\n"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def invoke(runner: CliRunner, data: Path, *arguments: str) -> Any:
    return runner.invoke(app, [*arguments, "--data", str(data)])


def version_of(data: Path, dataset: str = "350") -> Path:
    return (data / dataset).resolve()


@pytest.fixture(scope="module")
def new_350(replica_350: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A smaller DICES-350 to replace the full one with: its first 40 conversations."""
    return subset(replica_350, tmp_path_factory.mktemp("new") / "dices_350_new.csv", 40)


@pytest.fixture(scope="module")
def overviews(ingested: Path, new_350: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """`dices query overview -d 350 -f csv` of the full replica and of `new_350`."""
    fresh = tmp_path_factory.mktemp("fresh")
    assert invoke(CliRunner(), fresh, "ingest", str(new_350)).exit_code == 0
    answers = {
        "old": invoke(CliRunner(), ingested, "query", "overview", "-d", "350", "-f", "csv"),
        "new": invoke(CliRunner(), fresh, "query", "overview", "-d", "350", "-f", "csv"),
    }
    assert answers["old"].exit_code == answers["new"].exit_code == 0
    assert answers["old"].stdout != answers["new"].stdout
    return {key: result.stdout for key, result in answers.items()}


# --- Checksums: recorded at ingest, checked by `dices verify` and `dices info --verify` ----


def test_ingest_records_the_size_and_sha256_of_every_stored_file(ingested: Path) -> None:
    for dataset in ("350", "990"):
        version = version_of(ingested, dataset)
        manifest = json.loads((version / "manifest.json").read_text(encoding="utf-8"))
        assert manifest["files"] == {
            name: {"size": (version / name).stat().st_size, "sha256": sha256(version / name)}
            for name in PARQUET_FILES
        }


def test_verify_an_intact_directory(ingested: Path, runner: CliRunner) -> None:
    result = invoke(runner, ingested, "verify")
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert result.stderr == intact(ingested, "350") + intact(ingested, "990")


def test_info_verify_an_intact_directory(ingested: Path, runner: CliRunner) -> None:
    plain = invoke(runner, ingested, "info", "-f", "csv")
    result = invoke(runner, ingested, "info", "--verify", "-f", "csv")
    assert result.exit_code == 0, result.output
    assert result.stdout == plain.stdout
    assert result.stderr == intact(ingested, "350") + intact(ingested, "990")


def test_verify_with_nothing_ingested(runner: CliRunner, tmp_path: Path) -> None:
    result = invoke(runner, tmp_path, "verify")
    assert result.exit_code == 1
    assert (
        result.stderr
        == f"Error: nothing is ingested in {tmp_path}; run `dices ingest FILE` first\n"
    )


def flip(path: Path, offset: int, mask: int = 0xFF) -> None:
    """XOR one byte of `path` with `mask`: its size stays the same."""
    with path.open("r+b") as handle:
        handle.seek(offset)
        byte = handle.read(1)[0]
        handle.seek(offset)
        handle.write(bytes([byte ^ mask]))


def test_a_flipped_byte_is_found_by_verify_and_info_verify(
    ingested_copy: Path, runner: CliRunner
) -> None:
    data = ingested_copy
    ratings = version_of(data) / "ratings.parquet"
    recorded = sha256(ratings)
    flip(ratings, ratings.stat().st_size // 2)
    expected = damaged(ratings, f"is damaged (sha256 {sha256(ratings)}, expected {recorded})")

    result = invoke(runner, data, "verify")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == expected + intact(data, "990")

    result = invoke(runner, data, "info", "--verify", "-f", "csv")
    assert result.exit_code == 1
    assert result.stdout == invoke(runner, data, "info", "-f", "csv").stdout
    assert result.stderr == expected + intact(data, "990")


@pytest.mark.parametrize("where", ["footer", "first page"])
@pytest.mark.parametrize(
    "command", [["sql", "SELECT count(*) FROM ratings"], ["query", "overview"]]
)
def test_a_flipped_byte_that_breaks_decoding_is_a_clear_error(
    where: str, command: list[str], ingested_copy: Path, runner: CliRunner
) -> None:
    ratings = version_of(ingested_copy) / "ratings.parquet"
    flip(ratings, ratings.stat().st_size - 20 if where == "footer" else 100)

    result = invoke(runner, ingested_copy, *command, "-d", "350")

    assert "a bug in dices" not in result.stderr
    if where == "footer":  # the file cannot be opened at all
        assert result.exit_code == 1
        assert result.stderr.startswith(f"Error: DICES-350: {ratings} cannot be read ("), (
            result.stderr
        )
    elif result.exit_code:  # a page: decoding fails if a query reads it (only verify sees all)
        assert result.stderr.startswith(
            (f"Error: DICES-350: {ratings} cannot be read (", "Error: the query failed: ")
        ), result.stderr


@pytest.fixture(scope="module")
def flippable(ingested: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of `ingested` for the property below, which restores every byte it flips."""
    target = tmp_path_factory.mktemp("flips") / "data"
    shutil.copytree(ingested, target, symlinks=True)
    return target


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    dataset=st.sampled_from(["350", "990"]),
    name=st.sampled_from(PARQUET_FILES),
    position=st.floats(min_value=0, max_value=1, exclude_max=True),
    mask=st.integers(min_value=1, max_value=255),
)
def test_property_any_flipped_byte_of_any_stored_file_is_found(
    flippable: Path, runner: CliRunner, dataset: str, name: str, position: float, mask: int
) -> None:
    path = version_of(flippable, dataset) / name
    recorded = sha256(path)
    offset = int(position * path.stat().st_size)
    flip(path, offset, mask)
    try:
        result = invoke(runner, flippable, "verify")
        what = f"is damaged (sha256 {sha256(path)}, expected {recorded})"
        other = "990" if dataset == "350" else "350"
        lines = {dataset: damaged(path, what, dataset), other: intact(flippable, other)}
        assert result.exit_code == 1
        assert result.stderr == lines["350"] + lines["990"]
    finally:
        flip(path, offset, mask)
    assert sha256(path) == recorded


# --- A missing or truncated Parquet file: queries, export and verify refuse clearly -------


def truncate(path: Path) -> str:
    size = path.stat().st_size
    with path.open("r+b") as handle:
        handle.truncate(size // 2)
    return f"is damaged ({size // 2} bytes, expected {size})"


def delete(path: Path) -> str:
    path.unlink()
    return "is missing"


@pytest.mark.parametrize("name", PARQUET_FILES)
@pytest.mark.parametrize("damage", [truncate, delete])
def test_a_missing_or_truncated_parquet_file_is_a_clear_error(
    damage: Callable[[Path], str], name: str, ingested_copy: Path, runner: CliRunner
) -> None:
    data = ingested_copy
    path = version_of(data) / name
    expected = damaged(path, damage(path))
    for command in (
        ["query", "overview", "-d", "350"],
        ["query", "overview"],  # both datasets
        ["sql", "SELECT count(*) FROM ratings"],
        ["export", "-d", "350"],
    ):
        result = invoke(runner, data, *command)
        assert (result.exit_code, result.stdout, result.stderr) == (1, "", expected), command
    result = invoke(runner, data, "verify")
    assert result.exit_code == 1
    assert result.stderr == expected + intact(data, "990")
    # The other dataset is still served.
    assert invoke(runner, data, "query", "overview", "-d", "990").exit_code == 0


# --- A deleted, invalid or hand-edited manifest ------------------------------------------


def edit(change: Callable[[dict[str, Any]], object]) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        change(manifest)
        path.write_text(json.dumps(manifest), encoding="utf-8")

    return write


def _drop_last_header_cell(manifest: dict[str, Any]) -> None:
    manifest["header"].pop()


MANIFEST_DAMAGE: list[tuple[str, Callable[[Path], object], str | None]] = [
    ("deleted", Path.unlink, "is missing"),
    (
        "empty",
        lambda p: p.write_text(""),
        "is not valid JSON (Expecting value: line 1 column 1 (char 0))",
    ),
    (
        "cut short",
        lambda p: p.write_bytes(p.read_bytes()[:100]),
        None,  # the JSON error depends on where the cut falls: checked below
    ),
    ("not an object", lambda p: p.write_text("[1, 2]"), "is damaged (it is not a JSON object)"),
    ("invalid UTF-8", lambda p: p.write_bytes(b'{"dataset": "\xff"}'), None),
    ("no counts", edit(lambda m: m.pop("counts")), "is damaged (it has no counts)"),
    (
        "no counts.ratings",
        edit(lambda m: m["counts"].pop("ratings")),
        "is damaged (it has no counts.ratings)",
    ),
    (
        "a count that is text",
        edit(lambda m: m["counts"].update(ratings="43050")),
        "is damaged (counts.ratings is not a whole number)",
    ),
    (
        "source not an object",
        edit(lambda m: m.update(source="dices_350.csv")),
        "is damaged (source is not a JSON object)",
    ),
    (
        "another dataset",
        edit(lambda m: m.update(dataset="990")),
        "is damaged (it describes DICES-990)",
    ),
    (
        "a filter that is text",
        edit(lambda m: m.update(filter="authors")),
        "is damaged (filter is neither a JSON object nor null)",
    ),
    (
        "no checksum of ratings.parquet",
        edit(lambda m: m["files"].pop("ratings.parquet")),
        "is damaged (it has no files.ratings.parquet)",
    ),
    (
        "a size that is text",
        edit(lambda m: m["files"]["items.parquet"].update(size="54895")),
        "is damaged (files.items.parquet.size is not a whole number)",
    ),
    (
        "header shortened",
        edit(_drop_last_header_cell),
        "is damaged (its header lacks the column Q_overall)",
    ),
    (
        "header with a column twice",
        edit(lambda m: m["header"].append(m["header"][0])),
        "is damaged (its header names the column id twice)",
    ),
    (
        "header with a column renamed",
        edit(lambda m: m["header"].__setitem__(-1, "Q_everything")),
        "is damaged (its header lacks the column Q_overall)",
    ),
    (
        "header with an extra column",
        edit(lambda m: m["header"].append("notes")),
        "is damaged (its header names 'notes', which is not a DICES-350 column)",
    ),
    (
        "header not text",
        edit(lambda m: m["header"].append(7)),
        "is damaged (header holds a value that is not text)",
    ),
]


@pytest.mark.parametrize(
    ("damage", "what"), [d[1:] for d in MANIFEST_DAMAGE], ids=[d[0] for d in MANIFEST_DAMAGE]
)
def test_a_damaged_manifest_is_a_clear_error(
    damage: Callable[[Path], object], what: str | None, ingested_copy: Path, runner: CliRunner
) -> None:
    data = ingested_copy
    path = version_of(data) / "manifest.json"
    damage(path)
    if what is None:  # invalid JSON (or UTF-8) whose details the decoder words
        try:
            json.loads(path.read_bytes())
        except ValueError as error:
            what = f"is not valid JSON ({error})"
    assert what is not None
    expected = damaged(path, what)
    for command in (
        ["info"],
        ["info", "--verify"],
        ["query", "overview", "-d", "350"],
        ["sql", "SELECT count(*) FROM items"],
        ["export", "-d", "350"],
        ["filter-raters", "-d", "350"],
    ):
        result = invoke(runner, data, *command)
        assert (result.exit_code, result.stdout, result.stderr) == (1, "", expected), command
    result = invoke(runner, data, "verify")
    assert result.exit_code == 1
    assert result.stderr == expected + intact(data, "990")


def test_export_never_drops_a_column_the_manifest_header_lacks(
    ingested_copy: Path, runner: CliRunner
) -> None:
    """The header says which columns export writes: a shortened one used to drop a column."""
    data = ingested_copy
    before = invoke(runner, data, "export", "-d", "350")
    assert before.exit_code == 0
    path = version_of(data) / "manifest.json"
    edit(_drop_last_header_cell)(path)
    result = invoke(runner, data, "export", "-d", "350")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == damaged(path, "is damaged (its header lacks the column Q_overall)")


def test_a_manifest_without_checksums_is_served_but_cannot_be_verified(
    ingested_copy: Path, runner: CliRunner
) -> None:
    """What an earlier dices wrote: queries, info and export work; verify says to re-ingest."""
    data = ingested_copy
    path = version_of(data) / "manifest.json"
    edit(lambda m: m.pop("files"))(path)
    expected = damaged(
        path,
        "records no checksums (an earlier dices wrote it), so its files cannot be verified",
    )
    result = invoke(runner, data, "verify")
    assert result.exit_code == 1
    assert result.stderr == expected + intact(data, "990")
    result = invoke(runner, data, "info", "--verify", "-f", "csv")
    assert result.exit_code == 1
    assert result.stderr == expected + intact(data, "990")
    for command in (["info"], ["query", "overview", "-d", "350"], ["export", "-d", "350"]):
        result = invoke(runner, data, *command)
        assert (result.exit_code, result.stderr) == (0, ""), command
    # Without sizes to compare, a missing file is still found.
    (version_of(data) / "raters.parquet").unlink()
    result = invoke(runner, data, "query", "overview", "-d", "350")
    assert result.exit_code == 1
    assert result.stderr == damaged(version_of(data) / "raters.parquet", "is missing")


def test_a_filtered_directory_records_its_own_checksums(
    ingested: Path, runner: CliRunner, tmp_path: Path
) -> None:
    """filter-raters --write copies the source's manifest: the checksums must be the new files'."""
    written = tmp_path / "filtered"
    args = ["filter-raters", "-d", "350", "--preset", "authors", "--write", str(written)]
    assert invoke(runner, ingested, *args, "-f", "csv").exit_code == 0
    result = invoke(runner, written, "verify")
    assert result.exit_code == 0, result.output
    assert result.stderr == intact(written, "350")


# --- A data directory copied with its links resolved --------------------------------------


def copy_resolving_links(source: Path, target: Path) -> Path:
    """As `cp -rL`: DIR/350 and DIR/990 become real directories."""
    shutil.copytree(source, target, symlinks=False)
    assert not (target / "350").is_symlink() and (target / "350").is_dir()
    return target


def test_a_copy_with_resolved_links_is_replaced_by_ingest_force(
    ingested: Path, new_350: Path, overviews: dict[str, str], runner: CliRunner, tmp_path: Path
) -> None:
    data = copy_resolving_links(ingested, tmp_path / "copy")
    overview = ["query", "overview", "-d", "350", "-f", "csv"]
    assert invoke(runner, data, *overview).stdout == overviews["old"]

    result = invoke(runner, data, "ingest", str(new_350), "--force")
    assert result.exit_code == 0, result.output
    assert (data / "350").is_symlink()
    assert invoke(runner, data, *overview).stdout == overviews["new"]
    result = invoke(runner, data, "verify")
    assert result.exit_code == 0, result.output
    # The copy became a version of the store, kept for readers until the next write.
    adopted = {p.name for p in (data / ".store").glob("350-*")} - {version_of(data).name}
    assert len(adopted) == 1
    assert not list(data.glob(ADOPTING_PREFIX + "*"))

    result = invoke(runner, data, "ingest", str(new_350), "--force")
    assert result.exit_code == 0, result.output
    assert not (data / ".store" / adopted.pop()).exists()
    assert invoke(runner, data, *overview).stdout == overviews["new"]
    assert not (data / "990").is_symlink()  # the other dataset is not touched


class Killed(BaseException):
    """The process stopping at this point, as in a SIGKILL: no clean-up code of ours runs."""


def test_an_ingest_killed_while_it_moves_the_copy_aside_loses_nothing(
    ingested: Path,
    new_350: Path,
    overviews: dict[str, str],
    runner: CliRunner,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Killed between moving DIR/350 into the store and linking it there: the next write
    links it back, so nothing is lost (until then readers find DICES-350 not ingested)."""
    data = copy_resolving_links(ingested, tmp_path / "copy")
    replace = pathlib.Path.replace

    def killed_at_adoption(self: Path, target: Any) -> Any:
        if self.name.startswith(ADOPTING_PREFIX):
            raise Killed
        return replace(self, target)

    monkeypatch.setattr(pathlib.Path, "replace", killed_at_adoption)
    with pytest.raises(Killed):
        invoke(runner, data, "ingest", str(new_350), "--force")
    monkeypatch.undo()
    assert not (data / "350").exists()

    # The next write puts the copy back in place, as a link: DICES-350 is ingested again.
    result = invoke(runner, data, "ingest", str(new_350), "-d", "350")
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: DICES-350 is already ingested in {data}; use --force to replace it\n"
    )
    assert (data / "350").is_symlink()
    assert not list(data.glob(ADOPTING_PREFIX + "*"))
    overview = ["query", "overview", "-d", "350", "-f", "csv"]
    assert invoke(runner, data, *overview).stdout == overviews["old"]
    assert invoke(runner, data, "verify").exit_code == 0

    result = invoke(runner, data, "ingest", str(new_350), "--force")
    assert result.exit_code == 0, result.output
    assert invoke(runner, data, *overview).stdout == overviews["new"]
