"""DICES's outputs stay byte-identical: every canned DICES query, `dices evaluate` of a fixed
predictions file and the report's numbers, over the packaged sample, against the golden
files in tests/golden/files/ (tests/golden/outputs.py says what each is)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import built_once
from tests.golden.outputs import EVALUATIONS, QUERIES, REPORT, produce
from tests.golden.regenerate import COMMAND, GOLDEN, sample_predictions

# The golden files are small: a change that makes them large is a mistake of the set.
MOST_BYTES = 300_000


@pytest.fixture(scope="module")
def produced(sample: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every output, produced once per run for every worker (`built_once`)."""

    def build(folder: Path) -> None:
        produce(sample, sample_predictions(folder), folder / "out")

    return built_once(tmp_path_factory, "golden", build) / "out"


NAMES = [f"{name}.csv" for name, _ in (*QUERIES, *EVALUATIONS)] + [REPORT]


def test_the_golden_files_are_the_outputs_and_small() -> None:
    assert sorted(p.name for p in GOLDEN.iterdir()) == sorted(NAMES)
    assert sum(p.stat().st_size for p in GOLDEN.iterdir()) < MOST_BYTES


@pytest.mark.parametrize("name", NAMES)
def test_each_output_is_byte_identical_to_its_golden_file(produced: Path, name: str) -> None:
    error = produced / f"{name}.error"
    assert not error.exists(), error.read_text(encoding="utf-8")
    got, want = (produced / name).read_bytes(), (GOLDEN / name).read_bytes()
    if got != want:
        lines = zip(got.decode().splitlines(), want.decode().splitlines(), strict=False)
        first = next(
            ((i, g, w) for i, (g, w) in enumerate(lines, 1) if g != w),
            (None, "(one is longer)", ""),
        )
        pytest.fail(
            f"DICES's output {name} changed (first differing line {first[0]}:\n"
            f"  now:    {first[1][:300]}\n  golden: {first[2][:300]}).\n"
            "If the change is meant, regenerate the golden files with "
            f"`{COMMAND}` and say in the commit which outputs changed and why."
        )
