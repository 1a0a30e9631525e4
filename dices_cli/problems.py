"""Validation problems as records, so they can be counted, tabulated and written as CSV."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from enum import StrEnum

from dices_cli.families import family_of

# Problems kept as records per file; past this, problems are only counted (by type and
# severity), so that memory is bounded by the data and not by how broken it is: a 2 MB file
# of a million one-character lines would otherwise hold a million records (700 MB).
MAX_KEPT_PROBLEMS = 100_000


class Severity(StrEnum):
    ERROR = "error"  # the row (or the file) cannot be ingested
    WARNING = "warning"  # reported, but the row is ingested unchanged


class ProblemType(StrEnum):
    EMPTY_FILE = "empty-file"
    NO_ROWS = "no-rows"
    UNKNOWN_DATASET = "unknown-dataset"
    MISSING_COLUMN = "missing-column"
    UNEXPECTED_COLUMN = "unexpected-column"
    DUPLICATE_COLUMN = "duplicate-column"
    INVALID_UTF8 = "invalid-utf8"
    NUL_CHARACTER = "nul-character"
    UNTERMINATED_QUOTE = "unterminated-quote"
    BAD_QUOTING = "bad-quoting"
    WRONG_FIELD_COUNT = "wrong-field-count"
    RECORD_TOO_LONG = "record-too-long"
    MISSING_VALUE = "missing-value"
    NOT_AN_INTEGER = "not-an-integer"
    OUT_OF_RANGE = "out-of-range"
    NOT_IN_ENUM = "not-in-enum"
    MALFORMED_LIST = "malformed-list"
    DUPLICATE_ID = "duplicate-id"
    DUPLICATE_RATING = "duplicate-rating"
    INCONSISTENT_CONVERSATION = "inconsistent-conversation"
    INCONSISTENT_RATER = "inconsistent-rater"
    INCONSISTENT_OVERALL = "inconsistent-overall"
    NEW_VALUE = "new-value"
    INCOMPLETE_DATASET = "incomplete-dataset"


class PredictionProblemType(StrEnum):
    """What a predictions file (`dices_cli.evaluate.predictions`) can hold beyond the
    problems an ingest finds too, which keep their ProblemType."""

    INVALID_JSON = "invalid-json"
    UNKNOWN_ITEM = "unknown-item"
    DUPLICATE_PREDICTION = "duplicate-prediction"
    AMBIGUOUS_LABEL = "ambiguous-label"
    NOT_A_NUMBER = "not-a-number"
    BAD_DISTRIBUTION = "bad-distribution"
    CELL_TOO_LONG = "cell-too-long"


class JsonProblemType(StrEnum):
    """What a JSON Lines dataset file (ProsocialDialog, `dices_cli.formats.prosocial`) can hold
    beyond the problems a CSV has too, which keep their ProblemType. `duplicate-key` is
    what every JSON Lines reader refuses alike (`dices_cli.read.json_lines`)."""

    INVALID_JSON = "invalid-json"
    DUPLICATE_KEY = "duplicate-key"
    MISSING_FIELD = "missing-field"
    UNEXPECTED_FIELD = "unexpected-field"
    WRONG_TYPE = "wrong-type"
    WRONG_COUNT = "wrong-count"
    UNKNOWN_SPLIT = "unknown-split"
    LABEL_MISMATCH = "label-mismatch"


# The types that are always warnings: the rows are kept as they are.
WARNING_TYPES = frozenset(
    {
        ProblemType.INCONSISTENT_OVERALL,
        ProblemType.NEW_VALUE,
        ProblemType.INCOMPLETE_DATASET,
        JsonProblemType.LABEL_MISMATCH,
    }
)


@dataclass(frozen=True)
class Problem:
    """One problem in one place. `line` is the file line where the row starts (1 = header)."""

    type: ProblemType | PredictionProblemType | JsonProblemType
    line: int | None
    column: str | None
    value: str | None
    message: str
    severity: Severity = Severity.ERROR

    def as_record(self) -> dict[str, str | int | None]:
        record = asdict(self)
        record["type"] = str(self.type)
        record["severity"] = str(self.severity)
        return record


PROBLEM_FIELDS = ("type", "severity", "line", "column", "value", "message")
SHOWN_CHARS = 60  # how much of a long value a message quotes
SHOWN_VALUE_CHARS = 1000  # how much of a long value a problem record holds


def shortened(text: str) -> str:
    """`text` for a message: its first SHOWN_CHARS characters and "..." when it is longer."""
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "..."


@dataclass
class Report:
    """What validating one file found, and how its rows were accounted for."""

    path: str
    dataset: str | None
    problems: list[Problem] = field(default_factory=list)
    rows_read: int = 0
    rows_rejected: int = 0
    not_kept: Counter[tuple[str, str]] = field(default_factory=Counter)  # (type, severity)

    def add(self, problems: Iterable[Problem]) -> None:
        """Keep `problems` as records up to MAX_KEPT_PROBLEMS; count the rest."""
        for problem in problems:
            if len(self.problems) < MAX_KEPT_PROBLEMS:
                self.problems.append(problem)
            else:
                self.not_kept[(str(problem.type), str(problem.severity))] += 1

    def count_not_kept(
        self,
        problem_type: ProblemType | PredictionProblemType | JsonProblemType,
        severity: Severity,
        count: int,
    ) -> None:
        if count:
            self.not_kept[(str(problem_type), str(severity))] += count

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity is Severity.WARNING]

    @property
    def error_count(self) -> int:
        return len(self.errors) + sum(
            n for (_, severity), n in self.not_kept.items() if severity == Severity.ERROR
        )

    @property
    def rows_valid(self) -> int:
        return self.rows_read - self.rows_rejected

    @property
    def ok(self) -> bool:
        return self.error_count == 0

    def counts(self) -> Counter[str]:
        counts = Counter(str(p.type) for p in self.problems)
        for (problem_type, _), n in self.not_kept.items():
            counts[problem_type] += n
        return counts

    def summary(self) -> str:
        counts = ", ".join(f"{n} {t}" for t, n in sorted(self.counts().items()))
        errors = self.error_count
        verdict = "valid" if self.ok else f"{errors} error" + ("s" if errors != 1 else "")
        text = f"{self.path}: {verdict}"
        if self.dataset:
            text += f" ({family_of(self.dataset).title_of(self.dataset)})"
        text += f"; {self.rows_read} rows read, {self.rows_rejected} would be rejected"
        return text + (f" [{counts}]" if counts else "")
