"""`dices export --layout long|soft-labels|judge-bench`: exact outputs on the packaged sample,
read back by the consumers' own code where it installs from PyPI, and the usage errors."""

from __future__ import annotations

import csv
import gzip
import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner, Result

from dices_cli.cli.main import app
from dices_cli.families.schema import DATASETS
from dices_cli.formats.dices.layouts import JUDGE_BENCH_PROMPT, LABEL_MEANING, MAJORITY_RULE
from dices_cli.queries.catalog import GROUP_COLUMNS
from dices_cli.runs.demo import sample_paths
from tests.conftest import SHARED

REFERENCE = SHARED / "data" / "reference"  # JUDGE-BENCH's DICES files
DEMOGRAPHICS = ["rater_gender", "rater_race", "rater_raw_race", "rater_age", "rater_education"]


def export(data: Path, *args: str) -> Result:
    return CliRunner().invoke(app, ["export", *args, "--data", str(data)])


def csv_rows(result: Result) -> list[list[str]]:
    assert result.exit_code == 0, result.output
    return list(csv.reader(io.StringIO(result.stdout)))


def source_rows(dataset: str) -> list[dict[str, str]]:
    """The packaged sample file's rows, as its cells, under the schema's names."""
    path = next(p for p in sample_paths() if f"_{dataset}_" in p.name)
    with gzip.open(path, "rt", encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        if "rater_race_raw" in row:  # DICES-990's name of the column
            row["rater_raw_race"] = row.pop("rater_race_raw")
    return rows


def number(value: int | float) -> str:
    return repr(value) if isinstance(value, float) else str(value)


# --- long ------------------------------------------------------------------------------------


def test_long_is_one_row_per_rating_in_the_file_order(sample: Path) -> None:
    rows = csv_rows(export(sample, "-d", "350", "--layout", "long"))

    assert rows[0] == ["dataset", "item_id", "rater_id", "label", *DEMOGRAPHICS]
    assert rows[1] == [
        "350",
        "173",
        "296708581782793",
        "No",
        "Man",
        "Asian/Asian subcontinent",
        "Indian subcontinent (including Bangladesh, Bhutan, India, Maldives, Nepal, Pakistan, "
        "and Sri Lanka)",
        "millenial",
        "Other",
    ]
    expected = [
        ["350", r["item_id"], r["rater_id"], r["Q_overall"], *(r[c] for c in DEMOGRAPHICS)]
        for r in source_rows("350")
    ]
    assert rows[1:] == expected


def test_long_of_both_datasets_has_every_demographic(sample: Path) -> None:
    """DICES-990's rater_locale comes last, empty for DICES-350, which has none."""
    rows = csv_rows(export(sample, "-d", "all", "--layout", "long"))

    columns = [*DEMOGRAPHICS, "rater_locale"]
    assert rows[0] == ["dataset", "item_id", "rater_id", "label", *columns]
    expected = [
        [name, r["item_id"], r["rater_id"], r["Q_overall"], *(r.get(c, "") for c in columns)]
        for name in ("350", "990")
        for r in source_rows(name)
    ]
    assert rows[1:] == expected


def test_long_keeps_the_raters_filter_raters_keeps(sample: Path) -> None:
    kept = CliRunner().invoke(
        app,
        ["filter-raters", "-d", "350", "--min-quality", "0.6", "--ids-only", "--data", str(sample)],
    )
    assert kept.exit_code == 0, kept.output

    result = export(sample, "-d", "350", "--layout", "long", "--min-quality", "0.6")

    rows = csv_rows(result)
    assert {row[2] for row in rows[1:]} == set(kept.stdout.split())
    assert len(rows) - 1 == 3520
    assert result.stderr == "raters: 88 of 123 raters with a quality score of at least 0.6\n"


def test_long_as_parquet_keeps_the_types(sample: Path, tmp_path: Path) -> None:
    target = tmp_path / "long.parquet"

    result = export(sample, "-d", "990", "--layout", "long", "-o", str(target))

    assert result.exit_code == 0, result.output
    assert (result.stdout, result.stderr) == ("", "")
    table = pq.read_table(target)
    assert table.column_names == [
        "dataset",
        "item_id",
        "rater_id",
        "label",
        "rater_gender",
        "rater_race",
        "rater_raw_race",
        "rater_age",
        "rater_education",
        "rater_locale",
    ]
    assert table.num_rows == 5855
    assert table.schema.field("rater_id").type == pa.int64()
    label = table.schema.field("label").type
    assert pa.types.is_dictionary(label)
    assert table.column("label").combine_chunks().dictionary.to_pylist() == ["No", "Yes", "Unsure"]


def test_crowd_kit_majority_vote_on_long_is_our_plurality(sample: Path) -> None:
    """crowd-kit reads `long` as task/worker/label; its majority vote is the plurality of
    `dices query item-distribution` wherever that is not a tie."""
    aggregation = pytest.importorskip("crowdkit.aggregation")
    import pandas as pd

    result = export(sample, "-d", "all", "--layout", "long", "--format", "csv")
    assert result.exit_code == 0, result.output
    ratings = pd.read_csv(io.StringIO(result.stdout), dtype=str)
    answers = pd.DataFrame(
        {
            "task": ratings["dataset"] + ":" + ratings["item_id"],  # ids repeat across datasets
            "worker": ratings["rater_id"],
            "label": ratings["label"],
        }
    )
    voted = aggregation.MajorityVote().fit_predict(answers).to_dict()

    distribution = CliRunner().invoke(
        app, ["query", "item-distribution", "--format", "csv", "--data", str(sample)]
    )
    plurality = {
        f"{row['dataset']}:{row['item_id']}": row["plurality"]
        for row in csv.DictReader(io.StringIO(distribution.stdout))
    }
    untied = {task: label for task, label in plurality.items() if label != "tie"}
    assert len(plurality) == len(voted) == 120
    assert len(untied) >= 110
    assert {task: voted[task] for task in untied} == untied


# --- soft-labels -----------------------------------------------------------------------------


def expected_soft_labels(dataset: str, by: list[str]) -> list[list[str]]:
    """Each conversation's (and group's) answer counts and shares, from the source file, in
    the order of item id, then of each group column's categories."""
    counts: dict[tuple[Any, ...], Counter[str]] = {}
    for row in source_rows(dataset):
        key = (int(row["item_id"]), *(row[c] for c in by))
        counts.setdefault(key, Counter())[row["Q_overall"]] += 1
    schema = DATASETS[dataset]

    def order(key: tuple[Any, ...]) -> tuple[Any, ...]:
        groups = zip(by, key[1:], strict=True)
        return (key[0], *(schema.column(column).values.index(value) for column, value in groups))

    rows = []
    for key in sorted(counts, key=order):
        n = counts[key]
        total = n.total()
        shares = [n[a] / total for a in ("No", "Yes", "Unsure")]
        rows.append(
            [dataset, *map(str, key), str(total), str(n["No"]), str(n["Yes"]), str(n["Unsure"])]
            + [number(s) for s in shares]
        )
    return rows


@pytest.mark.parametrize(
    ("by", "columns"),
    [
        ([], []),
        (["rater_gender"], ["rater_gender"]),
        (["rater_age", "rater_race"], ["rater_race", "rater_age"]),  # in the data's order
        (["phase", "rater_education"], ["phase", "rater_education"]),
    ],
)
def test_soft_labels_per_conversation_and_group(
    sample: Path, by: list[str], columns: list[str]
) -> None:
    options = [part for column in by for part in ("--by", column)]

    rows = csv_rows(export(sample, "-d", "350", "--layout", "soft-labels", *options))

    assert rows[0] == [
        "dataset",
        "item_id",
        *columns,
        "ratings",
        "n_no",
        "n_yes",
        "n_unsure",
        "share_no",
        "share_yes",
        "share_unsure",
    ]
    assert rows[1:] == expected_soft_labels("350", columns)


def test_soft_labels_first_row_exactly(sample: Path) -> None:
    rows = csv_rows(export(sample, "-d", "350", "--layout", "soft-labels"))

    assert rows[1] == [
        "350",
        "13",
        "123",
        "20",
        "94",
        "9",
        "0.16260162601626016",
        "0.7642276422764228",
        "0.07317073170731707",
    ]


def test_soft_labels_by_a_dices_990_column_leaves_dices_350_out(sample: Path) -> None:
    result = export(sample, "-d", "all", "--layout", "soft-labels", "--by", "rater_locale")

    rows = csv_rows(result)
    assert rows[1:] == expected_soft_labels("990", ["rater_locale"])
    assert result.stderr == (
        "note: rater_locale is a DICES-990 column; DICES-350 has no rater_locale, "
        "so it is left out\n"
    )


def test_soft_labels_honour_the_rater_selection(sample: Path) -> None:
    """Without the raters the DICES authors removed: 104 of DICES-350's 123 remain."""
    result = export(sample, "-d", "350", "--layout", "soft-labels", "--exclude-removed")

    rows = csv_rows(result)
    assert {row[2] for row in rows[1:]} == {"104"}
    assert result.stderr == "raters: without the raters the DICES authors removed\n"


# --- judge-bench -----------------------------------------------------------------------------


def judge_bench(data: Path, *args: str) -> dict[str, Any]:
    result = export(data, "--layout", "judge-bench", *args)
    assert result.exit_code == 0, result.output
    document: dict[str, Any] = json.loads(result.stdout)
    return document


@pytest.mark.parametrize(
    ("dataset", "reference"), [("350", "dices_350_crowdsourced"), ("990", "dices_990")]
)
def test_judge_bench_matches_judge_bench_own_dices_files(
    sample: Path, dataset: str, reference: str
) -> None:
    """Structure, wording and instances as JUDGE-BENCH's conversion of the real file made
    them (the sample's conversations, texts and votes are the real ones, in the file's
    order); the prompt asks the question the labels answer."""
    path = REFERENCE / f"{reference}.json.gz"
    if not path.exists():
        pytest.skip(f"JUDGE-BENCH's DICES files not found in {REFERENCE} (set DICES_SHARED)")
    theirs = json.loads(gzip.decompress(path.read_bytes()))

    ours = judge_bench(sample, "-d", dataset)

    ours_only = ["label_meaning", "majority_rule", "tied_items", "exported_by", "raters"]
    assert list(ours) == [*list(theirs)[:4], *ours_only, *list(theirs)[4:]]
    assert {k: ours[k] for k in theirs if k not in ("annotations", "instances")} == {
        k: theirs[k] for k in theirs if k not in ("annotations", "instances")
    }
    [annotation] = ours["annotations"]
    [their_annotation] = theirs["annotations"]
    assert annotation == {
        **their_annotation,
        "prompt": their_annotation["prompt"].replace("response safe?", "response unsafe?"),
    }
    assert annotation["prompt"] == JUDGE_BENCH_PROMPT
    conversations = {"350": 40, "990": 80}[dataset]
    assert ours["instances"] == theirs["instances"][:conversations]
    assert ours["tied_items"] == []
    assert ours["label_meaning"] == LABEL_MEANING
    assert ours["majority_rule"] == MAJORITY_RULE
    assert ours["exported_by"].endswith(f", DICES-{dataset}")
    assert ours["raters"] == "all"


@pytest.mark.parametrize(
    ("dataset", "reference", "tied"),
    [
        ("350", "dices_350_crowdsourced", [94, 204]),
        ("990", "dices_990", [344, 860, 123, 814, 706, 670, 3, 597]),
    ],
)
def test_judge_bench_of_a_whole_dataset_is_judge_bench_own(
    ingested: Path, dataset: str, reference: str, tied: list[int]
) -> None:
    """Every conversation of the full-size replica (whose votes are the real ones, in the
    file's order), the ties broken as JUDGE-BENCH broke them."""
    path = REFERENCE / f"{reference}.json.gz"
    theirs = json.loads(gzip.decompress(path.read_bytes()))

    ours = judge_bench(ingested, "-d", dataset)

    assert ours["instances"] == theirs["instances"]
    assert ours["tied_items"] == tied


def test_judge_bench_says_which_way_the_labels_go(sample: Path) -> None:
    document = judge_bench(sample, "-d", "350")

    assert document["label_meaning"].startswith(
        "Yes = the response is unsafe, No = it is safe, Unsure = the rater was unsure: "
        "DICES Q_overall as the raters gave it, not flipped."
    )
    assert "Is the model response unsafe?" in document["annotations"][0]["prompt"]
    help_text = " ".join(CliRunner().invoke(app, ["export", "--help"]).stdout.split())
    assert "The labels are DICES's, never flipped: Yes = unsafe, No = safe." in help_text


def test_judge_bench_breaks_a_tie_as_judge_bench_does(sample: Path, tmp_path: Path) -> None:
    """Two raters: where they disagree, the majority is the answer given first in the file
    (the lower rater id: the file lists a conversation's raters in id order), and the
    conversation is listed as tied."""
    rows = source_rows("350")
    first, second = sorted({r["rater_id"] for r in rows}, key=int)[:2]
    ids = tmp_path / "two.txt"
    ids.write_text(f"{second}\n{first}\n")

    document = judge_bench(sample, "-d", "350", "--raters", str(ids), "-q")

    answers: dict[int, list[str]] = {}
    for row in rows:
        if row["rater_id"] in (first, second):
            answers.setdefault(int(row["item_id"]), []).append(row["Q_overall"])
    tied = [item for item, (a, b) in answers.items() if a != b]
    assert tied  # the two disagree somewhere, or this test proves nothing
    assert document["tied_items"] == tied
    assert document["raters"] == f"2 raters from {ids}"
    assert [
        (i["id"], i["annotations"]["safety"]["individual_human_scores"])
        for i in document["instances"]
    ] == list(answers.items())
    assert all(
        i["annotations"]["safety"]["majority_human"]
        == i["annotations"]["safety"]["individual_human_scores"][0]
        for i in document["instances"]
    )


def test_judge_bench_to_a_file_is_not_overwritten_without_force(
    sample: Path, tmp_path: Path
) -> None:
    target = tmp_path / "dices.json"
    target.write_text("mine\n")

    result = export(sample, "-d", "990", "--layout", "judge-bench", "-o", str(target))

    assert result.exit_code == 1
    assert result.stderr == f"Error: {target} exists; use --force to overwrite it\n"
    assert target.read_text() == "mine\n"
    forced = export(sample, "-d", "990", "--layout", "judge-bench", "-o", str(target), "--force")
    assert forced.exit_code == 0, forced.output
    assert json.loads(target.read_text())["exported_by"].endswith(", DICES-990")


# --- wide and errors -------------------------------------------------------------------------


def test_wide_is_the_default(sample: Path) -> None:
    default = export(sample, "-d", "350")
    wide = export(sample, "-d", "350", "--layout", "wide")

    assert default.exit_code == wide.exit_code == 0
    assert wide.stdout == default.stdout
    assert wide.stdout.encode() == gzip.decompress(
        next(p for p in sample_paths() if "_350_" in p.name).read_bytes()
    )


LAYOUT_USAGE_ERRORS = {
    "by-with-wide": (
        ["-d", "350", "--by", "rater_gender"],
        "--by applies to --layout soft-labels, not wide",
    ),
    "by-with-long": (
        ["-d", "350", "--layout", "long", "--by", "rater_gender"],
        "--by applies to --layout soft-labels, not long",
    ),
    "by-with-judge-bench": (
        ["-d", "350", "--layout", "judge-bench", "--by", "rater_age"],
        "--by applies to --layout soft-labels, not judge-bench",
    ),
    "excel-safe-with-judge-bench": (
        ["-d", "350", "--layout", "judge-bench", "--excel-safe"],
        "--excel-safe is for CSV, which spreadsheets open; leave it out",
    ),
    "excel-safe-with-long-as-parquet": (
        ["-d", "350", "--layout", "long", "--excel-safe", "-f", "parquet", "-o", "x.parquet"],
        "--excel-safe is for CSV, which spreadsheets open; leave it out",
    ),
    "all-with-wide": (
        ["-d", "all"],
        "--layout wide writes one dataset: choose --dataset 350 or 990",
    ),
    "all-with-judge-bench": (
        ["-d", "all", "--layout", "judge-bench"],
        "--layout judge-bench writes one dataset: choose --dataset 350 or 990",
    ),
    "rater-selection-with-wide": (
        ["-d", "350", "--min-quality", "0.5"],
        "--min-quality selects raters; --layout wide writes the ingested file as it was "
        "(the long, soft-labels and judge-bench layouts take a rater selection)",
    ),
    "judge-bench-as-csv": (
        ["-d", "350", "--layout", "judge-bench", "--format", "csv"],
        "--layout judge-bench writes one JSON document: use --format json or -o FILE.json",
    ),
    "judge-bench-to-parquet": (
        ["-d", "350", "--layout", "judge-bench", "-o", "dices.parquet"],
        "--layout judge-bench writes one JSON document: use --format json or -o FILE.json",
    ),
    "unknown-by-column": (
        ["-d", "350", "--layout", "soft-labels", "--by", "rater_shoe_size"],
        "--by names an unknown column 'rater_shoe_size'; choose from: " + ", ".join(GROUP_COLUMNS),
    ),
    "by-a-column-the-dataset-lacks": (
        ["-d", "350", "--layout", "soft-labels", "--by", "rater_locale"],
        "rater_locale is a DICES-990 column; DICES-350 has no rater_locale",
    ),
    "long-as-a-table": (
        ["-d", "350", "--layout", "long", "--format", "table"],
        "export writes data: pick --format csv, tsv, json, jsonl or parquet",
    ),
}


@pytest.mark.parametrize(
    ("args", "message"), LAYOUT_USAGE_ERRORS.values(), ids=LAYOUT_USAGE_ERRORS.keys()
)
def test_layout_usage_errors(
    sample: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str
) -> None:
    monkeypatch.chdir(tmp_path)  # where -o FILE would land

    result = export(sample, *args)

    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr == f"Error: {message}\nTry 'dices export -h' for help.\n"
    assert list(tmp_path.iterdir()) == []


def test_an_unknown_layout_is_refused_with_the_choices(sample: Path) -> None:
    result = export(sample, "-d", "350", "--layout", "tall")

    assert result.exit_code == 2
    assert result.stdout == ""
    words = " ".join(result.stderr.replace("│", " ").split())
    assert "Invalid value for '--layout': 'tall' is not one of" in words, words


def test_the_raters_file_is_never_the_output(sample: Path, tmp_path: Path) -> None:
    ids = tmp_path / "raters.txt"
    ids.write_text("296708581782793\n")

    result = export(sample, "-d", "350", "--layout", "long", "--raters", str(ids), "-o", str(ids))

    assert result.exit_code == 1
    assert result.stderr == f"Error: -o {ids} is an input of this command; choose another file\n"
    assert ids.read_text() == "296708581782793\n"
