"""`dices export`: an ingested dataset written back as the file it came from, or in a layout
other tools read (long, crowdkit, soft-labels, judge-bench)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from dices_cli.errors import Option, UsageError
from dices_cli.families.prosocial import MEMBER as PROSOCIAL  # written back as JSON Lines
from dices_cli.runs.common import Tell, check_choice, unsaid

if TYPE_CHECKING:
    from dices_cli.output import Format, Output, Stream
    from dices_cli.queries.engine import RaterSelection, Session
    from dices_cli.store.datasets import Store, StoredDataset

LAYOUTS = ("wide", "long", "crowdkit", "soft-labels", "judge-bench")
# The layouts that write one dataset, never "all".
ONE_DATASET = ("wide", "judge-bench")


def run_export(
    store: Store,
    dataset: str | None = None,
    layout: str = "wide",
    by: Sequence[str] = (),
    selection: RaterSelection | None = None,
    *,
    fmt: Format | None = None,
    output: Path | None = None,
    force: bool = False,
    excel_safe: bool = False,
    inputs: Sequence[Path] = (),
    tell: Tell = unsaid,
) -> Path | None:
    """Write `dataset` in `layout` to `output` (None: stdout) in `fmt` (None: from
    `output`'s extension, else the layout's own: CSV, or JSON for judge-bench); `excel_safe`
    defuses a CSV's formula-looking text. The long, crowdkit, soft-labels (grouped `by`) and
    judge-bench layouts are of the raters of `selection`. `output` is never one of `inputs`
    nor a stored file, and is replaced only with `force`. Returns `output`."""
    from dices_cli.raters.selection import rater_selection

    dataset = _checked(layout, dataset, by, fmt, excel_safe)
    selection = selection or rater_selection()
    _refuse_selection_for_wide(layout, selection)
    if layout != "wide":
        _write_layout(
            store, layout, dataset, by, selection, fmt, output, force, excel_safe, inputs, tell
        )
    elif dataset == PROSOCIAL:
        _write_prosocial(store.open(dataset), fmt, output, force, [*inputs, store.root])
    else:
        _write_wide(store.open(dataset), fmt, output, force, [*inputs, store.root], excel_safe)
    return output


def _checked(
    layout: str, dataset: str | None, by: Sequence[str], fmt: Format | None, excel_safe: bool
) -> str:
    """The dataset to write (the layouts that take both DICES datasets default to all of
    them), with what `layout` does not take refused."""
    from dices_cli.families import member_choices
    from dices_cli.output import Format

    check_choice("layout", layout, LAYOUTS)
    if fmt is Format.TABLE:
        raise UsageError(
            "export writes data: pick ", Option("format"), " csv, tsv, json, jsonl or parquet"
        )
    dataset = _one_dataset(layout, dataset)
    check_choice("dataset", dataset, member_choices())
    if dataset == PROSOCIAL:
        _refuse_for_prosocial(layout, excel_safe)
    if by and layout != "soft-labels":
        raise UsageError(
            Option("by"), " applies to ", Option("layout"), f" soft-labels, not {layout}"
        )
    return dataset


def _one_dataset(layout: str, dataset: str | None) -> str:
    """The dataset asked for, or all; a layout that writes one dataset is given one."""
    from dices_cli.families import grouped_members, listed

    if dataset not in (None, "all") or layout not in ONE_DATASET:
        return dataset or "all"
    if dataset is None:
        also = [PROSOCIAL] if layout == "wide" else []
        choices = listed([", ".join(grouped_members()), *also], "or")
        raise UsageError(
            Option("layout"),
            f" {layout} writes one dataset: give ",
            Option("dataset"),
            f" {choices}",
        )
    raise UsageError(
        Option("layout"),
        f" {layout} writes one dataset: choose ",
        Option("dataset"),
        f" {listed(grouped_members(), 'or')}",
    )


def _refuse_for_prosocial(layout: str, excel_safe: bool) -> None:
    """ProsocialDialog is written back as it came, wide: it has no raters to lay out."""
    from dices_cli.families import FAMILIES

    family = FAMILIES[PROSOCIAL]
    if layout != "wide":
        lacks = family.lacks("rater ids", "demographics")
        raise UsageError(f"{lacks}; ", Option("layout"), f" {layout} needs them")
    if excel_safe:
        raise UsageError(
            Option("excel_safe"), f" is for the DICES CSV; {family.title} is JSON Lines"
        )


def _refuse_selection_for_wide(layout: str, selection: RaterSelection) -> None:
    """The wide layout is the ingested file as it was: no rater selection."""
    given = [
        name
        for name, chosen in (
            ("exclude_removed", selection.exclude_removed),
            ("raters", selection.keep_ids is not None),
            ("min_quality", selection.min_quality is not None),
        )
        if chosen
    ]
    if given and layout == "wide":
        raise UsageError(
            Option(given[0]),
            " selects raters; ",
            Option("layout"),
            " wide writes the ingested file as it was (the long, soft-labels and judge-bench "
            "layouts take a rater selection)",
        )


def _excel_safe_is_for_csv() -> UsageError:
    return UsageError(Option("excel_safe"), " is for CSV, which spreadsheets open; leave it out")


def _write_wide(
    stored: StoredDataset,
    fmt: Format | None,
    output: Path | None,
    force: bool,
    inputs: list[Path],
    excel_safe: bool,
) -> None:
    """The ingested file: as it was (CSV, also on a terminal), or typed as stored."""
    from dices_cli.formats.dices.export import source_path, typed_table, write_csv
    from dices_cli.output import Format, Output

    source = source_path(stored)
    inputs = [*inputs, *([source] if source is not None else [])]
    out = Output.build(fmt or (None if output else Format.CSV), output, force, inputs)
    if out.format is Format.CSV:
        with out.open() as handle:
            write_csv(stored, handle, excel_safe)
    elif excel_safe:
        raise _excel_safe_is_for_csv()
    else:
        out.write(typed_table(stored))


def _write_prosocial(
    stored: StoredDataset, fmt: Format | None, output: Path | None, force: bool, inputs: list[Path]
) -> None:
    """ProsocialDialog goes back as the JSON Lines it came as: its lines, in their order."""
    from dices_cli.formats.prosocial.tables import write_jsonl
    from dices_cli.output import Format, Output

    inputs = [*inputs, *(Path(s["path"]) for s in stored.manifest["sources"] if s["path"])]
    out = Output.build(fmt or (None if output else Format.JSONL), output, force, inputs)
    if out.format is not Format.JSONL:
        raise UsageError(
            "ProsocialDialog is written back as JSON Lines: pick ", Option("format"), " jsonl"
        )
    with out.open() as handle:
        write_jsonl(stored, handle)


def _write_layout(
    store: Store,
    layout: str,
    dataset: str,
    by: Sequence[str],
    selection: RaterSelection,
    fmt: Format | None,
    output: Path | None,
    force: bool,
    excel_safe: bool,
    inputs: Sequence[Path],
    tell: Tell,
) -> None:
    """The long, crowdkit, soft-labels or judge-bench layout of the raters of `selection`,
    written through the one Output."""
    from dices_cli.formats.dices.export import defused, source_path
    from dices_cli.queries.engine import chosen_datasets, open_session
    from dices_cli.raters.selection import resolve

    columns = _group_columns(by)
    names = chosen_datasets(store, dataset, columns=columns)
    sources = [source_path(store.open(name)) for name in names]
    out = _layout_output(layout, fmt, output, force, [*inputs, *filter(None, sources)])
    if excel_safe and out.format.value != "csv":
        raise _excel_safe_is_for_csv()
    selection = resolve(store, dataset, selection, columns=columns)
    session = open_session(store, dataset, selection, columns=columns)
    _tell_left_out(store, dataset, names, columns, tell)
    if selection.description:
        tell(f"raters: {'; '.join(selection.description)}")
    if layout == "judge-bench":
        from dices_cli.formats.dices.layouts import judge_bench

        with out.open() as handle:
            handle.write(json.dumps(judge_bench(session), ensure_ascii=False).encode() + b"\n")
        return
    rows = _layout_rows(layout, session, columns)
    out.write(defused(rows) if excel_safe else rows)


def _group_columns(by: Sequence[str]) -> list[str]:
    """The `by` columns, each one a result can be grouped by."""
    from dices_cli.formats.dices.layouts import group_columns
    from dices_cli.queries.catalog import ParameterError, usage_error

    try:
        return group_columns(list(by))
    except ParameterError as error:
        raise usage_error(error) from None


def _layout_output(
    layout: str, fmt: Format | None, output: Path | None, force: bool, inputs: list[Path]
) -> Output:
    """Data, not a table: CSV on a terminal too (JSON for judge-bench, a JSON document)."""
    from dices_cli.output import Format, Output

    document = layout == "judge-bench"
    default = Format.JSON if document else Format.CSV
    out = Output.build(fmt or (None if output else default), output, force, inputs)
    if document and out.format is not Format.JSON:
        raise UsageError(
            Option("layout"),
            " judge-bench writes one JSON document: use ",
            Option("format"),
            " json or ",
            Option("output"),
            " FILE.json",
        )
    return out


def _tell_left_out(
    store: Store, dataset: str, names: Sequence[str], columns: Sequence[str], tell: Tell
) -> None:
    """The datasets of "all" that lack a `columns` column, each said as left out."""
    from dices_cli.families.schema import DATASETS, missing_group_column

    if dataset != "all":
        return
    for skipped in sorted(set(store.available()) - set(names)):
        tell(f"note: {missing_group_column(DATASETS[skipped], columns)}, so it is left out")


def _layout_rows(layout: str, session: Session, columns: list[str]) -> Stream:
    """The rows of the long, crowdkit or soft-labels layout."""
    from dices_cli.formats.dices.layouts import crowdkit_ratings, long_ratings, soft_labels

    if layout == "long":
        return long_ratings(session)
    if layout == "crowdkit":
        return crowdkit_ratings(session)
    return soft_labels(session, columns)
