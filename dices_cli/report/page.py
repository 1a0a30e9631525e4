"""The report as one HTML page: sections of figures, their tables, and how it was made.

Self-contained by construction: the charts are inline SVG, the style is inline, there is no
script, font, image or link to fetch, and a Content-Security-Policy forbids the browser to
load anything should one ever slip in.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from dices_cli.output import Table
from dices_cli.report.context import Section
from dices_cli.terminal_text import printable

OPEN_TABLE_ROWS = 12  # a longer table starts folded, so the page stays readable
# Nothing may be loaded: styles only from the page itself, images only as data.
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

STYLE = """
:root { color-scheme: light; }
body { font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
       color: #1a1a1a; margin: 0 auto; max-width: 1200px; padding: 1.5rem 2rem 4rem; }
h1 { font-size: 1.9rem; margin: 0 0 .25rem; }
h2 { font-size: 1.4rem; border-bottom: 2px solid #1a1a1a; padding-bottom: .2rem;
     margin-top: 2.5rem; }
nav ol { columns: 2; padding-left: 1.2rem; }
a { color: #0060a0; }
figure { margin: 1.5rem 0 2rem; break-inside: avoid; }
.chart svg { max-width: 100%; height: auto; display: block; }
figcaption { margin: .5rem 0; max-width: 60rem; }
figcaption .read { display: block; color: #555; }
details { margin: .5rem 0 1rem; }
summary { cursor: pointer; color: #0060a0; }
.table { overflow-x: auto; }
table { border-collapse: collapse; font-size: .85rem; margin: .5rem 0; }
caption { text-align: left; font-weight: 600; padding: .3rem 0; }
th, td { border-bottom: 1px solid #d0d0d0; padding: .15rem .6rem; text-align: left;
         vertical-align: top; }
td.number { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td:first-child { white-space: nowrap; }
.note { background: #fff6e0; border-left: 4px solid #e69f00; padding: .4rem .8rem; }
.warning { background: #fde6dc; border: 2px solid #D55E00; border-left-width: 8px;
           padding: .6rem .9rem; margin: 1rem 0; font-weight: 600; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; }
dt { font-weight: 600; }
code, .hash { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: .85rem;
              overflow-wrap: anywhere; }
@page { size: A4 landscape; margin: 12mm; }  /* the widest charts at nearly full size */
@media print {
  body { max-width: none; padding: 0; font-size: 11pt; }
  nav, summary { display: none; }
  h2 { break-before: auto; break-after: avoid; }
  .table { break-inside: avoid; }
  a { color: inherit; text-decoration: none; }
}
"""


@dataclass(frozen=True)
class Provenance:
    """How the report was made, printed at its end."""

    command: str
    version: str
    created: str  # ISO 8601, UTC
    selection: str
    datasets: list[dict[str, Any]]  # each dataset's manifest


def _escaped(text: str) -> str:
    """`text` as HTML: markup escaped, and each control character (which a browser shows
    as nothing, or cannot be given at all: a lone surrogate) written visibly (`printable`);
    line breaks are kept."""
    return html.escape("\n".join(map(printable, text.split("\n"))))


def _isolated(text: str) -> str:
    """`text` from outside (`_escaped`) in a bidirectional run of its own (<bdi>): the
    letters of a right-to-left script in it cannot reorder the text around it, nor it."""
    return f"<bdi>{_escaped(text)}</bdi>"


def _cell(value: Any) -> tuple[str, bool]:
    """A value as table text (rounded for people) and whether it is a number."""
    if value is None:
        return "", False
    if isinstance(value, bool):
        return ("yes" if value else "no"), False
    if isinstance(value, Decimal) and isinstance(exponent := value.as_tuple().exponent, int):
        # DuckDB sums integers into a HUGEINT, which comes as a Decimal with no fraction: a
        # count (the gold-vs-crowd summary's conversations showed as 350.000).
        value = int(value) if exponent >= 0 else value
    if isinstance(value, int):
        return f"{value:,}", True
    if isinstance(value, float | Decimal):
        # Four significant digits below 0.1, so that a p-value of 0.04995 (50 of 1,001
        # relabellings) drawn under a "p < 0.05" legend does not read 0.050 in its table.
        if 0 < abs(float(value)) < 0.1:
            return f"{value:.4g}", True
        return f"{value:,.3f}", True
    if isinstance(value, list | tuple):
        return ", ".join(map(str, value)), False
    return str(value), False


def table_html(table: Table, caption: str | None = None) -> str:
    # A long column name may break after each _ (never inside a word), so that a table of
    # many columns fits the page rather than cutting its last header.
    head = "".join(
        f"<th scope=col>{_escaped(c).replace('_', '_<wbr>')}</th>" for c in table.columns
    )
    body = []
    for row in table.rows:
        cells = []
        for value in row:
            text, number = _cell(value)
            cells.append(f"<td{' class=number' if number else ''}>{_escaped(text)}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    title = f"<caption>{_escaped(caption)}</caption>" if caption else ""
    return (
        f'<div class="table"><table>{title}<thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def _folded(table: Table, summary: str, opened: bool = False) -> str:
    """The table under its `summary`, folded when long unless `opened`."""
    state = " open" if opened or len(table.rows) <= OPEN_TABLE_ROWS else ""
    rows = f"{len(table.rows):,} row{'s' if len(table.rows) != 1 else ''}"
    return (
        f"<details{state}><summary>{_escaped(summary)} ({rows})</summary>"
        f"{table_html(table)}</details>"
    )


# In vl-convert's SVG, text (labels, and aria-label attributes) has its < and " escaped, so a
# tag is `<` up to the next `>`, and an attribute's value runs to the next `"`.
_TAG = re.compile(r"<[^>]*>")
_ATTRIBUTE = re.compile(r'(\s)([\w:.-]+)="([^"]*)"')
_URL = re.compile(r"url\(#([^)]+)\)")
# The presentation attributes that refer to another element as url(#id).
_REFERRING = frozenset(
    ("fill", "stroke", "clip-path", "mask", "filter", "marker-start", "marker-mid", "marker-end")
)


def _scoped(svg: str, prefix: str) -> str:
    """`svg` with its element ids (gradients, clips) and the references to them prefixed, so
    that the charts inlined in one page cannot take each other's. Only attributes of tags
    are changed: a label that reads `url(#x)` or `id="x"` is drawn as it is."""

    def attribute(match: re.Match[str]) -> str:
        space, name, value = match.groups()
        if name == "id":
            value = f"{prefix}-{value}"
        elif name in ("href", "xlink:href") and value.startswith("#"):
            value = f"#{prefix}-{value[1:]}"
        elif name in _REFERRING:
            value = _URL.sub(lambda url: f"url(#{prefix}-{url[1]})", value)
        return f'{space}{name}="{value}"'

    return _TAG.sub(lambda tag: _ATTRIBUTE.sub(attribute, tag[0]), svg)


# In place of a chart the renderer could not draw (see the note atop the page).
NOT_DRAWN = "Chart not drawn (see the note at the top of the page): its numbers are below."


def section_html(section: Section, svgs: Sequence[str | None], first_figure: int) -> str:
    """The section, each figure drawn from its SVG, or as its table alone where None."""
    parts = [f'<section id="{section.key}"><h2>{_escaped(section.title)}</h2>']
    parts += [_warning(text) for text in section.warnings]
    parts += [f'<p class="note">{_escaped(note)}</p>' for note in section.notes]
    for number, (figure, svg) in enumerate(zip(section.figures, svgs, strict=True), first_figure):
        key = f"figure-{number}"
        title = _escaped(str(figure.spec["title"]))
        description = _escaped(str(figure.spec["description"]))
        chart = (
            f'<div class="chart" role="img" aria-label="{title}: {description}" '
            f'aria-describedby="{key}-read">{_scoped(svg, key)}</div>'
            if svg is not None
            else f'<p class="note">{NOT_DRAWN}</p>'
        )
        numbers = f"Numbers behind figure {number}"
        parts.append(
            f'<figure id="{key}">{chart}'
            f"<figcaption><strong>Figure {number}. {title}.</strong> "
            f'<span class="read" id="{key}-read">How to read it: '
            f"{_escaped(figure.how_to_read)}</span></figcaption>"
            f"{_folded(figure.table, numbers, opened=svg is None)}</figure>"
        )
    parts += [table_html(table, caption) for caption, table in section.tables]
    parts.append("</section>")
    return "".join(parts)


def _warning(text: str, link: str | None = None) -> str:
    more = f' <a href="#{link}">See the section.</a>' if link else ""
    return f'<p class="warning" role="alert">Warning: {_escaped(text)}{more}</p>'


def provenance_html(made: Provenance) -> str:
    """How the report was made. Each text from outside (an argument of the command, a file
    name, the rater selection) is `_isolated`: escaped, and in a bidirectional run of its own."""
    import shlex

    # The command is shlex-joined: each argument back on its own, quoted as it was.
    command = " ".join(_isolated(shlex.quote(part)) for part in shlex.split(made.command))
    facts = [
        ("Command", f"<code>{command}</code>"),
        ("dices version", _escaped(made.version)),
        ("Created", _escaped(made.created)),
        ("Raters", _isolated(made.selection)),
    ]
    # What a dataset counts: DICES's conversations, a declared dataset's items.
    unit = "items" if any("items" in m["counts"] for m in made.datasets) else "conversations"
    rows = []
    for manifest in made.datasets:
        files = manifest.get("files", {})
        stored = "<br>".join(
            f"{_isolated(name)}: <span class=hash>{_escaped(record['sha256'])}</span>"
            for name, record in files.items()
        )
        counts = manifest["counts"]
        filtered = (manifest.get("filter") or {}).get("description", "")
        rows.append(
            f"<tr><td>{_escaped(manifest['title'])}</td><td>{_sources_html(manifest)}</td>"
            f"<td class=number>{counts[unit]:,}</td>"
            f"<td class=number>{counts['raters']:,}</td>"
            f"<td class=number>{counts['ratings']:,}</td>"
            f"<td>{_escaped(manifest['created'])}</td><td>{_isolated(filtered)}</td>"
            f"<td>{stored}</td></tr>"
        )
    head = "".join(
        f"<th scope=col>{name}</th>"
        for name in (
            "dataset",
            "source file",
            unit,
            "raters",
            "ratings",
            "ingested",
            "filter",
            "stored files",
        )
    )
    return (
        '<section id="provenance"><h2>How this report was made</h2><dl>'
        + "".join(f"<dt>{name}</dt><dd>{value}</dd>" for name, value in facts)
        + "</dl><table><caption>Datasets, from their manifests (counts before rater "
        f"selection)</caption><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody>"
        "</table></section>"
    )


def _sources_html(manifest: dict[str, Any]) -> str:
    """The files a dataset was ingested from, each with its checksum: DICES's one `source`,
    or a declared dataset's `sources`."""
    sources = manifest["sources"] if "sources" in manifest else [manifest["source"]]
    return "<br>".join(
        f"{_isolated(source['name'])}<br>"
        f"<span class=hash>sha256 {_escaped(source['sha256'])}</span>"
        for source in sources
    )


def page(
    sections: Sequence[Section],
    svgs: Sequence[Sequence[str | None]],
    made: Provenance,
    not_drawn: str | None = None,
    heading: str = "DICES safety ratings",
) -> str:
    """The whole HTML document, under `heading` and the datasets' titles; `not_drawn`: why
    the charts (None in `svgs`) are missing."""
    titles = " and ".join(m["title"] for m in made.datasets)
    toc = "".join(
        f'<li><a href="#{s.key}">{_escaped(s.title)}</a></li>' for s in [*sections, _PROVENANCE]
    )
    # A warning (a model's flipped polarity) also heads the page: it changes every reading.
    warnings = "".join(_warning(text, s.key) for s in sections for text in s.warnings)
    missing = "" if not_drawn is None else f'<p class="note">Note: {_escaped(not_drawn)}.</p>'
    body = []
    figure = 1
    for section, drawn in zip(sections, svgs, strict=True):
        body.append(section_html(section, drawn, figure))
        figure += len(section.figures)
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>dices report: {_escaped(titles)}</title><style>{STYLE}</style></head>"
        f"<body><header><h1>{_escaped(heading)}: {_escaped(titles)}</h1>"
        f"<p>Raters: {_isolated(made.selection)}. Every chart is drawn from the canned queries "
        "of <code>dices query</code>; the numbers behind each are in the table below it.</p>"
        f"{warnings}{missing}<nav aria-label=Contents><ol>{toc}</ol></nav></header>"
        f"<main>{''.join(body)}{provenance_html(made)}</main></body></html>\n"
    )


_PROVENANCE = Section("provenance", "How this report was made", [])
