"""The report's charts rendered to inline SVG by vl-convert, in a process of its own.

vl-convert runs Vega in an embedded engine with no network access (`allowed_base_urls=[]`:
a specification that names a URL fails instead of fetching it). `Drawer` keeps one drawing
process for a report; `to_svg` draws one chart in this process.
"""

from __future__ import annotations

import contextlib
import json
import re
from typing import TYPE_CHECKING, Any

from dices_cli.errors import DicesError
from dices_cli.report.charts import CONFIG, cut_apart, label_text
from dices_cli.terminal_text import printable

if TYPE_CHECKING:
    from collections.abc import Iterator
    from concurrent.futures import Future


class Drawer:
    """Draws charts (`to_svg`) in a process of its own, one at a time in the order given,
    while the caller goes on: open one before the queries and give it each section's
    charts as soon as the section is built; `Future.result` waits for each.

    Why a process: vl-convert holds the GIL while it draws, so a thread would stall the
    queries. The queries keep one core busy; the charts and vl-convert's start go on the
    other, so the report takes less wall time than when a thread draws (bench/report.py).

    A plain `python -c` child, not multiprocessing: its spawn would run the caller's main
    script again, and a script calling the app without a main guard would fail. One
    process, charts in order, so the SVGs are those drawn here byte for byte (vl-convert
    numbers the gradients it defines per process: gradient_0, gradient_1, ...).

    Under an address-space cap (`ulimit -v`) too small for vl-convert's JavaScript engine,
    which reserves about 65 GiB at its start whatever it draws, every chart's `Future` gives
    None instead of an SVG, and `not_drawn` says why and how to lift the cap: the report is
    then written with each figure's table in place of its chart.
    """

    def __enter__(self) -> Drawer:
        import os
        import subprocess
        import sys
        import tempfile
        from concurrent.futures import ThreadPoolExecutor
        from pathlib import Path

        import dices_cli

        # The child imports the dices_cli this process runs, wherever it was found: first on
        # its path, and no working directory before it (-P).
        home = str(Path(dices_cli.__file__).resolve().parents[1])
        path = os.pathsep.join(filter(None, (home, os.environ.get("PYTHONPATH"))))
        self._process: subprocess.Popen[bytes] | None = None
        self.not_drawn: str | None = None  # why no chart could be drawn, once known
        # What the child says on stderr is a crash's report (V8's or Rust's, pages of stack
        # frames): kept aside, and summed up in one line should the child stop.
        self._errors = tempfile.TemporaryFile()
        with contextlib.suppress(OSError):  # no process to be had: the thread below draws
            self._process = subprocess.Popen(
                [sys.executable, "-P", "-c", "from dices_cli.report.svg import serve; serve()"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._errors,
                env={**os.environ, "PYTHONPATH": path},
                start_new_session=True,  # Ctrl-C is ours to report; the child ends with us
            )
        # One request at a time, in order; it waits on the child beside the queries.
        self._talk = ThreadPoolExecutor(1, thread_name_prefix="charts")
        return self

    def draw(self, spec: dict[str, Any]) -> Future[str | None]:
        """The chart as SVG, or None when the renderer cannot run under this process's
        address-space cap (`not_drawn`)."""
        return self._talk.submit(self._ask, spec)

    def _ask(self, spec: dict[str, Any]) -> str | None:
        if self.not_drawn is not None:
            return None
        if self._process is None:
            return to_svg(spec)
        assert self._process.stdin is not None and self._process.stdout is not None
        try:
            self._process.stdin.write(json.dumps(spec).encode() + b"\n")
            self._process.stdin.flush()
            reply = self._process.stdout.readline()
        except BrokenPipeError:
            reply = b""
        if not reply:  # killed, say, or out of memory
            code = self._process.wait()
            self._errors.seek(0)
            errors = self._errors.read().decode(errors="replace")
            self.not_drawn = _capped(errors)
            if self.not_drawn is not None:
                return None
            raise DicesError(_stopped(code, errors))
        answer: dict[str, str] = json.loads(reply)
        if "error" in answer:
            raise DicesError(answer["error"])
        return answer["svg"]

    def __exit__(self, *failure: object) -> None:
        self._talk.shutdown(cancel_futures=True)  # after a failure, draws no more
        if self._process is not None:
            assert self._process.stdin is not None
            with contextlib.suppress(BrokenPipeError):
                self._process.stdin.close()  # the child's end of input: it exits
            self._process.wait()
        self._errors.close()


# What vl-convert's V8 reserves at its start, as address space, and the `ulimit -v` (KiB) under
# which the report draws its charts. Measured on Linux x86-64 (vl-convert-python 1.9.0.post1):
# the drawing process alone starts at 67,437,500 KiB and aborts at 67,421,875; `dices report
# -d all` on the two replica datasets draws every chart at 68,000,000. V8 cannot be told to
# reserve less: vl-convert passes it no flags (1.9; 2.0.0rc7 neither: it reserves about 48 GiB,
# and its max_v8_heap_size_mb bounds the heap, not this reservation).
RENDERER_ADDRESS_SPACE = "about 65 GiB"
RENDERER_ULIMIT_KIB = 68_000_000


def _capped(errors: str) -> str | None:
    """Why no chart can be drawn, when the drawing process stopped (its stderr: `errors`) for
    want of address space under this process's cap; None when it stopped for another reason."""
    import resource

    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if "Fatal process out of memory" not in errors or limit == resource.RLIM_INFINITY:
        return None
    return (
        "the charts are not drawn, each figure shows its table instead: the chart renderer "
        f"(vl-convert) reserves {RENDERER_ADDRESS_SPACE} of address space at its start, and this "
        f"process may use {limit / 2**30:.1f} GiB (ulimit -v {limit // 1024}); to draw them, "
        f"run under ulimit -v {RENDERER_ULIMIT_KIB} or more, or ulimit -v unlimited"
    )


def _stopped(code: int, errors: str) -> str:
    """Why the drawing process stopped, in one line, from its exit code and its stderr."""
    fatal = re.search(r"Fatal process out of memory: ([^\n]*)", errors)
    reason = f": out of memory ({fatal[1].strip()})" if fatal else ""
    return f"the process drawing the charts stopped (exit code {code}){reason}"


def serve() -> None:
    """The drawing process of a `Drawer`: starts vl-convert, then answers each line of its
    input, a specification in JSON, with a line of output, {"svg": ...} or {"error": ...}."""
    import sys

    with contextlib.suppress(DicesError):  # a failure here is the first chart's to report
        to_svg(_FIRST_CHART)
    for line in sys.stdin.buffer:
        try:
            reply = {"svg": to_svg(json.loads(line))}
        except DicesError as error:
            reply = {"error": str(error)}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


# A chart whose axis measures text (vl-convert reads the system fonts then) and which defines
# no gradient, so the report's gradients keep their numbers (see `Drawer`).
_FIRST_CHART = {
    "data": {"values": [{"x": 1}]},
    "mark": "bar",
    "encoding": {"x": {"field": "x", "type": "quantitative"}},
}


def to_svg(spec: dict[str, Any]) -> str:
    """The chart as an SVG element (text, not a file), ready to inline in HTML. Its text is
    drawn `printable`: vl-convert aborts the process on a character XML cannot hold (a
    control character, U+FFFE), and a chart is for reading, where the table is exact."""
    import vl_convert

    try:
        with _own_fonts_only():
            svg: str = vl_convert.vegalite_to_svg(
                _cut_labels(_printable_text(spec)), config=CONFIG, allowed_base_urls=[]
            )
    except ValueError as error:  # vl-convert reports a bad specification as ValueError
        raise DicesError(f"cannot draw the chart {spec.get('title')!r}: {error}") from error
    return svg


def _printable_text(value: Any) -> Any:
    """`value` (a specification, or any part of it) with every string in it, keys included
    so that a field keeps its name in the data and the encoding, made `printable`."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable(key): _printable_text(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_printable_text(item) for item in value]
    return value


def _cut_labels(spec: dict[str, Any]) -> dict[str, Any]:
    """`spec` with each text of its rows that is too long for a label (`label_text`) cut,
    wherever it is written: in the rows, and in the sort orders and scale domains that name
    it. Two texts cut alike are kept apart, by " (2)", " (3)"... after the cut, so a chart
    draws as many groups as its rows hold."""
    texts = {
        value
        for row in spec.get("data", {}).get("values", [])
        for value in row.values()
        if isinstance(value, str)
    }
    cuts = cut_apart(texts, label_text)
    return _replaced(spec, cuts) if cuts else spec


def _replaced(value: Any, cuts: dict[str, str]) -> Any:
    """`value` with every string that is a key of `cuts` (not a dict's key) replaced."""
    if isinstance(value, str):
        return cuts.get(value, value)
    if isinstance(value, dict):
        return {key: _replaced(item, cuts) for key, item in value.items()}
    if isinstance(value, list):
        return [_replaced(item, cuts) for item in value]
    return value


@contextlib.contextmanager
def _own_fonts_only() -> Iterator[None]:
    """vl-convert, while it draws, sees no system font: only the Liberation Sans it carries in
    memory. It reads its font configuration once in a process, at its first chart, from
    FONTCONFIG_FILE: ours names a folder that holds no font (`fontconfig/fonts.conf`).

    A system font is a file that vl-convert opens and maps anew for every glyph it measures
    (tens of thousands of times for the report's charts), far slower than its own font
    (`python bench/report.py`). The charts no longer depend on the fonts of the machine that
    draws them, either."""
    import os
    from pathlib import Path

    given = os.environ.get("FONTCONFIG_FILE")
    os.environ["FONTCONFIG_FILE"] = str(Path(__file__).with_name("fontconfig") / "fonts.conf")
    try:
        yield
    finally:
        if given is None:
            del os.environ["FONTCONFIG_FILE"]
        else:
            os.environ["FONTCONFIG_FILE"] = given
