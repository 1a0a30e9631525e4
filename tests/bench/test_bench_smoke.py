"""Every benchmark script still runs: each once, on tiny input, so that none of them rots.

Figures are not checked here (benchmarks measure, tests do not time); only that the script
runs to its end and prints its verdict line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.dices_csv import build
from typer.testing import CliRunner

from dices_cli.cli.main import app

pytestmark = pytest.mark.slow  # each bench script in a fresh process: the slowest tests

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two small DICES files and a data directory holding them."""
    folder = tmp_path_factory.mktemp("tiny")
    for name in ("350", "990"):
        (folder / f"{name}.csv").write_bytes(build(name, items=4, raters=6))
    files = [str(folder / "350.csv"), str(folder / "990.csv")]
    result = CliRunner().invoke(app, ["ingest", *files, "--data", str(folder / "data")])
    assert result.exit_code == 0, result.output
    return folder


SCRIPTS = {
    "ingest": ["--runs", "1", "--files", "{tiny}/350.csv", "{tiny}/990.csv"],
    "queries": ["--smoke", "--files", "{tiny}/350.csv", "{tiny}/990.csv"],
    "filter": ["--runs", "1", "--data", "{tiny}/data"],
    "output": ["--runs", "1", "--data", "{tiny}/data"],
    "load": [
        *("--runs", "1", "--file", "{tiny}/350.csv", "--query", "overview"),
        "--query",
        "agreement",
    ],
    "agreement": [
        *("--runs", "1", "--permutations", "10", "--by", "rater_gender"),
        "--data",
        "{tiny}/data",
    ],
    "calibration_disagreement": ["--quick", "--data", "{tiny}/data"],
    "evaluate": ["--smoke", "--data", "{tiny}/data", "--baseline", "HEAD"],
    "calibration_evaluate": [*("--simulations", "2", "--bootstrap", "20", "--replicates", "5")],
    "report": ["--runs", "1", "--permutations", "10", "--data", "{tiny}/data"],
    "prosocial": ["--runs", "1", "--rows", "200"],
    "scale": ["--runs", "1", "--rows", "2000"],
    "predictions": ["--smoke", "--data", "{tiny}/data"],
    "calibration_groups": ["--quick", "--data", "{tiny}/data"],
    "calibration_shares": ["--quick", "--data", "{tiny}/data"],
    "judge": ["--runs", "1", "--quick", "--data", "{tiny}/data"],
    "startup": ["--smoke", "--data", "{tiny}/data"],
    "hostile": ["--smoke"],
    "summary": [],
}


def test_every_bench_script_is_smoke_tested() -> None:
    scripts = {path.stem for path in BENCH.glob("*.py") if not path.stem.startswith("_")}
    assert scripts == set(SCRIPTS)


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_a_bench_script_runs_on_tiny_input(script: str, tiny: Path, tmp_path: Path) -> None:
    arguments = [argument.format(tiny=tiny) for argument in SCRIPTS[script]]
    done = subprocess.run(
        [sys.executable, str(BENCH / f"{script}.py"), *arguments],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "DICES_BENCH_RESULTS": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip(), "the script printed no figures"
    if script != "summary":  # the one script that reads results rather than making them
        written = tmp_path / f"{script}.jsonl"
        assert written.is_file(), f"bench/{script}.py appended nothing to bench/results"
        line = json.loads(written.read_text(encoding="utf-8").splitlines()[-1])
        assert line["bench"] == script
        assert line["machine"]["cpus"] and line["document"]
