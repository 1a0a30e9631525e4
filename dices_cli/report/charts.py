"""Vega-Lite specifications of the report's charts, and how their labels are cut.

A chart draws the rows it is given and computes nothing: every number comes from a canned
query (or the filter audit) and is plotted as it is. The specifications are plain data, so
a test can read what a chart shows; `dices_cli.report.svg` renders them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    pass

# Okabe & Ito's colour-blind-safe palette (https://jfly.uni-koeln.de/color/): answers keep
# their colour in every chart, safe blue, unsafe vermillion, unsure grey.
BLUE, VERMILLION, GREY = "#0072B2", "#D55E00", "#8C8C8C"
ORANGE, SKY, GREEN, PURPLE = "#E69F00", "#56B4E9", "#009E73", "#CC79A7"
CATEGORICAL = [BLUE, ORANGE, GREEN, VERMILLION, PURPLE, SKY, GREY, "#000000"]
ANSWER_COLOURS = {"No": BLUE, "Yes": VERMILLION, "Unsure": GREY}
SEQUENTIAL = "viridis"  # perceptually even and colour-blind safe
# px of a chart's plot area. Every chart, labels and two panels abreast included, stays
# within 1,150 px, so a laptop screen shows its text at full size (a wider one is shrunk).
WIDTH = 520

# A field and its title (None: no title, where the panel's header names it already).
Axis = tuple[str, str | None]

# Text large enough at 100% zoom and in print. vl-convert measures every label with the
# Liberation Sans it carries (`to_svg`); a browser draws it in the first of these it has,
# all three of the same letter widths, so what it shows is what was measured. Vega cuts no
# label (labelLimit 0): it cuts by UTF-16 code unit, inside a character beyond the BMP (an
# emoji), which vl-convert then cannot measure ("unexpected end of hex escape"); `to_svg`
# gives it labels cut to LABEL_COLUMNS, between characters.
CONFIG: dict[str, Any] = {
    "font": "'Liberation Sans', Arial, Helvetica, sans-serif",
    "title": {"fontSize": 15, "anchor": "start", "offset": 10},
    "axis": {"labelFontSize": 12, "titleFontSize": 13, "labelLimit": 0},
    "legend": {"labelFontSize": 12, "titleFontSize": 13, "labelLimit": 0},
    "header": {"labelFontSize": 13, "titleFontSize": 13, "labelLimit": 0},
    "range": {"category": CATEGORICAL},
    "view": {"stroke": "#bbb"},
}


# The widest line of a chart's label, in columns (a wide character, CJK or emoji, counts 2):
# about the 260 px that Vega's labelLimit used to allow, at 12 px (6-7 px a letter).
LABEL_COLUMNS = 40
LABEL_LINES = 2  # the lines of a `wrapped` label: each group of a chart has room for two
_JOINER = "\u200d"  # ZERO WIDTH JOINER: joins the characters either side into one
_REGIONAL_INDICATORS = range(0x1F1E6, 0x1F200)  # two of them are a flag


def _graphemes(text: str) -> Iterator[str]:
    """`text` in user-perceived characters (Unicode's extended grapheme clusters, near
    enough: Hangul jamo and prepended marks aside): a character with the combining marks,
    variation selectors, emoji modifiers, tag characters and joiners that follow it, the
    symbol a ZERO WIDTH JOINER joins to it (an emoji sequence), and a flag's pair of
    regional indicators. One at a time: a cut reads no further than it keeps."""
    import unicodedata

    cluster = ""
    # `chain`: the cluster so far is a symbol and extending characters; `joined`: a joiner
    # ends it, so a symbol next joins it (Unicode's rule GB11: 👩‍💻).
    chain = joined = False
    for character in text:
        code = ord(character)
        category = unicodedata.category(character)
        symbol = _pictographic(character)
        extends = (
            category in ("Mn", "Me")
            or 0x1F3FB <= code <= 0x1F3FF  # skin tones
            or 0xE0020 <= code <= 0xE007F  # tags (a subdivision flag)
            or character in ("\u200c", _JOINER)
        )
        flag = (  # the second of two regional indicators
            code in _REGIONAL_INDICATORS
            and len(cluster) == 1
            and ord(cluster) in _REGIONAL_INDICATORS
        )
        if cluster and (extends or category == "Mc" or flag or (joined and symbol)):
            cluster += character
            # A spacing mark (Mc), a second joiner, anything but Extend ends the chain.
            chain, joined = (
                (joined and symbol) or (chain and extends and character != _JOINER),
                chain and character == _JOINER,
            )
        else:
            if cluster:
                yield cluster
            cluster, chain, joined = character, symbol, False
    if cluster:
        yield cluster


def _pictographic(character: str) -> bool:
    """An emoji or another symbol (category So), what a ZERO WIDTH JOINER joins (Unicode's
    Extended_Pictographic, near enough); not half a flag."""
    import unicodedata

    return unicodedata.category(character) == "So" and ord(character) not in _REGIONAL_INDICATORS


def _columns(cluster: str) -> int:
    """How wide a user-perceived character is drawn: 2 for a wide one (East Asian Wide or
    Fullwidth, most emoji), a flag, or a character in emoji style (U+FE0F); else 1."""
    import unicodedata

    wide = unicodedata.east_asian_width(cluster[0]) in ("W", "F")
    return 2 if wide or ord(cluster[0]) in _REGIONAL_INDICATORS or "\ufe0f" in cluster else 1


def short(label: str, limit: int) -> str:
    """`label` cut to `limit` columns (a wide character counts 2) with an ellipsis, between
    user-perceived characters (`_graphemes`): never inside an emoji, an accented letter or
    a flag. Cut here rather than by Vega's labelLimit, which cuts inside a character beyond
    the BMP (see CONFIG) and whose search for the longest fitting text doubled a chart's
    drawing time."""
    if len(label) * 2 <= limit:  # fits whatever its characters (quick: most labels)
        return label
    if label.isascii():  # a character a column (quick)
        return label if len(label) <= limit else label[: limit - 1] + "…"
    used = end = 0  # the columns so far; where a cut goes, a column left for the ellipsis
    for cluster in _graphemes(label):
        used += _columns(cluster)
        if used > limit:
            return label[:end] + "…"
        if used < limit:
            end += len(cluster)
    return label


LINE_BREAK = "|"  # where a label `wrapped` for a multi-line axis label breaks


def label_text(value: str) -> str:
    """A chart's text value as Vega gets it: each of its first LABEL_LINES lines (split at
    LINE_BREAK) cut to LABEL_COLUMNS (`short`), an ellipsis ending the last when more
    lines follow."""
    lines = value.split(LINE_BREAK)
    kept = [short(line, LABEL_COLUMNS) for line in lines[:LABEL_LINES]]
    if len(lines) > LABEL_LINES:
        kept[-1] = short(kept[-1], LABEL_COLUMNS - 1).removesuffix("…") + "…"
    return LINE_BREAK.join(kept)


def wrapped(label: str, width: int) -> str:
    """`label` whole, in lines of about `width` characters broken between words (a word
    longer stays whole), joined by LINE_BREAK for an axis that draws each on its own line."""
    import textwrap

    return LINE_BREAK.join(
        textwrap.wrap(label, width, break_long_words=False, break_on_hyphens=False) or [label]
    )


def records(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
    """Rows as JSON-ready dicts (a Vega-Lite data source): decimals as floats, NaN as null."""
    return [
        {name: _json_ready(value) for name, value in zip(columns, row, strict=True)} for row in rows
    ]


def _json_ready(value: Any) -> Any:
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _spec(title: str, description: str, data: list[dict[str, Any]], **rest: Any) -> dict[str, Any]:
    """A top-level specification: its title, the description Vega puts in the SVG's
    aria-label, and its rows inline."""
    return {"title": title, "description": description, "data": {"values": data}, **rest}


def _facet(
    spec: dict[str, Any],
    independent: bool = True,
    wrap: str | None = None,
    **facets: str | None,
) -> dict[str, Any]:
    """`spec` drawn once per value of each facet field (`row=`, `column=`), or per value of
    `wrap` in panels two abreast, or once when none is given. Panels come in the order of
    the data; with `independent`, each keeps its own categories."""
    chosen = {direction: field for direction, field in facets.items() if field is not None}
    if not chosen and wrap is None:
        return spec
    top = {key: spec.pop(key) for key in ("title", "description", "data")}

    def header(field: str, left: bool) -> dict[str, Any]:
        return {
            "field": field,
            "type": "nominal",
            "title": None,
            "sort": list(dict.fromkeys(row[field] for row in top["data"]["values"])),
            "header": {"labelAngle": 0, "labelAlign": "left"} if left else {},
        }

    if wrap is not None:
        faceted = {**top, "facet": header(wrap, False), "columns": 2, "spec": spec}
    else:
        headers = {
            direction: header(field, direction == "row") for direction, field in chosen.items()
        }
        faceted = {**top, "facet": headers, "spec": spec}
        if "row" in chosen:
            # Each row as tall as its own groups: no gap under a row of two. Vega lays such a
            # grid out of place when a cell is missing: give every row and column a cell.
            faceted["align"] = {"row": "each", "column": "all"}
    if independent:
        faceted["resolve"] = {"scale": {"y": "independent"}}
    return faceted


def _nominal(field: str, title: str | None, **more: Any) -> dict[str, Any]:
    return {"field": field, "type": "nominal", "title": title, "sort": None, **more}


def _share(field: str, title: str, whole: bool = True, **more: Any) -> dict[str, Any]:
    """A share along an axis, in per cent: from 0 to 1 if `whole`, else around the data."""
    return {
        "field": field,
        "type": "quantitative",
        "title": title,
        "scale": {"domain": [0, 1]} if whole else {"zero": False, "nice": True},
        # No fixed precision: Vega gives the ticks as many decimals as their step needs, so
        # a narrow panel's ticks never repeat (".0%" printed "29% 29% 30% 30%").
        "axis": {"format": "~%"},
        **more,
    }


def _colours(field: str, title: str, colours: dict[str, str]) -> dict[str, Any]:
    return {
        "field": field,
        "type": "nominal",
        "title": title,
        "sort": list(colours),
        "scale": {"domain": list(colours), "range": list(colours.values())},
    }


def stacked_shares(
    title: str,
    description: str,
    data: list[dict[str, Any]],
    category: Axis,
    shares: dict[str, str],
) -> dict[str, Any]:
    """One horizontal bar per `category`, split by its answer shares (column -> answer)."""
    answers = list(shares.values())
    return _spec(
        title,
        description,
        data,
        # One row per dataset and answer (its share), then the answer's name and place in
        # the stack: a reshape, no arithmetic.
        transform=[
            {"fold": list(shares), "as": ["column", "share"]},
            {
                "lookup": "column",
                "from": {
                    "data": {
                        "values": [
                            {"column": c, "answer": a, "order": i}
                            for i, (c, a) in enumerate(shares.items())
                        ]
                    },
                    "key": "column",
                    "fields": ["answer", "order"],
                },
            },
        ],
        mark={"type": "bar"},
        width=WIDTH,
        encoding={
            "y": _nominal(*category),
            "x": _share("share", "share of ratings", stack="zero"),
            "color": _colours("answer", "Q_overall", {a: ANSWER_COLOURS[a] for a in answers}),
            "order": {"field": "order"},
        },
    )


def bars(
    title: str,
    description: str,
    data: list[dict[str, Any]],
    group: Axis,
    value: dict[str, Any],
    wrap: str | None = "panel",
    label: str | None = None,
    row: str | None = None,
    column: str | None = None,
) -> dict[str, Any]:
    """A horizontal bar per group, its length the `value` encoding, a panel per `wrap`
    value (a dataset and a demographic column, say), or per cell of a grid when `row` or
    `column` is given (each value of those fields in its own row or column). `label`: a
    field written after each bar, so that a bar of length 0 still says what it counts."""
    y = _nominal(*group)
    layer: list[dict[str, Any]] = [
        {"mark": {"type": "bar", "color": BLUE}, "encoding": {"y": y, "x": value}}
    ]
    if label is not None:
        layer.append(
            {
                "mark": {"type": "text", "align": "left", "dx": 4, "color": GREY},
                "encoding": {"y": y, "x": value, "text": {"field": label}},
            }
        )
    spec = _spec(title, description, data, width=WIDTH / 2, layer=layer)
    if row is not None or column is not None:
        return _facet(spec, row=row, column=column)
    return _facet(spec, wrap=wrap)


def count(field: str, title: str) -> dict[str, Any]:
    """A count along an axis (for `bars`)."""
    return {"field": field, "type": "quantitative", "title": title}


def share(field: str, title: str) -> dict[str, Any]:
    """A share (0 to 1, shown in per cent) along an axis (for `bars`)."""
    return _share(field, title)


def interval_dots(
    title: str,
    description: str,
    data: list[dict[str, Any]],
    group: Axis,
    value: tuple[str, str],
    interval: tuple[str, str],
    wrap: str = "panel",
) -> dict[str, Any]:
    """A point per group at `value`, with a line across its `interval` (low, high fields)."""
    y = _nominal(*group)
    layer = [
        {
            "mark": {"type": "rule", "color": BLUE, "strokeWidth": 3},
            "encoding": {
                "y": y,
                "x": _share(interval[0], value[1], whole=False),
                "x2": {"field": interval[1]},
            },
        },
        {
            "mark": {"type": "point", "filled": True, "size": 70, "color": VERMILLION},
            "encoding": {"y": y, "x": _share(*value, whole=False)},
        },
    ]
    spec = _spec(title, description, data, width=WIDTH / 2, layer=layer)
    return _facet(spec, wrap=wrap)


def estimates(
    title: str,
    description: str,
    data: list[dict[str, Any]],
    group: Axis,
    value: tuple[str, str],
    interval: tuple[str, str],
    colour: tuple[str, str],
    colours: dict[str, str],
    reference: str | None = None,
    wrap: str = "panel",
) -> dict[str, Any]:
    """A point per group at `value` (any number), with a line across its `interval` (low,
    high fields), both coloured by `colour` (value -> colour); a dashed line at the field
    `reference` (one value per panel) when given. Each panel has its own scales."""
    y = _nominal(*group)
    x = {
        "type": "quantitative",
        "scale": {"zero": False, "nice": True},
        # Vega's own tick format, whose decimals follow the ticks' step: a fixed ".2~f"
        # printed a narrow panel's ticks as "0.29 0.29 0.3 0.3".
        "axis": {"tickCount": 4},
    }
    painted = _colours(*colour, colours)
    layer: list[dict[str, Any]] = []
    if reference is not None:
        layer.append(
            {
                "mark": {"type": "rule", "color": GREY, "strokeDash": [4, 3]},
                "encoding": {"x": {**x, "field": reference, "title": value[1]}},
            }
        )
    layer += [
        {
            "mark": {"type": "rule", "strokeWidth": 3},
            "encoding": {
                "y": y,
                "x": {**x, "field": interval[0], "title": value[1]},
                "x2": {"field": interval[1]},
                "color": painted,
            },
        },
        {
            "mark": {"type": "point", "filled": True, "size": 70, "opacity": 1},
            "encoding": {
                "y": y,
                "x": {**x, "field": value[0], "title": value[1]},
                "color": painted,
            },
        },
    ]
    spec = _spec(title, description, data, width=WIDTH / 2, layer=layer)
    faceted = _facet(spec, wrap=wrap)
    faceted["resolve"] = {"scale": {"x": "independent", "y": "independent"}}
    return faceted


def heatmap(
    title: str,
    description: str,
    data: list[dict[str, Any]],
    x: tuple[str, str],
    y: tuple[str, str],
    value: tuple[str, str],
    number_format: str,
    column: str | None = "dataset",
    count: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """A cell per (x, y) coloured by `value`, which is also printed in it; with `count` (a
    field and its name, as the raters behind a share), that count too, on a second line, so
    that a figure from a few is seen as such."""
    encoding: dict[str, Any] = {"x": _nominal(*x, axis={"labelAngle": -30}), "y": _nominal(*y)}
    middle = _middle(data, value[0])
    text: dict[str, Any] = {"field": value[0], "type": "quantitative", "format": number_format}
    shown: list[dict[str, Any]] = []
    if count is not None:  # the value over "n=COUNT": Vega draws a list as lines
        field, name = count
        label = f"[format(datum[{value[0]!r}], {number_format!r}), 'n=' + datum[{field!r}]]"
        shown = [{"calculate": label, "as": "cell_text"}]
        text = {"field": "cell_text"}
        encoding["tooltip"] = [
            {"field": x[0], "title": x[1]},
            {"field": y[0], "title": y[1]},
            {"field": value[0], "title": value[1], "format": number_format},
            {"field": field, "title": name},
        ]
    layer = [
        {
            "mark": {"type": "rect", "stroke": "white"},
            "encoding": {
                **encoding,
                "color": {
                    "field": value[0],
                    "type": "quantitative",
                    "title": value[1],
                    "scale": {"scheme": SEQUENTIAL},
                    "legend": {"format": number_format},
                },
            },
        },
        {
            "mark": {"type": "text", "fontSize": 12},
            "encoding": {
                **encoding,
                "text": text,
                # Black on viridis' light (high) end, white on its dark end.
                "color": {
                    "condition": {"test": f"datum[{value[0]!r}] > {middle}", "value": "black"},
                    "value": "white",
                },
            },
        },
    ]
    height = {"step": 32 if count is None else 40}
    spec = _spec(title, description, data, layer=layer, width={"step": 64}, height=height)
    if shown:
        spec["transform"] = shown
    return _facet(spec, independent=False, column=column)


def _middle(data: list[dict[str, Any]], field: str) -> float:
    """Halfway along the colour scale, where the printed values turn from white to black."""
    values = [row[field] for row in data if row.get(field) is not None]
    return (min(values) + max(values)) / 2 if values else 0.0


def scatter(
    title: str,
    description: str,
    data: list[dict[str, Any]],
    x: tuple[str, str],
    y: tuple[str, str],
    colour: tuple[str, str],
    colours: dict[str, str],
    column: str | None = "dataset",
) -> dict[str, Any]:
    """A point per row at (x, y); colour and shape by a category (`colours`: value -> colour)."""
    spec = _spec(
        title,
        description,
        data,
        mark={"type": "point", "filled": True, "size": 26, "opacity": 0.85},
        width=WIDTH / 2 + 20,
        height=240,
        encoding={
            "x": _share(*x),
            "y": {"field": y[0], "type": "quantitative", "title": y[1]},
            "color": _colours(*colour, colours),
            "shape": {**_colours(*colour, colours), "scale": {"domain": list(colours)}},
        },
    )
    return _facet(spec, column=column)


def dumbbell(
    title: str,
    description: str,
    data: list[dict[str, Any]],
    label: Axis,
    ends: tuple[tuple[str, str], tuple[str, str]],
    x_title: str,
    wrap: str = "panel",
) -> dict[str, Any]:
    """A grey line per row between two shares, `ends` (field, legend label) low then high."""
    (low, low_label), (high, high_label) = ends
    y = _nominal(*label)
    x = _share("share", x_title)
    ends_legend = {
        "field": "end",
        "type": "nominal",
        "title": None,
        "sort": [low, high],
        "scale": {"domain": [low, high], "range": [BLUE, VERMILLION]},
        "legend": {
            "labelExpr": f"datum.label == {json.dumps(low)} ? "
            f"{json.dumps(low_label)} : {json.dumps(high_label)}"
        },
    }
    layer: list[dict[str, Any]] = [
        {
            "mark": {"type": "line", "color": GREY, "strokeWidth": 2},
            "encoding": {"y": y, "x": x, "detail": {"field": label[0]}},
        },
        {
            "mark": {"type": "point", "filled": True, "size": 70, "opacity": 1},
            "encoding": {
                "y": y,
                "x": x,
                "color": ends_legend,
                "shape": {
                    **ends_legend,
                    "scale": {"domain": [low, high], "range": ["circle", "diamond"]},
                },
            },
        },
    ]
    # One row per end of each line: a reshape, no arithmetic; one pass for both layers
    # costs half the drawing time of a layer per end.
    spec = _spec(
        title,
        description,
        data,
        transform=[{"fold": [low, high], "as": ["end", "share"]}],
        width=WIDTH / 2,
        layer=layer,
    )
    return _facet(spec, wrap=wrap)


def strips(
    title: str,
    description: str,
    data: list[dict[str, Any]],
    category: Axis,
    value: tuple[str, str],
    colour: tuple[str, str],
    colours: dict[str, str],
    threshold: float,
    column: str | None = "dataset",
) -> dict[str, Any]:
    """A tick per row along `value` (0 to 1) in one strip per `category`, coloured by
    `colour`, and a dashed line at `threshold`."""
    y = _nominal(*category)
    layer: list[dict[str, Any]] = [
        {
            "mark": {"type": "tick", "thickness": 2, "opacity": 0.8},
            "encoding": {"y": y, "x": _share(*value), "color": _colours(*colour, colours)},
        },
        {
            "mark": {"type": "rule", "strokeDash": [6, 4], "color": "black"},
            "encoding": {"x": {"datum": threshold}},
        },
    ]
    spec = _spec(title, description, data, layer=layer, width=WIDTH / 2 + 20)
    return _facet(spec, column=column)


def dots(
    title: str,
    description: str,
    data: list[dict[str, Any]],
    group: Axis,
    value: tuple[str, str],
    interval: tuple[str, str],
    marker: tuple[str, str],
    markers: dict[str, str],
    row: str | None,
    column: str | None,
) -> dict[str, Any]:
    """A point per group at `value` (any number), filled or hollow by `marker` (value ->
    "filled" or "hollow"), over a grey bar across its `interval` (low, high fields; none
    where they are null); each panel has its own scales. Group labels come `wrapped`: each
    line of one is drawn on its own line, each group given room for two."""
    axis = {"labelExpr": f"split(datum.label, '{LINE_BREAK}')"}
    y = _nominal(*group, axis=axis)
    x = {
        "type": "quantitative",
        "title": value[1],
        "scale": {"zero": False},
        # Fixed decimals: Vega's own format prints "0" for a panel of equal values.
        "axis": {"format": ".4~f", "tickCount": 3},
    }
    layer: list[dict[str, Any]] = [
        {
            "mark": {"type": "rule", "color": GREY, "strokeWidth": 6, "opacity": 0.6},
            "encoding": {"y": y, "x": {**x, "field": interval[0]}, "x2": {"field": interval[1]}},
        },
        {
            "mark": {"type": "point", "size": 70, "strokeWidth": 2, "color": BLUE, "opacity": 1},
            "encoding": {
                "y": y,
                "x": {**x, "field": value[0]},
                "fill": {
                    "field": marker[0],
                    "type": "nominal",
                    "title": marker[1],
                    "scale": {
                        "domain": list(markers),
                        "range": [
                            BLUE if kind == "filled" else "white" for kind in markers.values()
                        ],
                    },
                },
            },
        },
    ]
    spec = _spec(title, description, data, width=WIDTH / 4, height={"step": 40}, layer=layer)
    faceted = _facet(spec, row=row, column=column)
    faceted["resolve"] = {"scale": {"x": "independent", "y": "independent"}}
    return faceted


def short_labels(texts: Iterable[str], limit: int) -> dict[str, str]:
    """Each of `texts` -> its label: `short` to `limit` columns, two texts cut alike kept
    apart (`cut_apart`), so that a chart draws a bar per text, not one for both."""
    given = set(texts)
    cuts = cut_apart(given, lambda text: short(text, limit))
    return {text: cuts.get(text, text) for text in given}


def cut_apart(texts: set[str], cut: Callable[[str], str]) -> dict[str, str]:
    """The texts that `cut` changes -> their cut, two cut alike kept apart by " (2)",
    " (3)"... after the cut (never spelled as another of `texts`): distinct texts stay
    distinct."""
    cuts: dict[str, str] = {}
    taken = set(texts)
    tried: dict[str, int] = {}  # per cut, the last number tried (a thousand alike: no search)
    for text in sorted(texts):
        shortened = cut(text)
        if shortened == text:
            continue
        number = tried.get(shortened, 0)
        while (unique := shortened if number <= 1 else f"{shortened} ({number})") in taken:
            number = max(number, 1) + 1
        tried[shortened] = number
        cuts[text] = unique
        taken.add(unique)
    return cuts
