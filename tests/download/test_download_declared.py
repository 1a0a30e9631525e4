"""`dices download NAME` for a declared dataset: --dry-run lists the sources its declaration
pins (the published size and SHA-256 decide), and a download fetches, verifies and ingests
them, here from a local HTTP server on 127.0.0.1 serving a small synthetic file."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dices_cli import download as download_module
from dices_cli.cli.main import app
from dices_cli.families import FAMILIES, register
from dices_cli.families.declaration import read_declaration

BODY = (
    b"item_id,rater_id,text,toxicity,gender\n"
    b"i1,r1,hello,3,woman\ni1,r2,hello,1,man\ni2,r1,bye,5,woman\ni2,r2,bye,2,man\n"
)
URL = "https://example.org/toy/v1/ratings.csv"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture(autouse=True)
def _registry_as_it_was(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for variable in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(variable, raising=False)
        monkeypatch.delenv(variable.upper(), raising=False)
    monkeypatch.delenv(download_module.BASE_VARIABLE, raising=False)
    monkeypatch.setattr(download_module, "BACKOFF_SECONDS", 0.0)
    before = set(FAMILIES)
    yield
    for name in set(FAMILIES) - before:
        FAMILIES.pop(name)


@pytest.fixture
def files() -> Iterator[tuple[str, dict[str, bytes]]]:
    """A server on 127.0.0.1: its address, and the bodies it serves by path (else 404)."""
    served: dict[str, bytes] = {}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_args: object) -> None:
            pass

        def do_GET(self) -> None:
            body = served.get(self.path)
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", served
    httpd.shutdown()
    httpd.server_close()


def toy(tmp_path: Path, body: bytes = BODY) -> None:
    """Register a declared dataset `toy` whose one file is published at URL as `body`."""
    path = tmp_path / "toy.toml"
    path.write_text(
        '[[dataset]]\nname = "toy"\ntitle = "Toy"\n'
        "published = { items = 2, raters = 2, ratings = 4 }\n"
        '[[dataset.file]]\nitem = "item_id"\nrater = "rater_id"\nlabels = ["toxicity"]\n'
        'text = ["text"]\nrater_attributes = ["gender"]\n'
        f'[dataset.file.source]\nurl = "{URL}"\nsaved_as = "toy/ratings.csv"\n'
        f'size = {len(body)}\nsha256 = "{sha256(body)}"\n'
        '[dataset.scales.toxicity]\nkind = "ordinal"\nvalues = [1, 2, 3, 4, 5]\n',
        encoding="utf-8",
    )
    register(read_declaration(path))


def test_dry_run_lists_the_declared_source_and_fetches_nothing(tmp_path: Path) -> None:
    toy(tmp_path)
    result = CliRunner().invoke(
        app, ["download", "toy", "--dry-run", "--dir", str(tmp_path / "d"), "-f", "csv"]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "dataset,file,size,sha256,source,url,here",
        f"Toy,toy/ratings.csv,{len(BODY)},{sha256(BODY)},1,{URL},"
        f"not here yet: {tmp_path / 'd' / 'toy' / 'ratings.csv'}",
    ]


def test_a_built_in_declared_dataset_lists_its_pinned_source() -> None:
    result = CliRunner().invoke(
        app, ["download", "popquorn_offensiveness", "--dry-run", "-f", "csv", "--dir", "/nowhere"]
    )
    assert result.exit_code == 0, result.output
    (row,) = result.stdout.splitlines()[1:]
    assert row.split(",")[:6] == [
        "POPQUORN offensiveness",
        "popquorn_offensiveness/raw_data.csv",
        "3062770",
        "fb0589093d45da76bf4ef4d0abff679b540bdd5b17af5764913b3ccd0a069e1e",
        "1",
        "https://raw.githubusercontent.com/Jiaxin-Pei/Potato-Prolific-Dataset/"
        "dbb118c29b3d9bcce5aa172d8249ded9ece4df84/dataset/offensiveness/raw_data.csv",
    ]


def test_download_fetches_verifies_and_ingests_from_a_mirror(
    tmp_path: Path, files: tuple[str, dict[str, bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    toy(tmp_path)
    base, served = files
    served["/mirror/toy/ratings.csv"] = BODY
    monkeypatch.setenv(download_module.BASE_VARIABLE, f"{base}/mirror")
    data, where = tmp_path / "data", tmp_path / "files"
    result = CliRunner().invoke(
        app, ["download", "toy", "--dir", str(where), "--ingest", "--data", str(data)]
    )
    assert result.exit_code == 0, result.output
    target = where / "toy" / "ratings.csv"
    assert result.stdout == f"{target}\n"
    assert target.read_bytes() == BODY
    assert result.stderr.splitlines()[:2] == [
        f"Toy: downloaded from {base}/mirror/toy/ratings.csv, {len(BODY)} bytes, SHA-256 "
        f"verified -> {target}",
        "Toy: 4 records read = 4 kept + 0 rejected; 2 items, 2 raters, 4 ratings -> "
        f"{data / 'toy'}",
    ]


def test_bytes_that_are_not_the_published_file_are_refused(
    tmp_path: Path, files: tuple[str, dict[str, bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    toy(tmp_path)
    base, served = files
    other = served["/mirror/toy/ratings.csv"] = BODY.replace(b"bye", b"BYE")
    monkeypatch.setenv(download_module.BASE_VARIABLE, f"{base}/mirror")
    result = CliRunner().invoke(app, ["download", "toy", "--dir", str(tmp_path / "files")])
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: {base}/mirror/toy/ratings.csv served different bytes (SHA-256 "
        f"{sha256(other)}, expected {sha256(BODY)}), which were not kept\n"
    )
    assert not (tmp_path / "files" / "toy" / "ratings.csv").exists()


def test_each_declared_file_has_its_own_path_on_a_mirror() -> None:
    paths = [f.path for f in download_module.published_files()]
    assert len(paths) == len(set(paths))
    assert "popquorn_offensiveness/raw_data.csv" in paths
    assert "popquorn_politeness/raw_data.csv" in paths
