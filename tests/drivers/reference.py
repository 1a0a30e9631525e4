"""A declared dataset whose items carry reference labels (experts' gold), for gold-vs-crowd.

The ratings are `tests.drivers.ordinal`'s (an ordinal `score` 1..5 and a nominal `colour`,
raters in groups `grp` and halves `half`); a second file, `NAME_gold.csv`, gives each item
a reference for each label: `expert` on the score's scale (a rounded mean of the item's
ratings, moved one step on some items, `NA` on a few: no reference), and `colour_gold`
written as R/G/B, which the declaration maps onto red/green/blue.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.drivers.ordinal import OrdinalRatings, write_dataset

REFERENCES = """
[[dataset.file]]
role = "items"
match = "*_gold.csv"
item = "item_id"
item_attributes = ["expert", "colour_gold"]

[dataset.references.expert]
label = "score"
missing = ["NA"]

[dataset.references.colour_gold]
label = "colour"
values = {{ R = "red", G = "green", B = "blue" }}
"""
COLOURS = ("red", "green", "blue")


def write_reference_dataset(ratings: OrdinalRatings, folder: Path, name: str, seed: int) -> Path:
    """The ratings, the gold file and the declaration naming both; the declaration's path."""
    path = write_dataset(ratings, folder, name)
    path.write_text(path.read_text(encoding="utf-8") + REFERENCES.format(), encoding="utf-8")
    rng = np.random.default_rng(seed)
    lines = ["item_id,expert,colour_gold"]
    for item in sorted(set(ratings.item.tolist())):
        values = ratings.value[ratings.item == item]
        expert = int(np.clip(round(float(values.mean())) + rng.integers(-1, 2), 1, ratings.levels))
        cell = "NA" if rng.random() < 0.1 else str(expert)
        colour = "RGB"[(item + expert + int(rng.integers(0, 2))) % 3]
        lines.append(f"i{item:03d},{cell},{colour}")
    (folder / f"{name}_gold.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def ingest_reference_dataset(
    ratings: OrdinalRatings, folder: Path, name: str = "reference_toy", seed: int = 0
) -> Path:
    """The dataset written and ingested into `folder`/data, whose path this is (the family
    is left out of the process's registry, as `ordinal.ingest_dataset` does)."""
    from typer.testing import CliRunner

    from dices_cli.cli.main import app
    from dices_cli.families import FAMILIES

    declaration = write_reference_dataset(ratings, folder, name, seed)
    data = folder / "data"
    files = [str(folder / f"{name}.csv"), str(folder / f"{name}_gold.csv")]
    result = CliRunner().invoke(
        app, ["ingest", *files, "--declaration", str(declaration), "--data", str(data)]
    )
    assert result.exit_code == 0, result.output
    FAMILIES.pop(name)
    return data
