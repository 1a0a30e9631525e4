"""`dices filter-raters`: score raters, filter them, and audit what the filter does."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from dices_cli.cli.commands.answers import show_shaped
from dices_cli.cli.commands.options import (
    DICES_DATASETS,
    ColumnsOption,
    DataDir,
    LimitOption,
    OutputFile,
    OutputFormat,
    SortOption,
    registered,
)
from dices_cli.cli.render import say
from dices_cli.families import coded_members, listed
from dices_cli.output import Format, Output
from dices_cli.raters.quality import COMPONENTS, DEFAULT_MIN_QUALITY

if TYPE_CHECKING:
    from collections.abc import Sequence

    from dices_cli.raters.audit import ColumnAudit, DatasetAudit
    from dices_cli.raters.quality import RaterFilter, RaterQuality
    from dices_cli.runs.raters import RaterFilterRun
    from dices_cli.shape import Shape


def filter_raters(
    dataset: Annotated[
        str,
        typer.Option(
            "--dataset",
            "-d",
            click_type=registered("all", *coded_members()),
            help=f"Which ingested dataset(s) to score (DICES: {listed(DICES_DATASETS, 'or')}).",
        ),
    ] = "all",
    min_quality: Annotated[
        float | None,
        typer.Option(
            "--min-quality",
            metavar="Q",
            help=f"Keep raters whose quality score is at least Q (0 to 1; default "
            f"{DEFAULT_MIN_QUALITY}).",
            show_default=False,
        ),
    ] = None,
    preset: Annotated[
        Literal["authors"] | None,
        typer.Option(
            "--preset",
            help="Remove the raters the DICES authors removed instead of using the score.",
        ),
    ] = None,
    explain: Annotated[
        bool, typer.Option("--explain", help="Add a sentence per rater: what lowered the score.")
    ] = False,
    ids_only: Annotated[
        bool, typer.Option("--ids-only", help="Print the kept rater ids, one per line.")
    ] = False,
    audit_only: Annotated[
        bool,
        typer.Option(
            "--audit",
            help="Print the audit (JSON) instead of the rater table, and all of it on stderr.",
        ),
    ] = False,
    write: Annotated[
        Path | None,
        typer.Option(
            "--write",
            metavar="DIR",
            help="Write the filtered datasets to data directory DIR (use it with --data DIR).",
            file_okay=False,
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Replace datasets already in --write DIR; overwrite an existing -o FILE.",
        ),
    ] = False,
    keep_columns: ColumnsOption = None,
    sort: SortOption = None,
    limit: LimitOption = None,
    data: DataDir = None,
    fmt: OutputFormat = None,
    output: OutputFile = None,
) -> None:
    """Score every rater's quality, keep the good ones, and audit what the filter changes.

    The score (0-1) is the lowest of five signals: speed against the pool (DICES-350),
    straight-lining, consistency of Q_overall with its sub-questions, chance-corrected
    agreement with the other raters, and comprehension (Q1). docs/rater-quality.md has
    the formulas. A short summary goes to stderr (kept raters, agreement with the authors'
    list, warnings); --audit prints the whole audit: who is removed from which groups, with
    an exact test, and how many conversations change their plurality label. With --write
    the rater table is printed only when -o or --format asks for it.

    Examples:

        dices filter-raters --explain

        dices filter-raters --preset authors --write filtered/

        dices query overview --data filtered/

        dices filter-raters --min-quality 0.6 --ids-only | dices query overview --raters -

        dices filter-raters -d 350 --audit --format json
    """
    from dices_cli.cli.commands.options import dices_only
    from dices_cli.runs.common import data_store
    from dices_cli.runs.raters import run_rater_filter
    from dices_cli.shape import Shape

    dices_only(dataset, "dices filter-raters")
    shape = Shape.parse(keep_columns, sort, limit)
    _check_combination(explain, ids_only, audit_only, write, force, fmt, output)
    if ids_only:
        _shaped_ids([], shape)  # a column other than rater_id is refused before the work
    store = data_store(data)
    # Before --write writes anything. Plain ids are the same in any format.
    requested = Format.CSV if ids_only else fmt or (Format.JSON if audit_only else None)
    out = Output.build(requested, output, force, [store.root])
    run = run_rater_filter(store, dataset, min_quality, preset, write=write, force=force)
    _report(run.audits, run.rule, full=audit_only, raters=run.raters)
    for stored in run.written:
        counts = stored.manifest["counts"]
        say(
            f"wrote DICES-{stored.name}: {counts['raters']:,} raters, "
            f"{counts['ratings']:,} ratings -> {write} (use --data {write})"
        )
    if ids_only:
        _write_ids(run.kept_ids, shape, out)
    elif audit_only:
        show_shaped(run.audit_table(), shape, out)
    elif write is None or (fmt, output) != (None, None):  # --write: the table when asked
        _show_quality(run, explain, shape, out)


def _show_quality(run: RaterFilterRun, explain: bool, shape: Shape, out: Output) -> None:
    """The rater table, keeping its answer (and the explanation asked for) on screen."""
    from dices_cli.cli.focus import Focus

    answer = (*QUALITY_ANSWER, *(["explanation"] if explain else []))
    show_shaped(run.quality(explain), shape, out, "Rater quality", focus=Focus(answer=answer))


# The columns that answer "which raters are good": kept on a narrow screen with the ids.
QUALITY_ANSWER = ("score", "kept")


def _shaped_ids(ids: Sequence[object], shape: Shape) -> list[object]:
    """`ids` in `shape`, as a result whose one column is rater_id."""
    from dices_cli.output import collect, table_from_rows
    from dices_cli.shape import apply

    table = table_from_rows(["rater_id"], [(rater_id,) for rater_id in ids])
    return [row[0] for row in collect(apply(table, shape)).rows]


def _write_ids(ids: Sequence[object], shape: Shape, out: Output) -> None:
    """The kept rater ids, one a line, in `shape`."""
    lines = "".join(f"{rater_id}\n" for rater_id in _shaped_ids(ids, shape))
    with out.open() as handle:
        handle.write(lines.encode("utf-8"))


def _check_combination(
    explain: bool,
    ids_only: bool,
    audit_only: bool,
    write: Path | None,
    force: bool,
    fmt: Format | None,
    output: Path | None = None,
) -> None:
    """The options that do not go together, as usage errors."""
    from dices_cli.errors import UsageError

    if ids_only and any((explain, audit_only, fmt is not None)):
        raise UsageError("--ids-only prints plain ids; leave out --explain, --audit and --format")
    if audit_only:
        _check_audit_options(explain, fmt)
    if force and (write, output) == (None, None):
        raise UsageError("--force only applies with --write DIR or -o FILE")


def _check_audit_options(explain: bool, fmt: Format | None) -> None:
    from dices_cli.errors import UsageError

    if explain:
        raise UsageError("--explain adds to the rater table, which --audit replaces")
    if fmt not in (None, Format.JSON, Format.JSONL):
        raise UsageError("the audit is nested records: use --format json or jsonl with --audit")


def _p(value: float) -> str:
    return f"{value:.3f}" if value >= 0.001 else "< 0.001"


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _column_line(column: ColumnAudit) -> str:
    groups = ", ".join(f"{g.group} {g.removed}/{g.raters} ({g.rate:.0%})" for g in column.groups)
    test = (
        "one group, no test"
        if column.p_value is None
        else f"{column.test} exact p = {_p(column.p_value)}"
    )
    return f"  removed by {column.column}: {groups}; {test}"


def _report(
    audits: Sequence[DatasetAudit],
    rule: RaterFilter,
    full: bool,
    raters: Sequence[RaterQuality] = (),
) -> None:
    """The audit for a person on stderr: a summary, or with `full` every line of it."""
    say(f"filter: removes {rule.description}")
    for a in audits:
        for line in _audit_lines(a, [r for r in raters if r.dataset == a.dataset], full):
            say(line)
    if not full:
        say("(--audit prints the whole audit)")


def _audit_lines(a: DatasetAudit, scored: Sequence[RaterQuality], full: bool) -> list[str]:
    """One dataset's audit: what was kept, the signals scored, the authors' list, and, with
    `full`, each column's removals and the conversations that change."""
    lines = [
        f"DICES-{a.dataset}: kept {a.raters_kept:,} of {a.raters:,} raters "
        f"({a.raters_removed:,} removed) and {a.ratings_kept:,} of {a.ratings:,} ratings"
    ]
    if scored:
        lines.append(signals_line(scored, a.raters_removed == 0))
    caveat = "" if a.published_verified else " (a list from one public source, unverified)"
    lines.append(
        f"  vs the {a.published} raters the DICES authors removed{caveat}: "
        f"{a.removed_and_published} removed here too (recall {_share(a.recall)}, "
        f"precision {_share(a.precision)})"
    )
    lines += [_column_line(column) for column in a.columns if full]
    lines += [_dependence_line(column) for column in a.columns if column.depends_on_group]
    lines += [_changed_line(a)] if full else []
    if a.conversations_without_ratings:
        lines.append(
            f"  warning: {a.conversations_without_ratings} conversations are left "
            "without ratings (not counted above)"
        )
    return lines


def _changed_line(a: DatasetAudit) -> str:
    return (
        f"  conversations: {a.plurality_changed} of {a.conversations} change their "
        f"plurality label; mean total-variation distance {a.mean_tvd or 0:.4f} "
        f"(largest {a.max_tvd or 0:.4f})"
    )


def _dependence_line(column: ColumnAudit) -> str:
    assert column.p_value is not None
    return (
        f"  warning: removal is not independent of {column.column} "
        f"({column.test} exact p = {_p(column.p_value)} < 0.05): "
        f"the filter changes the pool's {column.column} mix"
    )


# What a quality signal needs from the data, said when a dataset lacks it for every rater.
SIGNAL_NEEDS = {
    "speed": "answer times",
    "agreement": "conversations rated by other raters too",
}


def signals_line(raters: Sequence[RaterQuality], none_removed: bool) -> str:
    """Which signals the score of one dataset's `raters` saw, which it could not see and why,
    and, when the filter removed no one, the lowest score (the --min-quality that would)."""
    seen = [c for c in COMPONENTS if any(r.components.get(c) is not None for r in raters)]
    unseen = [c for c in COMPONENTS if c not in seen]
    name = f"DICES-{raters[0].dataset}"
    line = f"  signals scored: {', '.join(seen)}"
    if unseen:
        missing = ", ".join(
            f"{c} ({name} has no {SIGNAL_NEEDS.get(c, 'data for it')})" for c in unseen
        )
        line += f"; the score could not see {missing}"
    if none_removed:
        lowest = min(r.score for r in raters)
        line += f"\n  no rater removed: the lowest score is {lowest:.2f}"
    return line


def register(app: typer.Typer) -> None:
    app.command(name="filter-raters")(filter_raters)
