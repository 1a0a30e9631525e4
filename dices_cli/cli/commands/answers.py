"""What `dices query NAME` and `dices sql` do with their options' values, and the helpers
every command that reads the store shares: plain functions, no Typer, so that
`dices_cli.cli.quick` answers the simplest command lines of the two without importing it
(its import and its building of the command are part of a small answer's time,
bench/startup.py). Typer's commands (`canned`, `sql`) call the same functions."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from dices_cli.cli.render import say, show
from dices_cli.errors import UsageError
from dices_cli.output import Output

if TYPE_CHECKING:
    from dices_cli.cli.focus import Focus
    from dices_cli.errors import DicesError
    from dices_cli.families import Family
    from dices_cli.output import Format, Result
    from dices_cli.queries.catalog import Chart, Query
    from dices_cli.queries.engine import RaterSelection
    from dices_cli.shape import Shape


def no_rater_selection(
    family: Family, exclude_removed: bool, raters: str | None, min_quality: float | None
) -> None:
    """A usage error (exit 2) when a rater selection option is given for `family`, a family
    whose raters cannot be chosen."""
    from dices_cli.runs.common import refuse_rater_selection

    refuse_rater_selection(family, exclude_removed or raters is not None or min_quality is not None)


def rater_selection(
    exclude_removed: bool, raters: str | None, min_quality: float | None = None
) -> RaterSelection:
    """The rater selection every query honours, from the shared options (the ids file read
    here, stdin for -)."""
    from dices_cli.runs.common import selection_of

    if raters is None:
        return selection_of(exclude_removed, min_quality=min_quality)
    if raters == "-":
        data, source = sys.stdin.buffer.read(), "stdin"
    else:
        try:
            data, source = Path(raters).read_bytes(), raters
        except OSError as error:
            from dices_cli.errors import DicesError

            raise DicesError(f"cannot read --raters {raters}: {error.strerror}") from error
    return selection_of(exclude_removed, data, source, min_quality)


def read_paths(data: Path | None, raters: str | None) -> list[Path]:
    """What a query reads, which -o must not overwrite: the data directory, --raters FILE."""
    from dices_cli.runs.common import data_dir

    return [data_dir(data), *([Path(raters)] if raters not in (None, "-") else [])]


def emit_shaped(
    result: Result,
    shape: Shape,
    fmt: Format | None,
    output: Path | None,
    title: str,
    force: bool,
    inputs: list[Path],
    chart: Chart | None = None,
    focus: Focus | None = None,
) -> None:
    """`show_shaped` to stdout or -o FILE in the format asked for (or the natural one)."""
    written = Output.build(fmt, output, force, inputs, chart=chart is not None)
    show_shaped(result, shape, written, title, chart, focus)


def show_shaped(
    result: Result,
    shape: Shape,
    output: Output,
    title: str | None = None,
    chart: Chart | None = None,
    focus: Focus | None = None,
) -> None:
    """The one place a result takes its --columns/--sort/--limit shape, then is written to
    `output` (or drawn as `chart`'s bars; a table always shows the columns of `focus`)."""
    from dices_cli.cli.focus import Focus
    from dices_cli.shape import apply

    # What a person names (--columns, --sort) is kept on screen like the command's answer.
    asked = (focus or Focus()).asking(*(shape.columns or ()), shape.sort)
    show(apply(result, shape), output, title, chart, asked)


def run_query(
    canned: Query,
    given: dict[str, Any],
    dataset: str,
    exclude_removed: bool,
    raters: str | None,
    min_quality: float | None,
    show_sql: bool,
    keep_columns: str | None,
    sort: str | None,
    limit: int | None,
    data: Path | None,
    fmt: Format | None,
    output: Path | None,
    force: bool,
) -> None:
    """Run `canned` with the values `given` to its parameters (None: not given)."""
    # One BLAS thread, as in `dices evaluate`: a compute step's matrix products are small, and
    # OpenBLAS's threads only fight for the cores (the bootstrap of a query with --by;
    # bench/queries.py). Set before numpy is imported.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

    from dices_cli.output import Format, Output
    from dices_cli.runs.canned import family_asked, run_canned
    from dices_cli.runs.common import check_dataset, data_store
    from dices_cli.shape import Shape

    shape = Shape.parse(keep_columns, sort, limit)
    if fmt is Format.CHART and canned.chart is None:  # before the work
        raise _no_chart(canned)
    inputs = read_paths(data, raters)
    store = data_store(data)  # registers the datasets declared there
    check_dataset(dataset)
    family = family_asked(canned, dataset, store)
    if family is not None:  # before --raters FILE is read
        no_rater_selection(family, exclude_removed, raters, min_quality)
    written = Output.build(fmt, output, force, inputs, chart=True)
    # A repeated option's values come as a tuple, () when not given.
    given = {k: list(v) if isinstance(v, tuple) else v for k, v in given.items()}
    selection = rater_selection(exclude_removed, raters, min_quality)
    run = run_canned(
        store,
        canned,
        given,
        dataset,
        selection,
        typed=written.format is Format.PARQUET,
        tell=say,
        show_sql=say if show_sql else None,
    )
    if run.parameters is None:  # another family's own query: no chart, no group columns
        emit_shaped(
            run.result, shape, fmt, output, canned.name, force, inputs, focus=_focus(run.query, {})
        )
        return
    chart = canned.chart.resolved(run.parameters) if canned.chart is not None else None
    focus = _focus(canned, run.parameters)
    emit_shaped(run.result, shape, fmt, output, canned.name, force, inputs, chart, focus)


def _focus(query: Query, parameters: dict[str, Any]) -> Focus:
    """What a table of the result always shows: its group columns (with their sizes) and its
    answer."""
    from dices_cli.cli.focus import Focus

    groups = tuple(query.group_columns(parameters))
    return Focus.grouped(groups, tuple(query.expanded_answer(parameters)))


def _no_chart(canned: Query) -> UsageError:
    """--format chart for a query whose header declares no chart: the ones that do."""
    from dices_cli.queries.catalog import catalog

    charted = [q.name for q in catalog().values() if q.chart is not None]
    drawn_by = f"the queries {', '.join(charted)} and " if charted else ""
    return UsageError(
        f"--format chart: {canned.name} has no chart; {drawn_by}dices evaluate draw one"
    )


def answer_sql(
    statement: str | None,
    schema: bool,
    dataset: str,
    exclude_removed: bool,
    raters: str | None,
    min_quality: float | None,
    table: list[str] | None,
    timeout: float,
    keep_columns: str | None,
    sort: str | None,
    limit: int | None,
    data: Path | None,
    fmt: Format | None,
    output: Path | None,
    force: bool,
) -> None:
    """`dices sql` with its options' values (see `dices_cli.cli.commands.sql.sql`)."""
    from dices_cli.families import FAMILIES
    from dices_cli.output import SMALL_CELLS, TEXT_FORMATS, Output
    from dices_cli.runs.common import data_store
    from dices_cli.runs.sql import run_sql
    from dices_cli.shape import Shape

    if dataset in FAMILIES:  # the library's refusal, before --raters FILE is read
        no_rater_selection(FAMILIES[dataset], exclude_removed, raters, min_quality)
    shape = Shape.parse(keep_columns, sort, limit)
    tables = [_table(spec) for spec in table or []]
    inputs = read_paths(data, raters) + [Path(f) for _, f in tables if f != "-"]
    written = Output.build(fmt, output, force, inputs)  # -o FILE checked before the work
    store = data_store(data)  # registers the datasets declared there
    selection = rater_selection(exclude_removed, raters, min_quality)
    # A small answer to a text format is written through Python: Arrow is not loaded.
    small = SMALL_CELLS if written.format in TEXT_FORMATS else None
    with run_sql(
        store,
        statement,
        dataset,
        selection,
        schema=schema,
        tables=tables,
        timeout=timeout,
        small_cells=small,
        stuck=_end,
    ) as result:
        show_shaped(result, shape, written, "sql")


def _table(spec: str) -> tuple[str, str]:
    """--table NAME=FILE as (NAME, FILE)."""
    from dices_cli.errors import UsageError

    name, equals, given = spec.partition("=")
    if not equals or not given:
        raise UsageError(f"give a table as NAME=FILE, not {spec!r}")
    return name, given


def _end(error: DicesError) -> NoReturn:
    """End the process: a query stuck in one call DuckDB cannot interrupt (run_sql's
    `stuck`, called from its timer thread) would run on for as long as the call takes."""
    import os
    import sys

    from dices_cli.output import abandon_writes

    abandon_writes()
    with contextlib.suppress(OSError):
        sys.stderr.write(f"Error: {error}\n")
        sys.stderr.flush()
    os._exit(1)
