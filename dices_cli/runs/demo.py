"""`dices demo`: ingest the shipped sample into a directory it keeps and return the tour's
sections, each named so that the command line can suggest the command that shows it.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from dices_cli.errors import DatasetExistsError
from dices_cli.families.schema import DATASETS, SCORED_BY_DEFAULT
from dices_cli.formats.ingest import ingest
from dices_cli.output import Table, collect, table_from_rows
from dices_cli.queries.catalog import get_query
from dices_cli.queries.engine import open_session
from dices_cli.store.datasets import Store, inventory

SAMPLE_FILES = ("dices_350_sample.csv.gz", "dices_990_sample.csv.gz")
MOST_CONTESTED = 5


@dataclass(frozen=True)
class Section:
    name: str  # which command shows this on the user's own data (the CLI words it)
    title: str
    explanation: str
    table: Table


def sample_paths() -> list[Path]:
    root = resources.files("dices_cli") / "data"
    return [Path(str(root / name)) for name in SAMPLE_FILES]


def _query(store: Store, name: str, dataset: str = "all", **given: Any) -> Table:
    query = get_query(name)
    parameters = {p.name: p.convert(given.get(p.name)) for p in query.parameters}
    return collect(open_session(store, dataset, needs=query.datasets).run(query, parameters))


def _summary(store: Store) -> Table:
    shown = ("dataset", "conversations", "raters", "ratings", "rows_rejected", "source")
    return table_from_rows(shown, [tuple(r[k] for k in shown) for r in inventory(store)])


def _project(
    table: Table, columns: tuple[str, ...], rows: list[tuple[Any, ...]] | None = None
) -> Table:
    positions = [table.columns.index(c) for c in columns]
    chosen = table.rows if rows is None else rows
    return table_from_rows(columns, [tuple(row[i] for i in positions) for row in chosen])


def _most_contested(store: Store) -> Table:
    items = _query(store, "item-distribution")
    entropy = items.columns.index("entropy_bits")
    rows = sorted(items.rows, key=lambda row: -row[entropy])[:MOST_CONTESTED]
    columns = ("dataset", "item_id", "n_no", "n_yes", "n_unsure", "entropy_bits")
    return _project(items, columns, rows)


def _check_only_the_sample(store: Store) -> None:
    """Refuse a directory holding a dataset ingested from anything but the sample: the
    demo replaces its own earlier run, never someone's data."""
    for name in DATASETS:
        if store.exists(name):
            source = store.open(name).manifest["source"]["name"]
            if source not in SAMPLE_FILES:
                raise DatasetExistsError(
                    f"{store.root} holds DICES-{name} ingested from {source}, not the demo "
                    "sample; give the demo another directory"
                )


def tour(workdir: Path) -> list[Section]:
    """Ingest the sample into `workdir` (replacing an earlier demo's) and return the tour's
    sections."""
    store = Store(workdir)
    _check_only_the_sample(store)
    ingest(sample_paths(), store, force=True)
    return [
        Section(
            "ingested",
            "What was ingested",
            "Both sample files were validated and split into typed Parquet tables.",
            _summary(store),
        ),
        Section(
            "overview",
            "How raters answered Q_overall (Yes = the last response is unsafe)",
            "Each rating is one rater's verdict on one conversation.",
            _query(store, "overview"),
        ),
        Section(
            "by-age",
            "Do age groups see safety differently?",
            "Share of Yes per group with a 95% interval (raters and conversations resampled).",
            _project(
                _query(store, "qoverall-by-demographic", by=["rater_age"]),
                (
                    "dataset",
                    "rater_age",
                    "raters",
                    "share_yes",
                    "share_yes_ci_low",
                    "share_yes_ci_high",
                ),
            ),
        ),
        Section(
            "gold",
            "Does the crowd agree with the experts? (DICES-350 has gold labels)",
            "Crowd label = plurality of Q_overall; 'tie' when Yes is tied for the most, "
            "'No=Unsure' when No and Unsure are (not unsafe).",
            _query(store, "gold-vs-crowd"),
        ),
        Section(
            "contested",
            f"The {MOST_CONTESTED} most contested conversations",
            "Entropy of the No/Yes/Unsure split, in bits (0 = unanimous, 1.585 at most).",
            _most_contested(store),
        ),
        Section(
            "evaluate",
            "Scoring a safety judge (DICES-350 sample)",
            "Two toy judges: five sample raters' plurality and its flipped copy (Yes read as "
            "safe); 95% intervals. A kappa below 0 over its whole interval flags "
            "a flipped polarity.",
            _evaluation(store),
        ),
        Section(
            "judge",
            "Running a judge, then scoring it (offline baselines)",
            "dices judge asks a model about every conversation (on any OpenAI-compatible "
            "server); the baselines need none. Its predictions go straight into evaluate.",
            _judged(store),
        ),
    ]


def _judged(store: Store) -> Table:
    """`dices judge` with each offline baseline on the DICES-350 sample, then evaluate."""
    import tempfile

    from dices_cli.evaluate.evaluation import Settings as EvaluateSettings
    from dices_cli.evaluate.evaluation import evaluate
    from dices_cli.evaluate.predictions import read_predictions
    from dices_cli.evaluate.references import load_votes
    from dices_cli.judge.plan import BASELINE_PREFIX, BASELINES
    from dices_cli.judge.plan import Settings as JudgeSettings
    from dices_cli.judge.prompts import DEFAULT_PROMPT, load_prompt
    from dices_cli.judge.run import judge
    from dices_cli.output import Format, write_table

    prompt = load_prompt(DEFAULT_PROMPT)
    judged = [
        judge(store, JudgeSettings(BASELINE_PREFIX + kind, prompt, seed=1), None).table
        for kind in BASELINES
    ]
    table = table_from_rows(judged[0].columns, [row for t in judged for row in t.rows])
    votes = load_votes(open_session(store, SCORED_BY_DEFAULT), [])
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "judge.csv"
        with path.open("wb") as handle:
            write_table(table, Format.CSV, handle)
        predictions = read_predictions(str(path), votes.item_ids.tolist())
    result = evaluate(votes, predictions, EvaluateSettings(against=("gold",))).table
    return _project(result, ("model", "reference", "n", "accuracy", "kappa", "roc_auc"))


def demo_predictions_path() -> Path:
    return Path(str(resources.files("dices_cli") / "data" / "demo-predictions.csv"))


def _evaluation(store: Store) -> Table:
    from dices_cli.evaluate.evaluation import Settings, evaluate
    from dices_cli.evaluate.predictions import read_predictions
    from dices_cli.evaluate.references import load_votes

    votes = load_votes(open_session(store, SCORED_BY_DEFAULT), [])
    predictions = read_predictions(str(demo_predictions_path()), votes.item_ids.tolist())
    table = evaluate(votes, predictions, Settings(against=("gold", "crowd"))).table
    shown = ("model", "reference", "n", "accuracy", "kappa", "kappa_low", "kappa_high")
    return _project(table, (*shown, "polarity_suspect"))
