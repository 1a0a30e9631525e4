"""gold-vs-crowd for a declared dataset whose items carry a reference label: every figure
against an independent reference (plain Python crowd labels from the CSV files, scikit-learn's
kappas, a term-by-term numpy Fleiss-Cohen-Everitt interval), and every way it is refused."""

from __future__ import annotations

import csv
import io
import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from typer.testing import CliRunner

from dices_cli.cli.main import app
from dices_cli.families.declaration import DeclarationError, parse_declaration
from tests.drivers.ordinal import ingest_dataset, ordinal_ratings
from tests.drivers.reference import ingest_reference_dataset

pytestmark = pytest.mark.usefixtures("registry_as_it_was")
Z95 = 1.959963984540054
NAME = "reference_toy"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from dices_cli.families import FAMILIES

    before = set(FAMILIES)
    path = tmp_path_factory.mktemp("reference")
    ingest_reference_dataset(ordinal_ratings((5, 5, 4), 40, 18, seed=7), path, NAME, seed=3)
    for name in set(FAMILIES) - before:
        FAMILIES.pop(name)
    return path


def query(folder: Path, *args: str) -> list[dict[str, str]]:
    result = CliRunner().invoke(
        app,
        ["query", "gold-vs-crowd", "-d", NAME, "--data", str(folder / "data"), "-f", "csv", *args],
    )
    assert result.exit_code == 0, result.output
    return list(csv.DictReader(io.StringIO(result.stdout)))


def fce(table: np.ndarray) -> tuple[float, float, float]:
    """Kappa and its 95% interval, each term of Fleiss, Cohen and Everitt (1969) in a loop."""
    n = table.sum()
    p = table / n
    rows, cols = p.sum(axis=1), p.sum(axis=0)
    chance = sum(rows[i] * cols[i] for i in range(len(p)))
    kappa = (sum(p[i, i] for i in range(len(p))) - chance) / (1 - chance)
    a = sum(p[i, i] * (1 - (rows[i] + cols[i]) * (1 - kappa)) ** 2 for i in range(len(p)))
    b = (1 - kappa) ** 2 * sum(
        p[i, j] * (cols[i] + rows[j]) ** 2 for i in range(len(p)) for j in range(len(p)) if i != j
    )
    se = math.sqrt(max(a + b - (kappa - chance * (1 - kappa)) ** 2, 0) / n) / (1 - chance)
    return kappa, max(kappa - Z95 * se, -1), min(kappa + Z95 * se, 1)


VALUES = {"score": ["1", "2", "3", "4", "5"], "colour": ["red", "green", "blue"]}


def read_fixture(
    folder: Path, label: str, by: list[str]
) -> tuple[dict[str, str], dict[tuple[str, ...], dict[str, list[str]]]]:
    """The items' references (mapped as the declaration says; none for NA) and each group's
    ratings of each item, from the CSV files."""
    with (folder / f"{NAME}_gold.csv").open(encoding="utf-8") as handle:
        gold = {}
        for row in csv.DictReader(handle):
            cell = row["expert"] if label == "score" else row["colour_gold"]
            mapped = {"R": "red", "G": "green", "B": "blue"}.get(cell, cell)
            if mapped != "NA":
                gold[row["item_id"]] = mapped
    ratings: dict[tuple[str, ...], dict[str, list[str]]] = {}
    with (folder / f"{NAME}.csv").open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            key = tuple(row[a] for a in by)
            ratings.setdefault(key, {}).setdefault(row["item_id"], []).append(row[label])
    return gold, ratings


def plurality_of(given: list[str]) -> str:
    counts = Counter(given).most_common()
    return "tie" if len(counts) > 1 and counts[0][1] == counts[1][1] else counts[0][0]


def median_of(given: list[str], values: list[str]) -> str:
    return sorted(given, key=values.index)[(len(given) - 1) // 2]


def expected(folder: Path, label: str, by: list[str], crowd: str) -> dict[tuple[str, ...], Any]:
    """Per group: the figures, from the CSV files in plain Python and scikit-learn."""
    values = VALUES[label]
    gold, ratings = read_fixture(folder, label, by)
    figures = {}
    for key, items in ratings.items():
        reference, crowd_labels = [], []
        for item, given in items.items():
            if item not in gold:
                continue
            label_of = median_of(given, values) if crowd == "median" else plurality_of(given)
            reference.append(gold[item])
            crowd_labels.append(label_of)
        categories = [*values, *(["tie"] if crowd == "plurality" else [])]
        table = np.zeros((len(categories), len(categories)))
        for r, c in zip(reference, crowd_labels, strict=True):
            table[categories.index(r), categories.index(c)] += 1
        kappa, low, high = fce(table)
        one = {
            "items": len(reference),
            "ties": crowd_labels.count("tie"),
            "accuracy": float(
                np.mean([r == c for r, c in zip(reference, crowd_labels, strict=True)])
            ),
            "kappa": kappa,
            "kappa_ci_low": low,
            "kappa_ci_high": high,
            "sklearn": cohen_kappa_score(reference, crowd_labels, labels=categories),
        }
        if crowd == "median":
            for weights in ("linear", "quadratic"):
                one[f"kappa_{weights}"] = cohen_kappa_score(
                    reference, crowd_labels, labels=values, weights=weights
                )
        figures[key] = one
    return figures


CASES = [
    ("score", [], "plurality"),
    ("score", [], "median"),
    ("score", ["grp"], "median"),
    ("score", ["grp", "half"], "plurality"),
    ("colour", ["half"], "plurality"),
]


@pytest.mark.parametrize(("label", "by", "crowd"), CASES)
def test_each_figure_equals_the_independent_reference(
    folder: Path, label: str, by: list[str], crowd: str
) -> None:
    args = ["--label", label, "--crowd", crowd, *(a for b in by for a in ("--by", b))]
    rows = query(folder, *args)
    figures = expected(folder, label, by, crowd)
    assert [tuple(r[a] for a in by) for r in rows] == sorted(figures)
    for row in rows:
        want = figures[tuple(row[a] for a in by)]
        assert (row["label"], row["crowd"]) == (label, crowd)
        assert row["reference"] == ("expert" if label == "score" else "colour_gold")
        assert int(row["items"]) == want["items"] > 0
        assert row["ties"] == ("" if crowd == "median" else str(want["ties"]))
        for column in ("accuracy", "kappa", "kappa_ci_low", "kappa_ci_high"):
            assert float(row[column]) == pytest.approx(want[column], abs=1e-9), column
        assert float(row["kappa"]) == pytest.approx(want["sklearn"], abs=1e-9)
        for column in ("kappa_linear", "kappa_quadratic"):
            if crowd == "median":
                assert float(row[column]) == pytest.approx(want[column], abs=1e-9), column
            else:
                assert row[column] == ""


@pytest.mark.parametrize(("label", "by"), [("score", ["grp"]), ("colour", [])])
def test_each_items_crowd_labels_equal_plain_python(
    folder: Path, label: str, by: list[str]
) -> None:
    args = ["--label", label, *(a for b in by for a in ("--by", b))]
    result = CliRunner().invoke(
        app,
        [
            "query",
            "gold-vs-crowd-items",
            "-d",
            NAME,
            "--data",
            str(folder / "data"),
            "-f",
            "csv",
            *args,
        ],
    )
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    values = VALUES[label]
    gold, ratings = read_fixture(folder, label, by)
    assert [(tuple(r[a] for a in by), r["item_id"]) for r in rows] == sorted(
        (key, item) for key, items in ratings.items() for item in items
    )
    for row in rows:
        given = ratings[tuple(row[a] for a in by)][row["item_id"]]
        reference = gold.get(row["item_id"], "")
        plurality = plurality_of(given)
        median = median_of(given, values) if label == "score" else ""
        counts = " ".join(str(given.count(v)) for v in values)
        agrees = "" if not reference else str(plurality == reference).lower()
        median_agrees = "" if not reference or not median else str(median == reference).lower()
        assert (row["ratings"], row["counts"], row["reference"]) == (
            str(len(given)),
            counts,
            reference,
        )
        assert (row["plurality"], row["median"]) == (plurality, median)
        assert (row["plurality_agrees"], row["median_agrees"]) == (agrees, median_agrees)


def test_plurality_ties_are_counted(folder: Path) -> None:
    """The fixture has tied items, so the tie category is exercised."""
    [row] = query(folder, "--label", "colour")
    assert int(row["ties"]) > 0


def test_the_label_with_a_reference_is_the_default(folder: Path) -> None:
    assert query(folder) == query(folder, "--label", "score")


def run(data: Path, *args: str) -> Any:
    return CliRunner().invoke(app, ["query", "gold-vs-crowd", "--data", str(data), *args])


def test_a_dataset_without_a_reference_says_so(tmp_path: Path) -> None:
    data = ingest_dataset(ordinal_ratings((4, 4), 12, 6, seed=1), tmp_path, "plain_toy")
    result = run(data, "-d", "plain_toy")
    assert result.exit_code == 2
    assert result.stderr.startswith(
        "Error: Ordinal toy has no reference label (experts' gold) for its items; gold-vs-crowd "
        "compares the crowd with one (declare the item attribute that holds it: "
        '[dataset.references.ATTRIBUTE] with label = "LABEL")'
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--crowd", "median", "--label", "colour"],
            "Error: Ordinal toy's colour is nominal: its values have no order for a median; "
            "use --crowd plurality",
        ),
        (["--by", "nobody"], "Error: Ordinal toy has no rater attribute 'nobody' for --by"),
    ],
)
def test_usage_errors(folder: Path, args: list[str], message: str) -> None:
    result = run(folder / "data", "-d", NAME, *args)
    assert result.exit_code == 2
    assert result.stderr.startswith(message)


def test_a_reference_cell_off_the_scale_is_bad_data(tmp_path: Path) -> None:
    path = tmp_path / "folder"
    path.mkdir()
    ratings = ordinal_ratings((3, 3), 10, 5, seed=2)
    from tests.drivers.reference import write_reference_dataset

    write_reference_dataset(ratings, path, NAME, seed=1)
    gold = path / f"{NAME}_gold.csv"
    lines = gold.read_text(encoding="utf-8").splitlines()
    item = lines[1].split(",")[0]
    lines[1] = f"{item},9,R"
    gold.write_text("\n".join(lines) + "\n", encoding="utf-8")
    files = [str(path / f"{NAME}.csv"), str(gold), "--declaration", str(path / f"{NAME}.toml")]
    ingested = CliRunner().invoke(app, ["ingest", *files, "--data", str(tmp_path / "data")])
    assert ingested.exit_code == 0, ingested.output
    result = run(tmp_path / "data", "-d", NAME)
    assert result.exit_code == 1
    assert result.stderr.startswith(
        f"Error: item {item}'s reference label (expert) is '9': not a value of score's scale "
        '(1, 2, 3, 4, 5); map it in [dataset.references.expert] values = { "9" = VALUE }, '
        "or list it in its missing codes"
    )


def declaration(references: str, labels: str = '["score", "tox"]') -> dict[str, Any]:
    import tomllib

    return tomllib.loads(
        '[[dataset]]\nname = "d"\n[[dataset.file]]\nitem = "i"\nrater = "r"\n'
        f'labels = {labels}\nitem_attributes = ["gold"]\n'
        '[dataset.scales.score]\nkind = "ordinal"\nvalues = [1, 2, 3]\n'
        '[dataset.scales.tox]\nkind = "binary"\nvalues = ["no", "yes"]\npositive = ["yes"]\n'
        + references
    )


def test_a_reference_is_read_into_the_declaration() -> None:
    [one] = parse_declaration(
        declaration(
            '[dataset.references.gold]\nlabel = "tox"\nvalues = { n = "no", y = "yes" }\n'
            'missing = ["?"]\n'
        ),
        "x.toml",
    )
    reference = one.reference_of("tox")
    assert reference is not None and one.reference_of("score") is None
    scale = one.scales["tox"]
    assert [reference.rank_of(c, scale) for c in ("n", "y", "?", "", None)] == [0, 1] + [None] * 3
    with pytest.raises(KeyError):
        reference.rank_of("no", scale)  # a mapping, once given, reads every cell
    [plain] = parse_declaration(declaration("[dataset.references.gold]\nlabel = 'score'\n"), "x")
    rule, scale = plain.references["gold"], plain.scales["score"]
    assert [rule.rank_of(c, scale) for c in ("1", "3.0", " 2 ")] == [0, 2, 1]


@pytest.mark.parametrize(
    ("references", "message"),
    [
        (
            "[dataset.references.expert]\nlabel = 'tox'\n",
            "x.toml: dataset 'd'.references.expert names no item attribute; store the reference "
            'column as one in the file that has it: item_attributes = { expert = "COLUMN" }',
        ),
        (
            "[dataset.references.gold]\n",
            "x.toml: dataset 'd'.references.gold.label is missing; add label = \"...\"",
        ),
        (
            "[dataset.references.gold]\nlabel = 'size'\n",
            "x.toml: dataset 'd'.references.gold.label is 'size'; use one of: score, tox",
        ),
        (
            "[dataset.references.gold]\nlabel = 'tox'\nscale = 'x'\n",
            "x.toml: dataset 'd'.references.gold.scale is not a key of this table; use one of: "
            "description, label, missing, values",
        ),
        (
            "[dataset.references.gold]\nlabel = 'tox'\nvalues = { y = 'maybe' }\n",
            "x.toml: dataset 'd'.references.gold.values.y is 'maybe', not a value of tox's scale; "
            "map it onto one of: no, yes",
        ),
        (
            "[dataset.references.gold]\nlabel = 'tox'\nvalues = ['no']\n",
            "x.toml: dataset 'd'.references.gold.values is ['no']; map each cell onto the "
            'label\'s value: values = { "cell" = VALUE }',
        ),
        (
            "[dataset.references.gold]\nlabel = 'tox'\nmissing = 'NA'\n",
            "x.toml: dataset 'd'.references.gold.missing is 'NA'; "
            'write missing = [-1] or ["n/a"]',
        ),
    ],
)
def test_bad_references_name_the_key_and_the_fix(references: str, message: str) -> None:
    with pytest.raises(DeclarationError) as error:
        parse_declaration(declaration(references), "x.toml")
    assert str(error.value) == message


def test_references_that_are_not_a_table_are_refused() -> None:
    data = declaration("")
    data["dataset"][0]["references"] = 3
    with pytest.raises(DeclarationError) as error:
        parse_declaration(data, "x.toml")
    assert str(error.value) == (
        "x.toml: dataset 'd'.references is not a table; write [dataset.references.ATTRIBUTE]"
        ' with label = "LABEL"'
    )


def test_a_label_without_a_reference_names_those_with_one() -> None:
    from dices_cli.errors import UsageError
    from dices_cli.queries.reference import reference_parameters

    [one] = parse_declaration(declaration("[dataset.references.gold]\nlabel = 'score'\n"), "x")
    with pytest.raises(UsageError) as error:
        reference_parameters(one, "tox", {}, "gold-vs-crowd")
    assert str(error.value) == (
        "d's tox has no reference label; choose label from those that have one: score"
    )


def test_two_references_for_one_label_are_refused() -> None:
    data = declaration("[dataset.references.gold]\nlabel = 'tox'\n")
    data["dataset"][0]["file"][0]["item_attributes"] = ["gold", "gold2"]
    data["dataset"][0]["references"]["gold2"] = {"label": "tox"}
    with pytest.raises(DeclarationError) as error:
        parse_declaration(data, "x.toml")
    assert str(error.value) == (
        "x.toml: dataset 'd'.references.gold2.label is 'tox', which gold is a reference for "
        "already; declare one reference per label"
    )


def test_the_family_has_gold_and_offers_the_query(folder: Path) -> None:
    from dices_cli.families import FAMILIES, register
    from dices_cli.families.declaration import read_declaration

    [family] = register(read_declaration(folder / f"{NAME}.toml"))
    assert family.has_gold and {"gold-vs-crowd", "gold-vs-crowd-items"} <= set(family.queries)
    assert family.lacks("expert gold labels") == "Ordinal toy has expert gold labels"
    FAMILIES.pop(NAME)
