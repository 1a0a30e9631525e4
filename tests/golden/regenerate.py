"""Write DICES's golden outputs (tests/golden/files/) from the packaged sample:

    python -m tests.golden.regenerate

Run it only when a change of DICES's outputs is meant, and say in the commit which outputs
changed and why: tests/golden/test_golden.py holds every later tree to these bytes.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from tests.golden.outputs import predictions, produce

GOLDEN = Path(__file__).with_name("files")
COMMAND = "python -m tests.golden.regenerate"


def sample_data(folder: Path) -> Path:
    """The packaged sample of both DICES datasets, ingested into `folder`/data."""
    from typer.testing import CliRunner

    from dices_cli.cli.main import app
    from dices_cli.runs.demo import sample_paths

    data = folder / "data"
    paths = [str(path) for path in sample_paths()]
    result = CliRunner().invoke(app, ["ingest", *paths, "--data", str(data), "-q"])
    assert result.exit_code == 0, result.output
    return data


def sample_predictions(folder: Path) -> Path:
    """The fixed predictions file: `outputs.predictions` of the packaged DICES-350 sample."""
    from dices_cli.runs.demo import sample_paths

    dices_350 = next(p for p in sample_paths() if "350" in p.name)
    return predictions(dices_350, folder / "predictions.csv")


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        data = sample_data(folder)
        shutil.rmtree(GOLDEN, ignore_errors=True)
        written = produce(data, sample_predictions(folder), GOLDEN)
    size = sum((GOLDEN / name).stat().st_size for name in written)
    print(f"wrote {len(written)} files, {size:,} bytes, to {GOLDEN}")


if __name__ == "__main__":
    main()
