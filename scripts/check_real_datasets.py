"""Ingest the real files of the built-in declared datasets; print their counts beside the
published (or counted) ones, and each file's SHA-256 beside its declaration's. CI has no
network: this runs by hand, over copies of the files read from their public snapshots
(never committed).

    python scripts/check_real_datasets.py DIR

DIR holds popquorn/offensiveness_raw_data.csv, lewidi/<NAME>_{train,dev,test}.json (the
2023 sets), lewidi2025/<NAME>_{train,dev,test}.json and <NAME>_annotators_meta.json (CSC's
train split is not in the snapshot: its dev and test are read), and d3code/d3-raters.csv
and d3-items.csv (d3-ratings.csv is not in the snapshot: the raters file is counted
alone). Exit status 1 when a count or a checksum differs.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from dices_cli.families import FAMILIES
from dices_cli.families.declaration import DatasetDeclaration
from dices_cli.formats.declared.read import read_file
from dices_cli.formats.ingest import ingest
from dices_cli.problems import Report
from dices_cli.read import checksum
from dices_cli.read.source import open_source
from dices_cli.store.datasets import Store

SPLITS = ("train", "dev", "test")
STORED = {
    "popquorn_offensiveness": ["popquorn/offensiveness_raw_data.csv"],
    **{
        name: [f"lewidi/{stem}_{split}.json" for split in SPLITS]
        for name, stem in (
            ("hs_brexit", "HS-Brexit"),
            ("armis", "ArMIS"),
            ("md_agreement", "MD-Agreement"),
            ("convabuse", "ConvAbuse"),
        )
    },
    "paraphrase": [
        *(f"lewidi2025/Paraphrase_{split}.json" for split in SPLITS),
        "lewidi2025/Paraphrase_annotators_meta.json",
    ],
    "csc": [
        *(f"lewidi2025/CSC_{split}.json" for split in ("dev", "test")),
        "lewidi2025/CSC_annotators_meta.json",
    ],
}
D3CODE = ["d3code/d3-raters.csv", "d3code/d3-items.csv"]


def verdict(same: bool) -> str:
    return "ok" if same else "DIFFERS"


def checksums(declared: DatasetDeclaration, paths: Sequence[Path]) -> int:
    """Print each file's SHA-256 beside the one its declaration records; the differences."""
    differ = 0
    for path in paths:
        spec = next(s for s in declared.files if s.source and s.matches(path.name))
        assert spec.source is not None
        digest = checksum.sha256_file(path)
        if spec.source.sha256 is None:
            print(f"    {path.name:38} sha256 {digest.sha256[:16]}…  (not declared)")
            continue
        same = digest.sha256 == spec.source.sha256 and digest.size == spec.source.size
        differ += not same
        print(
            f"    {path.name:38} sha256 {digest.sha256[:16]}… size {digest.size:>9,}  "
            f"declared {spec.source.sha256[:16]}… {spec.source.size:>9,}  {verdict(same)}"
        )
    return differ


def main(root: Path) -> int:
    differ = 0
    with tempfile.TemporaryDirectory() as data:
        store = Store(Path(data))
        for name, files in STORED.items():
            paths = [root / f for f in files]
            (result,) = ingest(paths, store, name)
            counts = result.stored.manifest["counts"]
            published = FAMILIES[name].published[name]
            for unit in ("items", "raters", "ratings"):
                same = counts[unit] == published[unit]
                differ += not same
                print(
                    f"{name:24} {unit:8} {counts[unit]:>7,}  published {published[unit]:>7,}"
                    f"  {verdict(same)}"
                )
            declared = FAMILIES[name].declared
            assert declared is not None
            differ += checksums(declared, paths)
    declared = FAMILIES["d3code"].declared
    assert declared is not None
    spec = next(s for s in declared.files if s.role == "raters")
    with open_source(root / D3CODE[0]) as source:
        raters = read_file(source, spec, "csv", Report(source.name, "d3code"))
    count = raters.frame[spec.rater or ""].n_unique()
    same = count == declared.published["raters"]
    differ += not same
    print(
        f"{'d3code (raters file)':24} {'raters':8} {count:>7,}  published "
        f"{declared.published['raters']:>7,}  {verdict(same)}"
    )
    differ += checksums(declared, [root / f for f in D3CODE])
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "/work/research/data")))
