"""The demo run once per session (each xdist worker's own): `dices demo --keep DIR`, DIR a path
with a space in it (`kept_demo`: what the run wrote, and DIR), and the tour in-process
(`toured`: its sections, and the directory it ingested the sample into)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from dices_cli.cli.main import app
from dices_cli.runs.demo import Section, tour


@dataclass(frozen=True)
class KeptDemo:
    result: Result
    keep: Path


_RUN: list[KeptDemo] = []


@pytest.fixture(scope="session", name="kept_demo")
def kept_demo_fixture(tmp_path_factory: pytest.TempPathFactory) -> KeptDemo:
    """`kept_demo`: the session's one run of the demo into a kept directory, for every test
    module that imports this fixture (`from tests.drivers.demo import kept_demo_fixture`)."""
    if not _RUN:
        keep = tmp_path_factory.mktemp("demo") / "my demo"
        _RUN.append(KeptDemo(CliRunner().invoke(app, ["demo", "--keep", str(keep)]), keep))
    return _RUN[0]


@dataclass(frozen=True)
class Toured:
    sections: list[Section]
    workdir: Path


_TOURED: list[Toured] = []


@pytest.fixture(scope="session", name="toured")
def toured_fixture(tmp_path_factory: pytest.TempPathFactory) -> Toured:
    """`toured`: the session's one demo tour (`dices_cli.runs.demo.tour`) and the directory it
    ingested the sample into, for every test module that imports this fixture; a test may
    add to the directory what a command of the tour adds (a judge's cache)."""
    if not _TOURED:
        workdir = tmp_path_factory.mktemp("tour") / "demo"
        _TOURED.append(Toured(tour(workdir), workdir))
    return _TOURED[0]
