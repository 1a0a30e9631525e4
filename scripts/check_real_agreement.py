"""The declared queries on the real POPQUORN offensiveness and HS-Brexit files, with
Krippendorff's alpha checked against the `krippendorff` package. CI has no network: this
runs by hand, over copies of the files read from their public snapshots (never committed).

    python scripts/check_real_agreement.py DIR [--permutations N]

DIR holds popquorn/offensiveness_raw_data.csv and lewidi/HS-Brexit_{train,dev,test}.json
(as for scripts/check_real_datasets.py). Prints POPQUORN's share rated >= 3 by race and by
gender, its alpha (ordinal, nominal, interval) overall and per group beside the package's,
GRASP's table for race and gender, and HS-Brexit's IRR/XRR/GAI of the target group against
the control group. Exit status 1 when an alpha differs from the package's by over 1e-9.
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
import tempfile
from pathlib import Path

import krippendorff
import numpy as np
import polars as pl
from typer.testing import CliRunner

from dices_cli.cli.main import app
from dices_cli.formats.ingest import ingest
from dices_cli.store.datasets import Store

POPQUORN = "popquorn_offensiveness"
GRASP = "raters,irr,xrr,gai,irr_p,xrr_p,gai_p,gai_p_bh,dsi"


def query(data: Path, *args: str) -> list[dict[str, str]]:
    result = CliRunner().invoke(app, ["query", *args, "--data", str(data), "-f", "csv"])
    if result.exit_code != 0:
        raise SystemExit(f"dices query {' '.join(args)}: {result.stderr}")
    print(f"$ dices query {' '.join(args)}")
    print(result.stdout)
    return list(csv.DictReader(io.StringIO(result.stdout)))


def package_alpha(data: Path, by: str | None, metric: str) -> dict[str, float]:
    """The krippendorff package's alpha of POPQUORN's offensiveness, per group of `by`."""
    ratings = pl.read_parquet(data / POPQUORN / "ratings.parquet")
    raters = pl.read_parquet(data / POPQUORN / "raters.parquet")
    rated = ratings.join(raters, on="rater_id").filter(pl.col("offensiveness").is_not_null())
    alphas = {}
    groups = [None] if by is None else sorted(rated[by].drop_nulls().unique().to_list())
    for group in groups:
        mine = rated if group is None else rated.filter(pl.col(by) == group)
        wide = mine.pivot(on="item_id", index="rater_id", values="offensiveness")
        matrix = wide.drop("rater_id").to_numpy().astype(float)
        try:
            alphas[str(group)] = krippendorff.alpha(
                matrix, level_of_measurement=metric, value_domain=[1, 2, 3, 4, 5]
            )
        except ValueError:  # one rater, or one value: undefined
            alphas[str(group)] = float("nan")
    return alphas


def main(root: Path, permutations: int) -> int:
    worst = 0.0
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder)
        store = Store(data)
        ingest([root / "popquorn/offensiveness_raw_data.csv"], store, POPQUORN)
        ingest(
            [root / f"lewidi/HS-Brexit_{split}.json" for split in ("train", "dev", "test")],
            store,
            "hs_brexit",
        )
        query(data, "overview", "-d", POPQUORN)
        for by in ("race", "gender"):
            query(data, "label-by-group", "-d", POPQUORN, "--by", by)
        for metric in ("ordinal", "nominal", "interval"):
            (pool,) = query(
                data, "agreement", "-d", POPQUORN, "--metric", metric, "--columns", "metric,irr"
            )
            theirs = package_alpha(data, None, metric)["None"]
            worst = max(worst, abs(float(pool["irr"]) - theirs))
            print(f"{metric}: ours {float(pool['irr']):.12f}  krippendorff {theirs:.12f}\n")
        for by in ("race", "gender"):
            rows = query(
                data, "agreement", "-d", POPQUORN, "--by", by,
                "--permutations", str(permutations), "--columns", f"{by},{GRASP}",
            )  # fmt: skip
            theirs = package_alpha(data, by, "ordinal")
            for row in rows:
                if row["irr"]:
                    worst = max(worst, abs(float(row["irr"]) - theirs[row[by]]))
                else:
                    assert np.isnan(theirs[row[by]]), row
        print(f"largest |alpha - krippendorff package| over every alpha above: {worst:.2e}\n")
        query(
            data, "agreement", "-d", "hs_brexit", "--by", "group",
            "--permutations", str(permutations), "--columns", f"label,metric,group,{GRASP}",
        )  # fmt: skip
    return int(worst > 1e-9)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--permutations", type=int, default=1000)
    arguments = parser.parse_args()
    sys.exit(main(arguments.root, arguments.permutations))
