"""`dices report`: one self-contained HTML page of charts over the canned queries.

    context.py   what sections read (Context: the engine's sessions) and return (Section)
    sections.py  which queries each section runs and what it draws (SECTIONS, in order)
    models.py    model predictions scored by `dices evaluate`'s core, for the models section
    declared.py  the sections of a declared dataset's report (its labels, scales, groups)
    charts.py    Vega-Lite specifications of the charts
    svg.py       the charts rendered to inline SVG by vl-convert, in a process of its own
    page.py      the HTML: figures, their tables, how the report was made

The charting library (vl-convert-python, a dependency) is imported only when a chart is
drawn, so no other command pays for it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from dices_cli import __version__
from dices_cli.errors import DicesError, Option
from dices_cli.metrics import defaults

if TYPE_CHECKING:
    from dices_cli.families import Family
    from dices_cli.queries.engine import RaterSelection
    from dices_cli.report.models import ModelsRequest
    from dices_cli.store.datasets import Store

INSTALL_HINT = "charts need vl-convert-python, a dependency of dices: pip install vl-convert-python"
# The resampling behind the p-values and intervals: the same defaults as `dices query
# agreement` and `dices evaluate` (dices_cli.metrics.defaults), so a figure in the report is
# the figure the CLI gives (bench/report.py times the report with them); a reader who
# wants a quicker draft gives --permutations and --bootstrap, and the report states the
# numbers used.
PERMUTATIONS = defaults.PERMUTATIONS
BOOTSTRAP = defaults.BOOTSTRAP
# The human ceiling drawn beside the models when no baseline is asked for: one rater,
# drawn at random per conversation, scored against the rest of the crowd.
BASELINES = (1,)


def check_charts_available() -> None:
    """Refuse early, before any query, when the charting library is not installed."""
    import importlib.util

    if importlib.util.find_spec("vl_convert") is None:
        raise DicesError(INSTALL_HINT)


def build_report(
    store: Store,
    dataset: str,
    selection: RaterSelection,
    by: Sequence[str],
    command: str,
    permutations: int = PERMUTATIONS,
    seed: int = 0,
    models: ModelsRequest | None = None,
    warn: Callable[[str], None] = lambda _text: None,
    strict: bool = False,
) -> str:
    """The report over `dataset` ('350', '990' or 'all') as an HTML document.

    `selection` is the rater selection as given (resolved here); `by` are rater columns
    (the groups compared; without them the report shows race and gender and leaves out
    the sections that need chosen groups); `command` is recorded as it is given;
    `permutations` and `seed` go to the agreement query (see `agreement_options`); `models`
    is a predictions file to score (read and scored first, so that a bad file costs nothing):
    each warning about the scores (coverage, a suspected flipped polarity) is given to `warn`
    as soon as they are scored, as well as shown on the page, and with `strict` a suspected
    flipped polarity is a `DicesError` (as for `dices evaluate`), raised before any drawing.
    Where the chart renderer cannot run under this process's address-space cap, why is given
    to `warn` and each figure shows its table in place of its chart.
    Every part, the rater selection's quality scores included, reads the same version of
    each dataset (`Store.pinned`), whatever ingests replace it meanwhile.
    """
    from datetime import UTC, datetime

    from dices_cli.raters.selection import resolve
    from dices_cli.report.context import Context
    from dices_cli.report.page import Provenance, page
    from dices_cli.report.sections import SECTIONS
    from dices_cli.report.svg import Drawer

    check_charts_available()
    # One version of each dataset for the rater selection, every section, the models and the
    # provenance, however many ingests replace it meanwhile. The selection, the `by` columns
    # and the predictions file are read and checked before the drawing process starts, so
    # that their refusal costs no renderer; the Drawer then draws each section's charts
    # while the next one runs its queries (the models' scoring included).
    with store.pinned():
        selection = resolve(store, dataset, selection)
        context = Context(store, dataset, selection, list(by), permutations, seed)
        read = None
        if models is not None:  # read (and refused) before the renderer starts
            from dices_cli.report.models import read_models, score_read

            read = read_models(store, selection, models, context.datasets, context.by)
        with Drawer() as drawer:
            if read is not None:
                context.models = scored = score_read(read, store, selection)
                for note in scored.pool.warnings:
                    warn(note)
                for suspect in scored.pool.suspects:
                    if strict:
                        raise DicesError(suspect.message(), " (", Option("strict"), ")")
                    warn(suspect.message())
            sections = []
            charts = []
            for build in SECTIONS:
                section = build(context)
                if section is not None:
                    sections.append(section)
                    charts.append([drawer.draw(figure.spec) for figure in section.figures])
            svgs = [[chart.result() for chart in section_charts] for section_charts in charts]
            if drawer.not_drawn is not None:  # under an address-space cap: tables, no charts
                warn(drawer.not_drawn)
            made = Provenance(
                command=command,
                version=__version__,
                created=datetime.now(UTC).isoformat(timespec="seconds"),
                selection="; ".join(selection.description) or "all raters",
                datasets=[store.open(name).manifest for name in context.datasets],
            )
    return page(sections, svgs, made, drawer.not_drawn)


def build_declared_report(
    store: Store,
    family: Family,
    by: Sequence[str],
    command: str,
    permutations: int = PERMUTATIONS,
    seed: int = 0,
    warn: Callable[[str], None] = lambda _text: None,
) -> str:
    """The report of the declared dataset of `family` as an HTML document: its labels, and
    per label the share in its positive class and the agreement per group of the `by` rater
    attributes (without them, the first the declaration lists); `command`, `permutations`
    and `seed` as for `build_report`."""
    from datetime import UTC, datetime

    from dices_cli.report.declared import DeclaredContext, compared_attributes, declared_sections
    from dices_cli.report.page import Provenance, page
    from dices_cli.report.svg import Drawer

    check_charts_available()
    context = DeclaredContext(store, family, compared_attributes(family, by), permutations, seed)
    with store.pinned(), Drawer() as drawer:
        sections = declared_sections(context)
        charts = [[drawer.draw(figure.spec) for figure in s.figures] for s in sections]
        svgs = [[chart.result() for chart in section_charts] for section_charts in charts]
        if drawer.not_drawn is not None:
            warn(drawer.not_drawn)
        made = Provenance(
            command=command,
            version=__version__,
            created=datetime.now(UTC).isoformat(timespec="seconds"),
            selection="all raters",
            datasets=[store.open(context.dataset).manifest],
        )
    return page(sections, svgs, made, drawer.not_drawn, heading="Disaggregated ratings")


def agreement_options(
    permutations: int | None, seed: int | None, declared: bool = False
) -> tuple[int, int]:
    """The agreement section's permutations (None: `PERMUTATIONS`) and seed (None: the
    query's default), checked against the ranges the query's .sql header declares (that of
    the declared datasets' agreement when `declared`)."""
    from dices_cli.queries.catalog import declared_queries, get_query

    query = declared_queries()["agreement"] if declared else get_query("agreement")
    bound = []
    for name, value in (("permutations", permutations), ("seed", seed)):
        parameter = query.parameter(name)
        assert parameter is not None
        checked = parameter.convert(
            PERMUTATIONS if name == "permutations" and value is None else value
        )
        assert isinstance(checked, int)
        bound.append(checked)
    return bound[0], bound[1]
