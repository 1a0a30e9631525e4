"""Calibration of `dices query group-disagreement` under the null: the rater demographics
shuffled across raters (tests/drivers/shuffled.py), so that no group carries information.

Goal (issue 21): each per-conversation test rejects at no more than its level: the share of
p-values <= 0.05 under its 99.9% one-sided bound (the shuffles being the repeated unit: the
conversations of one shuffle share raters); a conversation at p_adjusted <= 0.05 in no more
shuffles than Benjamini-Hochberg allows under the null (5% of them, within the 99.9%
binomial bound); no p-value of exactly 0. The unshuffled data's count of conversations at
p_adjusted <= 0.05 is shown beside, for reference.

    python bench/calibration_disagreement.py                  # replicas, 20 shuffles, 1000 draws
    python bench/calibration_disagreement.py --quick          # 1 shuffle, 50 draws, race only
    python bench/calibration_disagreement.py --shuffles 50 --by rater_race rater_gender*rater_age
    python bench/calibration_disagreement.py --data DIR --json

Builds both replicas with ../shared/data/make_replica.py (--shared-dir or $DICES_SHARED to
point elsewhere) and ingests them into a temporary directory, unless --data names a data
directory. Each shuffle is a copy of it (seeded 0, 1, ...); the query runs in this process.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _results import append

# Scripts in bench/ share their helpers: `python bench/...` puts bench/ on the path.
from ingest import REPO, add_shared_dir_argument, dices_command, generate

sys.path.insert(0, str(REPO / "tests"))  # the null every calibration test uses
from drivers.shuffled import shuffled_store

from dices_cli.metrics.defaults import PERMUTATIONS
from dices_cli.output import collect
from dices_cli.queries.catalog import get_query
from dices_cli.queries.engine import open_session
from dices_cli.store.datasets import Store

LEVEL = 0.05
BOUND = 0.999  # one-sided binomial bound on the share of p-values <= LEVEL
COLUMNS = ("rater_race", "rater_gender", "rater_age", "rater_education", "rater_gender*rater_age")
TESTS = ("exact", "chi-square", "monte-carlo")


@dataclass
class Tally:
    """One --by and dataset over the shuffles."""

    by: str
    dataset: str
    tested: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TESTS, 0))
    rejected: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TESTS, 0))
    shares: list[float] = field(default_factory=list)  # of p-values <= LEVEL, per shuffle
    adjusted_rejected: list[int] = field(default_factory=list)  # per shuffle
    zeros: int = 0
    original_adjusted_rejected: int = 0  # the unshuffled data's

    @property
    def n(self) -> int:
        return sum(self.tested.values())

    @property
    def share(self) -> float:
        return sum(self.rejected.values()) / self.n if self.n else float("nan")

    @property
    def spread(self) -> tuple[float, float]:
        """The standard deviation of the share across shuffles, and the one a binomial
        share of a shuffle's tests at level LEVEL would have. Conversations share raters,
        so a shuffle that puts raters who answer alike in one group moves many of them."""
        import statistics

        per_shuffle = self.n / len(self.shares)
        binomial = (LEVEL * (1 - LEVEL) / per_shuffle) ** 0.5
        return (statistics.stdev(self.shares) if len(self.shares) > 1 else float("nan")), binomial

    @property
    def bound(self) -> float:
        """The share of p-values <= LEVEL that tests at level LEVEL stay under BOUND of the
        time. With several shuffles, each is one observation (the unit that is repeated):
        LEVEL + t(BOUND, shuffles - 1) x their standard error. With one, a binomial bound
        over its conversations, as if they were independent (they are not: it is tighter)."""
        from scipy import stats

        if len(self.shares) > 1:
            error = self.spread[0] / len(self.shares) ** 0.5
            return LEVEL + float(stats.t(len(self.shares) - 1).ppf(BOUND)) * error
        if self.n == 0:  # nothing tested: no bound
            return float("nan")
        return float(stats.binom(self.n, LEVEL).ppf(BOUND)) / self.n

    @property
    def discoveries(self) -> tuple[int, int]:
        """Shuffles with a conversation at p_adjusted <= LEVEL, and how many of the shuffles
        may have one: under the null, Benjamini-Hochberg at LEVEL makes a discovery in at
        most LEVEL of them (its false discovery rate is then the chance of any), so the
        BOUND binomial bound over the shuffles, which are independent."""
        from scipy import stats

        shuffles = len(self.adjusted_rejected)
        allowed = int(stats.binom(shuffles, LEVEL).ppf(BOUND)) if shuffles > 1 else 0
        return sum(count > 0 for count in self.adjusted_rejected), allowed

    @property
    def holds(self) -> bool:
        found, allowed = self.discoveries
        return self.share <= self.bound and not self.zeros and found <= allowed

    def to_json(self) -> dict[str, Any]:
        return {
            "by": self.by,
            "dataset": self.dataset,
            "tested": self.n,
            "share_at_most_level": self.share,
            "share_per_shuffle": self.shares,
            "bound": self.bound,
            "by_test": {
                t: {"tested": self.tested[t], "at_most_level": self.rejected[t]} for t in TESTS
            },
            "adjusted_at_most_level_per_shuffle": self.adjusted_rejected,
            "shuffles_with_adjusted_at_most_level_allowed": self.discoveries[1],
            "zero_p_values": self.zeros,
            "original_adjusted_at_most_level": self.original_adjusted_rejected,
            "holds": self.holds,
        }


def run_query(data: Path, by: list[str], permutations: int) -> list[dict[str, Any]]:
    """`dices query group-disagreement --by ... -d all --permutations N` in this process."""
    query = get_query("group-disagreement")
    given = {"by": by, "permutations": permutations}
    parameters = {p.name: p.convert(given.get(p.name)) for p in query.parameters}
    session = open_session(Store(data), "all", columns=by)
    return collect(session.run(query, parameters)).records()


def calibrate(data: Path, columns: list[str], shuffles: int, permutations: int) -> list[Tally]:
    tallies: dict[tuple[str, str], Tally] = {}

    def tally(by: str, dataset: str) -> Tally:
        return tallies.setdefault((by, dataset), Tally(by, dataset))

    for by in columns:
        for r in run_query(data, by.split("*"), permutations):
            adjusted = r["p_adjusted"] is not None and r["p_adjusted"] <= LEVEL
            tally(by, r["dataset"]).original_adjusted_rejected += adjusted
    with tempfile.TemporaryDirectory(prefix="dices-calibration-") as temp:
        for seed in range(shuffles):
            start = time.perf_counter()
            shuffled = shuffled_store(data, Path(temp) / str(seed), seed)
            for by in columns:
                found = run_query(shuffled, by.split("*"), permutations)
                for dataset in {r["dataset"] for r in found}:
                    t = tally(by, dataset)
                    tested = [r for r in found if r["dataset"] == dataset and r["test"]]
                    for r in tested:
                        t.tested[r["test"]] += 1
                        t.rejected[r["test"]] += r["p_value"] <= LEVEL
                        t.zeros += r["p_value"] == 0
                    if tested:
                        t.shares.append(sum(r["p_value"] <= LEVEL for r in tested) / len(tested))
                    t.adjusted_rejected.append(sum(r["p_adjusted"] <= LEVEL for r in tested))
            took = time.perf_counter() - start
            print(f"shuffle {seed + 1}/{shuffles}: {took:.1f} s", file=sys.stderr)
    return list(tallies.values())


def table(tallies: list[Tally], shuffles: int, permutations: int) -> str:
    header = ["--by", "dataset", "tested", "p<=.05", "sd", "binomial sd", "bound", *TESTS]
    header += ["adj<=.05", "p=0", "orig adj", "holds"]
    lines = [header]
    for t in tallies:
        by_test = [
            f"{t.rejected[n] / t.tested[n]:.3f} ({t.tested[n]})" if t.tested[n] else "-"
            for n in TESTS
        ]
        lines.append(
            [
                t.by,
                t.dataset,
                str(t.n),
                f"{t.share:.4f}" if t.n else "-",
                f"{t.spread[0]:.4f}" if t.n else "-",
                f"{t.spread[1]:.4f}" if t.n else "-",
                f"{t.bound:.4f}" if t.n else "-",
                *by_test,
                f"{sum(t.adjusted_rejected)} in {t.discoveries[0]} (<= {t.discoveries[1]})",
                str(t.zeros),
                str(t.original_adjusted_rejected),
                ("yes" if t.holds else "NO") if t.n else "-",
            ]
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    text = ["  ".join(c.rjust(w) if i > 1 else c.ljust(w) for i, (c, w) in
                      enumerate(zip(line, widths, strict=True))) for line in lines]  # fmt: skip
    text.insert(1, "  ".join("-" * w for w in widths))
    tested = [t for t in tallies if t.n]
    verdict = ("met" if all(t.holds for t in tested) else "NOT met") if tested else "no tests"
    text += [
        "",
        f"{shuffles} shuffles of the rater demographics, {permutations} Monte Carlo draws, "
        "default --min-raters; tested: p-values over all shuffles; p<=.05: their share, per "
        "test in the test's column (tested in brackets); sd: its standard deviation across "
        "shuffles, beside a binomial one's; bound: 0.05 + the 99.9% one-sided t quantile x "
        "the standard error over the shuffles (one shuffle: the 99.9% binomial bound over its "
        "conversations); adj<=.05: conversations at p_adjusted <= 0.05, summed over shuffles, "
        "in how many shuffles (the 99.9% binomial bound of 5% of the shuffles; with one "
        "shuffle, none); orig adj: the same on the unshuffled data",
        f"goal (share <= bound, shuffles with an adjusted p <= 0.05 <= bound, no p = 0): {verdict}",
    ]
    return "\n".join(text)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--by", nargs="+", default=list(COLUMNS), help="a*b: an intersection")
    parser.add_argument("--shuffles", type=int, default=20)
    parser.add_argument("--permutations", type=int, default=PERMUTATIONS)
    parser.add_argument("--data", type=Path, help="a data directory (default: the replicas)")
    parser.add_argument(
        "--quick", action="store_true", help="smoke test: 1 shuffle, 50 draws, rater_race"
    )
    add_shared_dir_argument(parser)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    if args.quick:
        args.by, args.shuffles, args.permutations = ["rater_race"], 1, 50
    with tempfile.TemporaryDirectory(prefix="dices-bench-") as temp:
        data = args.data
        if data is None:
            directory = Path(temp)
            paths = generate(args.shared_dir, ["350", "990"], 1, directory)
            data = directory / "data"
            print("ingesting ...", file=sys.stderr)
            ingest = [*dices_command(), "ingest", *map(str, paths), "--data", str(data)]
            subprocess.run(ingest, check=True, capture_output=True)
        tallies = calibrate(data, args.by, args.shuffles, args.permutations)
    document = {
        "shuffles": args.shuffles,
        "permutations": args.permutations,
        "level": LEVEL,
        "bound": BOUND,
        "results": [t.to_json() for t in tallies],
    }
    append("calibration_disagreement", document)
    if args.json:
        print(json.dumps(document, indent=2))
    else:
        print(table(tallies, args.shuffles, args.permutations))


if __name__ == "__main__":
    main()
