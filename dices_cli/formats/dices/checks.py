"""Row checks on a parsed file: cell values, duplicates, and consistency across rows.

Every check is a boolean mask and a message, both Polars expressions, so a clean file of
70,000 rows is checked in one vectorised pass and only failing rows become `Problem`s.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import polars as pl

from dices_cli.families.schema import (
    ANSWER,
    ITEM_ID,
    Q_OVERALL,
    RATER_ID,
    ROW_ID,
    Column,
    Dataset,
    Entity,
    Kind,
)
from dices_cli.formats.dices.csvparse import LINE
from dices_cli.formats.dices.tables import unlisted
from dices_cli.problems import (
    MAX_KEPT_PROBLEMS,
    SHOWN_CHARS,
    SHOWN_VALUE_CHARS,
    Problem,
    ProblemType,
    Report,
    Severity,
    shortened,
)
from dices_cli.read.ids import INTEGER_PATTERN, integer_range
from dices_cli.terminal_text import printable

REASON_LIST_PATTERN = r'^\[\s*(?:"?[A-Za-z_]+"?\s*(?:,\s*"?[A-Za-z_]+"?\s*)*)?\]$'


@dataclass(frozen=True)
class Check:
    type: ProblemType
    column: str
    bad: pl.Expr  # true on the rows that have the problem
    message: pl.Expr  # a String explaining it
    severity: Severity = Severity.ERROR
    # `bad` reads the cell of `column` alone and casts it to text: a Categorical column's is
    # judged once per distinct value (`_masks`).
    per_value: bool = False


def _shortened(expr: pl.Expr) -> pl.Expr:
    expr = expr.cast(pl.String)
    shortened = pl.when(expr.str.len_chars() > SHOWN_CHARS).then(
        pl.concat_str(expr.str.slice(0, SHOWN_CHARS), pl.lit("..."))
    )
    return shortened.otherwise(expr)


def _quoted(expr: pl.Expr) -> pl.Expr:
    return pl.concat_str(pl.lit("'"), _shortened(expr), pl.lit("'"))


def _cell_checks(column: Column) -> list[Check]:
    cell = pl.col(column.name)
    empty = cell == ""
    checks = []
    if not column.nullable and column.kind is not Kind.TEXT:
        checks.append(
            Check(
                ProblemType.MISSING_VALUE,
                column.name,
                empty,
                pl.lit(f"{column.name} must not be empty"),
            )
        )
    if column.kind in (Kind.INTEGER, Kind.TIMESTAMP):
        text = cell.cast(pl.String)  # the cells may be Categorical
        looks_integer = text.str.contains(INTEGER_PATTERN)
        number = text.cast(pl.Int64, strict=False)
        low, high = integer_range(column)
        checks += [
            Check(
                ProblemType.NOT_AN_INTEGER,
                column.name,
                ~empty & ~looks_integer,
                pl.format(
                    "{} is not an integer (digits only, no leading zeros or spaces)",
                    _quoted(cell),
                ),
                per_value=True,
            ),
            Check(
                ProblemType.OUT_OF_RANGE,
                column.name,
                looks_integer & (number.is_null() | (number < low) | (number > high)),
                pl.format(
                    "{} is outside the range {}..{}", _shortened(cell), pl.lit(low), pl.lit(high)
                ),
                per_value=True,
            ),
        ]
    elif column.kind is Kind.ENUM and not column.extensible:  # see new_value_warnings()
        allowed = ", ".join(f"'{v}'" for v in column.values)
        checks.append(
            Check(
                ProblemType.NOT_IN_ENUM,
                column.name,
                ~empty & ~cell.is_in(list(column.values)),
                pl.format(
                    "{} is not an allowed value; allowed: {}", _quoted(cell), pl.lit(allowed)
                ),
            )
        )
    elif column.kind is Kind.REASON_LIST:
        checks.append(
            Check(
                ProblemType.MALFORMED_LIST,
                column.name,
                ~empty & ~cell.cast(pl.String).str.contains(REASON_LIST_PATTERN),
                pl.format('{} is not a list literal like ["a", "b"]', _quoted(cell)),
                per_value=True,
            )
        )
    return checks


def _later_occurrence(keys: list[str]) -> pl.Expr:
    present = pl.all_horizontal(pl.col(k) != "" for k in keys)
    return present & ~pl.struct(keys).is_first_distinct()


def _duplicate_checks(present: set[str]) -> list[Check]:
    checks = []
    first_line = pl.col(LINE).first()
    if ROW_ID.name in present:
        checks.append(
            Check(
                ProblemType.DUPLICATE_ID,
                ROW_ID.name,
                _later_occurrence([ROW_ID.name]),
                pl.format(
                    "id {} is already used on line {}",
                    _shortened(pl.col(ROW_ID.name)),
                    first_line.over(ROW_ID.name),
                ),
            )
        )
    keys = [RATER_ID.name, ITEM_ID.name]
    if set(keys) <= present:
        checks.append(
            Check(
                ProblemType.DUPLICATE_RATING,
                ITEM_ID.name,
                _later_occurrence(keys),
                pl.format(
                    "rater {} already rated conversation {} on line {}",
                    _shortened(pl.col(RATER_ID.name)),
                    _shortened(pl.col(ITEM_ID.name)),
                    first_line.over(keys),
                ),
            )
        )
    return checks


def _consistency_checks(dataset: Dataset, present: set[str]) -> list[Check]:
    """Per-conversation and per-rater columns must agree with the first row of their group."""
    groups = [
        (Entity.ITEM, ITEM_ID.name, ProblemType.INCONSISTENT_CONVERSATION, "conversation"),
        (Entity.RATER, RATER_ID.name, ProblemType.INCONSISTENT_RATER, "rater"),
    ]
    checks = []
    for entity, key, problem, noun in groups:
        if key not in present:
            continue
        for column in dataset.of(entity):
            if column.name == key or column.name not in present:
                continue
            first = pl.col(column.name).first().over(key)
            checks.append(
                Check(
                    problem,
                    column.name,
                    (pl.col(key) != "") & (pl.col(column.name) != first),
                    pl.format(
                        "{} {} has {} {} on line {}, but {} here",
                        pl.lit(noun),
                        _shortened(pl.col(key)),
                        pl.lit(column.name),
                        _quoted(first),
                        pl.col(LINE).first().over(key),
                        _quoted(pl.col(column.name)),
                    ),
                )
            )
    return checks


def expected_overall(sub_questions: tuple[str, ...]) -> pl.Expr:
    """Q_overall as its sub-questions imply: Yes if any is Yes, else Unsure if any, else No."""
    answers = [pl.col(q) for q in sub_questions]
    return (
        pl.when(pl.any_horizontal(a == "Yes" for a in answers))
        .then(pl.lit("Yes"))
        .when(pl.any_horizontal(a == "Unsure" for a in answers))
        .then(pl.lit("Unsure"))
        .otherwise(pl.lit("No"))
    )


def _overall_check(dataset: Dataset, present: set[str]) -> list[Check]:
    needed = (*dataset.sub_questions, Q_OVERALL.name)
    if not set(needed) <= present:
        return []
    valid = pl.all_horizontal(pl.col(q).is_in(list(ANSWER)) for q in needed)
    implied = expected_overall(dataset.sub_questions)
    return [
        Check(
            ProblemType.INCONSISTENT_OVERALL,
            Q_OVERALL.name,
            valid & (pl.col(Q_OVERALL.name) != implied),
            pl.format(
                "Q_overall is '{}' but its sub-questions imply '{}'",
                pl.col(Q_OVERALL.name),
                implied,
            ),
            severity=Severity.WARNING,
        )
    ]


def checks_for(dataset: Dataset, present: set[str]) -> list[Check]:
    cell_checks = [
        check
        for column in dataset.columns
        if column.name in present
        for check in _cell_checks(column)
    ]
    return (
        cell_checks
        + _duplicate_checks(present)
        + _consistency_checks(dataset, present)
        + _overall_check(dataset, present)
    )


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}" + ("" if number == 1 else "s")


def new_value_warnings(dataset: Dataset, frame: pl.DataFrame) -> list[Problem]:
    """One warning per value of an extensible column that the schema does not list, in
    the rows of `frame`: they are kept, such a value after the listed ones."""
    rater = pl.col(RATER_ID.name).cast(pl.String)
    raters = (
        rater.filter(rater != "").n_unique()
        if RATER_ID.name in frame.columns
        else pl.lit(None, dtype=pl.UInt32)  # the file is refused for its header anyway
    )
    columns = [c for c in dataset.columns if c.extensible and c.name in frame.columns]
    if not columns:
        return []
    holding = frame.select(unlisted(c).any().alias(c.name) for c in columns).row(0, named=True)
    problems = []
    for column in (c for c in columns if holding[c.name]):
        found = (
            frame.lazy()
            .filter(unlisted(column))
            .group_by(pl.col(column.name).cast(pl.String), maintain_order=True)  # file order
            .agg(pl.col(LINE).min(), raters.alias("raters"), pl.len().alias("rows"))
            .collect()
        )
        for value, line, rater_count, rows in found.iter_rows():
            holders = _count(rows, "row")
            if rater_count is not None:
                holders = f"{_count(rater_count, 'rater')}, {holders}"
            message = (
                f"'{printable(shortened(value))}' is not a listed {column.name} value; "
                f"kept as a new one ({holders})"
            )
            problems.append(
                Problem(ProblemType.NEW_VALUE, line, column.name, value, message, Severity.WARNING)
            )
    return problems


def incomplete_warnings(dataset: Dataset, frame: pl.DataFrame) -> list[Problem]:
    """A warning for each of conversations, raters and ratings that `frame` has fewer of
    than the published dataset: a file cut short at a record boundary is otherwise valid."""
    counted_by = {"conversations": ITEM_ID.name, "raters": RATER_ID.name}
    found = {"ratings": frame.height} | {
        noun: frame.select(pl.col(key).filter(pl.col(key) != "").n_unique()).item()
        for noun, key in counted_by.items()
        if key in frame.columns  # else the file is refused for its header
    }
    problems = []
    for noun, expected in asdict(dataset.published).items():
        if noun in found and found[noun] < expected:
            short = f"{found[noun]:,} of {expected:,} {noun}"
            message = (
                f"the file holds {found[noun]:,} of the {expected:,} {noun} of "
                f"{dataset.title}; it may be cut short"
            )
            problems.append(
                Problem(
                    ProblemType.INCOMPLETE_DATASET, None, None, short, message, Severity.WARNING
                )
            )
    return problems


def _overall_summary(_dataset: Dataset, found: list[Problem]) -> str:
    return (
        f"{len(found):,} rows have a Q_overall that disagrees with their sub-questions "
        "(kept as given)"
    )


def _new_value_summary(_dataset: Dataset, found: list[Problem]) -> str:
    # A value's own line breaks escaped too: the summary is one line per problem type.
    values = ", ".join(f"{p.column} '{printable(shortened(str(p.value)))}'" for p in found)
    return f"rater values the schema does not list, kept as new ones: {values}"


def _incomplete_summary(dataset: Dataset, found: list[Problem]) -> str:
    counts = ", ".join(str(p.value) for p in found)
    return f"the file holds fewer than the published {dataset.title}: {counts}; it may be cut short"


_SUMMARIES = {
    ProblemType.INCONSISTENT_OVERALL: _overall_summary,
    ProblemType.NEW_VALUE: _new_value_summary,
    ProblemType.INCOMPLETE_DATASET: _incomplete_summary,
}


def warning_lines(dataset: Dataset, report: Report) -> list[str]:
    """The report's warnings in one line per type, for the summary of an ingest."""
    lines = []
    for kind, summary in _SUMMARIES.items():
        if found := [p for p in report.warnings if p.type is kind]:
            lines.append(f"{summary(dataset, found)} [{kind}]")
    return lines


def _masks(frame: pl.DataFrame, checks: list[Check]) -> pl.DataFrame:
    """One Boolean column per check (named by its index): true on the rows with its problem.

    A `per_value` check of a Categorical column is judged on the column's distinct values,
    and its rows found by their value (codes, no text): rater_id and item_id hold a few
    hundred distinct ids in tens of thousands of rows, each cast to text and matched twice
    otherwise (bench/ingest.py).
    """
    masks = []
    for check in checks:
        bad = check.bad.fill_null(False)
        if check.per_value and isinstance(frame.schema[check.column], pl.Categorical):
            values = frame.select(pl.col(check.column).unique()).filter(bad)
            found = pl.col(check.column).is_in(values.get_column(check.column).implode())
            bad = found.fill_null(False)
        masks.append(bad)
    return frame.select(mask.alias(str(i)) for i, mask in enumerate(masks))


def validate_rows(dataset: Dataset, frame: pl.DataFrame, report: Report) -> pl.Series:
    """Add every problem in `frame` (cells plus LINE) to `report`; return which rows have an
    error. Only as many problems become records as the report keeps (the rest are counted),
    so a file where every cell is wrong costs no more than one where few are."""
    if frame.height == 0:
        return pl.Series("rejected", [], dtype=pl.Boolean)
    checks = checks_for(dataset, set(frame.columns))
    masks = _masks(frame, checks)
    problems: list[Problem] = []
    room = MAX_KEPT_PROBLEMS - len(report.problems)
    for i, check in enumerate(checks):
        found_count = int(masks.get_column(str(i)).sum())
        kept = min(found_count, max(room - len(problems), 0))
        report.count_not_kept(check.type, check.severity, found_count - kept)
        if not kept:
            continue
        # Messages use window functions over the whole file, so filter only afterwards.
        found = (
            frame.select(LINE, check.column, check.message.alias("_message"))
            .filter(masks.get_column(str(i)))
            .head(kept)
            .with_columns(pl.col(check.column).cast(pl.String).str.slice(0, SHOWN_VALUE_CHARS))
        )
        problems += [
            Problem(check.type, line, check.column, cell, message, check.severity)
            for line, cell, message in found.iter_rows()
        ]
    errors = [str(i) for i, check in enumerate(checks) if check.severity is Severity.ERROR]
    rejected = masks.select(pl.any_horizontal(errors) if errors else pl.lit(False)).to_series()
    problems += new_value_warnings(dataset, frame.filter(~rejected))  # the values kept
    problems.sort(key=lambda p: (p.line or 0, p.severity is Severity.WARNING))
    report.add(problems)
    return rejected.alias("rejected")
