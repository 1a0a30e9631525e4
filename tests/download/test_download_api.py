"""`dices download` and `Data.download` both run `dices_cli.runs.download.run_download`:
the same files from a local server on 127.0.0.1 (tests/download/test_download.py's), the
same dry-run plan, the same ingest, and every refused setting with its exit code and
message: the command line's with flags, the API's with parameter names."""

from __future__ import annotations

import csv
import io
import math
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import dices_cli as dices
from dices_cli import download as download_module
from dices_cli.cli.main import app
from dices_cli.errors import DicesError
from dices_cli.output import text_cell
from dices_cli.runs.download import DownloadSettings, run_download
from tests.download.test_download import BODY_350, NAME_350, Server, _handler, listing, sha256


@pytest.fixture
def server() -> Iterator[Server]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    httpd.daemon_threads = True
    state = Server(url=f"http://127.0.0.1:{httpd.server_address[1]}")
    httpd.RequestHandlerClass = _handler(state)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield state
    state.closed.set()
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No proxy from the machine's environment, no mirror, and no waiting between tries."""
    for variable in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(variable, raising=False)
        monkeypatch.delenv(variable.upper(), raising=False)
    monkeypatch.delenv(download_module.BASE_VARIABLE, raising=False)
    monkeypatch.setattr(download_module, "BACKOFF_SECONDS", 0.0)


def cli(*args: str | Path) -> Any:
    return CliRunner().invoke(app, ["download", *map(str, args)])


def cells(frame_rows: list[tuple[Any, ...]]) -> list[list[str]]:
    return [[text_cell(value) for value in row] for row in frame_rows]


def test_the_api_fetches_and_ingests_what_the_command_line_does(
    server: Server, tmp_path: Path
) -> None:
    """The same file from the same source, the path the command prints, the same dataset
    ingested; the second fetch finds the file there, verified, and asks nothing."""
    server.files["/350.csv"] = BODY_350
    source = ("350", "--url", f"{server.url}/350.csv", "--sha256", sha256(BODY_350))
    result = cli(*source, "--dir", tmp_path / "cli", "--ingest", "--data", tmp_path / "cli-data")
    assert result.exit_code == 0, result.output
    data = dices.open(tmp_path / "api-data")
    files = data.download(
        "350",
        tmp_path / "api",
        url=f"{server.url}/350.csv",
        sha256=sha256(BODY_350),
        ingest=True,
    )
    assert files.columns == ["dataset", "file", "path", "size", "sha256", "url"]
    assert files.rows() == [
        (
            "DICES-350",
            NAME_350,
            str(tmp_path / "api" / NAME_350),
            len(BODY_350),
            sha256(BODY_350),
            f"{server.url}/350.csv",
        )
    ]
    assert result.stdout == f"{tmp_path / 'cli' / NAME_350}\n"
    assert (tmp_path / "api" / NAME_350).read_bytes() == BODY_350
    assert len(server.requests) == 2
    overview = CliRunner().invoke(
        app, ["query", "overview", "--data", str(tmp_path / "cli-data"), "-f", "csv"]
    )
    assert overview.exit_code == 0, overview.output
    rows = list(csv.reader(io.StringIO(overview.stdout)))
    assert cells(data.query("overview").rows()) == rows[1:]
    again = data.download(
        "350", tmp_path / "api", url=f"{server.url}/350.csv", sha256=sha256(BODY_350)
    )
    assert again["url"].to_list() == [None]
    assert len(server.requests) == 2


def test_the_api_plan_is_the_command_lines_dry_run(tmp_path: Path) -> None:
    (tmp_path / NAME_350).write_bytes(b"not the published file")
    result = cli("all", "--dry-run", "--dir", tmp_path, "--format", "csv")
    assert result.exit_code == 0, result.output
    rows = list(csv.reader(io.StringIO(result.stdout)))
    plan = dices.open(tmp_path / "data").download("all", tmp_path, dry_run=True)
    assert rows[0] == plan.columns == ["dataset", "file", "size", "sha256", "source", "url", "here"]
    assert cells(plan.rows()) == rows[1:]
    assert plan.height >= 7  # three sources of each DICES file, and the others'
    assert plan.row(0)[6].startswith("here, and not the published file")
    assert listing(tmp_path) == [NAME_350]


def test_each_file_is_handed_over_as_soon_as_it_is_verified(server: Server, tmp_path: Path) -> None:
    """run_download hands each file to `fetched` before the next is asked for: a caller
    knows the files fetched before a failure."""
    server.files["/350.csv"] = BODY_350
    settings = DownloadSettings(
        "350", tmp_path, url=f"{server.url}/350.csv", sha256=sha256(BODY_350)
    )
    heard: list[tuple[str, int]] = []
    result = run_download(
        settings,
        progress=lambda _stage, _fraction: None,
        fetched=lambda done: heard.append((done.path.name, len(server.requests))),
    )
    assert heard == [(NAME_350, 1)]
    assert [f.path.name for f in result.files] == [NAME_350]
    assert result.plan is None and result.ingested == ()


def named(message: str) -> str:
    """A command-line message as the API says it: each flag by its parameter's name."""
    return re.sub(r"(?<![\w-])--([a-z][a-z-]*)", lambda m: m[1].replace("-", "_"), message)


# Each refused setting: the API's keyword arguments, the command line's options and message
# ({tmp}: the test's directory); each is a usage error (exit 2).
REFUSED: list[tuple[dict[str, Any], list[str], str]] = [
    (
        {"timeout": math.nan},
        ["--timeout", "nan"],
        "--timeout is a finite number of seconds, not nan",
    ),
    (
        {"timeout": math.inf},
        ["--timeout", "inf"],
        "--timeout is a finite number of seconds, not inf",
    ),
    ({"deadline": math.nan}, ["--deadline", "nan"], "--deadline is a number of seconds, not nan"),
    (
        {"max_size": "10X"},
        ["--max-size", "10X"],
        "--max-size must be a size such as 500M or 4G, not '10X'",
    ),
    (
        {"url": "ftp://example.org/x.csv"},
        ["--url", "ftp://example.org/x.csv"],
        "--url takes an http:// or https:// address, not 'ftp://example.org/x.csv'",
    ),
    ({"sha256": "abc"}, ["--sha256", "abc"], "--sha256 takes 64 hexadecimal digits, not 'abc'"),
    (
        {"dry_run": True, "ingest": True},
        ["--dry-run", "--ingest"],
        "--dry-run fetches nothing, so there is nothing to --ingest",
    ),
]


@pytest.mark.parametrize(("given", "args", "message"), REFUSED)
def test_a_refused_setting_is_the_same_error_from_the_api_and_the_command_line(
    tmp_path: Path, given: dict[str, Any], args: list[str], message: str
) -> None:
    (tmp_path / "a-file").write_text("")
    said = message.format(tmp=tmp_path)
    options = [a.format(tmp=tmp_path) for a in args]
    result = cli("350", "--dir", tmp_path, *options)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr.startswith(f"Error: {said}\n")
    values = {k: v.format(tmp=tmp_path) if isinstance(v, str) else v for k, v in given.items()}
    values = {"dir": tmp_path, **values}
    with pytest.raises(DicesError) as raised:
        dices.open(tmp_path / "data").download("350", **values)
    assert (raised.value.exit_code, str(raised.value)) == (2, named(said))
    assert listing(tmp_path) == ["a-file"]


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"dataset": "nope"}, "dataset must be one of: "),
        ({"retries": 21}, "retries must be between 0 and 20 (got 21)"),
        ({"timeout": 0}, "timeout must be at least 0.01 s (got 0)"),
        ({"max_size": 0}, "max_size must be at least 1 (got 0)"),
        ({"dir": "{tmp}/a-file"}, "dir {tmp}/a-file is not a directory"),
        ({"colour": "red"}, "download does not take colour; it takes: data, dataset, deadline, "),
    ],
)
def test_the_api_checks_what_the_command_lines_parser_checks(
    tmp_path: Path, given: dict[str, Any], message: str
) -> None:
    """Choices and ranges that Click checks on the command line, and unknown names."""
    (tmp_path / "a-file").write_text("")
    values = {k: v.format(tmp=tmp_path) if isinstance(v, str) else v for k, v in given.items()}
    values = {"dataset": "350", "dir": tmp_path, **values}
    with pytest.raises(DicesError) as raised:
        dices.open(tmp_path / "data").download(**values)
    assert raised.value.exit_code == 2
    assert str(raised.value).startswith(message.format(tmp=tmp_path))


def test_the_shaping_options_are_the_dry_runs(tmp_path: Path) -> None:
    result = cli("350", "--dir", tmp_path, "--format", "csv")
    assert (result.exit_code, result.stderr.splitlines()[0]) == (
        2,
        "Error: --format, --columns, --sort and --limit shape the --dry-run listing; a download "
        "prints the paths of its files",
    )
