"""Ingest the real files of the built-in declared datasets and print their counts beside
the published (or counted) ones. CI has no network: this runs by hand, over copies of the
files read from their public snapshots (never committed).

    python scripts/check_real_datasets.py DIR

DIR holds popquorn/offensiveness_raw_data.csv, lewidi/<NAME>_{train,dev,test}.json and
d3code/d3-raters.csv (d3-ratings.csv is not in the snapshot: the raters file is read alone).
Exit status 1 when a count differs.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from dices_cli.families import FAMILIES
from dices_cli.formats.declared.read import read_file
from dices_cli.formats.ingest import ingest
from dices_cli.problems import Report
from dices_cli.read.source import open_source
from dices_cli.store.datasets import Store

STORED = {
    "popquorn_offensiveness": ["popquorn/offensiveness_raw_data.csv"],
    **{
        name: [f"lewidi/{stem}_{split}.json" for split in ("train", "dev", "test")]
        for name, stem in (
            ("hs_brexit", "HS-Brexit"),
            ("armis", "ArMIS"),
            ("md_agreement", "MD-Agreement"),
            ("convabuse", "ConvAbuse"),
        )
    },
}


def main(root: Path) -> int:
    differ = 0
    with tempfile.TemporaryDirectory() as data:
        store = Store(Path(data))
        for name, files in STORED.items():
            (result,) = ingest([root / f for f in files], store, name)
            counts = result.stored.manifest["counts"]
            published = FAMILIES[name].published[name]
            for unit in ("items", "raters", "ratings"):
                same = counts[unit] == published[unit]
                differ += not same
                print(
                    f"{name:24} {unit:8} {counts[unit]:>7,}  published {published[unit]:>7,}"
                    f"  {'ok' if same else 'DIFFERS'}"
                )
    declared = FAMILIES["d3code"].declared
    assert declared is not None
    spec = next(s for s in declared.files if s.role == "raters")
    with open_source(root / "d3code/d3-raters.csv") as source:
        raters = read_file(source, spec, "csv", Report(source.name, "d3code"))
    count = raters.frame[spec.rater or ""].n_unique()
    same = count == declared.published["raters"]
    differ += not same
    print(
        f"{'d3code (raters file)':24} {'raters':8} {count:>7,}  published "
        f"{declared.published['raters']:>7,}  {'ok' if same else 'DIFFERS'}"
    )
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "/work/research/data")))
