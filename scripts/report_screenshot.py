"""Regenerate docs/report.png: a `dices report` of both replica datasets, with the packaged demo
predictions, in headless Chromium.

    python scripts/report_screenshot.py                  # build the replicas, ingest, report
    python scripts/report_screenshot.py --data DIR       # an ingested data directory
    python scripts/report_screenshot.py --html report.html --png shot.png
    python scripts/report_screenshot.py --figure "per rater_race x rater_gender" \
        --png docs/img/heatmap.png                       # one figure: its chart and caption

Needs Debian's `chromium` (or $CHROMIUM) and the `report` extra. The browser is driven over
the DevTools protocol on a pipe (`--remote-debugging-pipe`: no port, no extra package);
`Browser` is also what tests/report/test_report.py uses to check the page and log its requests.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("DICES_SHARED", REPO.parent / "shared"))
# Two toy models of the packaged DICES-350 sample, one with flipped labels: the report shows
# the models section and its polarity warning.
DEMO_PREDICTIONS = REPO / "dices_cli" / "data" / "demo-predictions.csv"
WIDTH = 1280  # CSS px: a laptop screen
TOP_HEIGHT = 2600  # CSS px of the page's top kept in docs/report.png
TIMEOUT = 60.0  # s for any one answer of the browser
FLAGS = [
    "--headless",
    "--no-sandbox",  # CI runs as root
    "--disable-gpu",
    "--hide-scrollbars",
    "--no-first-run",
    "--disable-extensions",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--mute-audio",
    # Anything the page tried to fetch would go to a closed port, and fail, besides being
    # logged as a request.
    "--proxy-server=127.0.0.1:9",
    "--proxy-bypass-list=<-loopback>",
]


def chromium() -> str | None:
    """The Chromium executable, or None."""
    for name in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and (found := shutil.which(name)):
            return found
    return None


class Browser:
    """Headless Chromium driven over the DevTools protocol on a pipe (fd 3 in, fd 4 out):
    JSON messages, each ended by a NUL byte."""

    def __init__(self, executable: str, profile: Path) -> None:
        to_browser_read, self._to_browser = os.pipe()
        self._from_browser, from_browser_write = os.pipe()
        # Above 4, so that placing one end on fd 3 or 4 cannot overwrite the other.
        high = [
            fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
            for fd in (to_browser_read, from_browser_write)
        ]

        def give_pipes() -> None:  # in the child, before exec: the fds Chromium reads
            for fd, target in zip(high, (3, 4), strict=True):
                os.dup2(fd, target)  # inheritable, unlike the pipe's own descriptors

        self.process = subprocess.Popen(
            [executable, *FLAGS, "--remote-debugging-pipe", f"--user-data-dir={profile}"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=give_pipes,
            close_fds=False,
        )
        for fd in (to_browser_read, from_browser_write, *high):
            os.close(fd)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []

    def send(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        """Send one command and return its result; events read meanwhile are kept."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        while True:
            answer = self._read()
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                result: dict[str, Any] = answer["result"]
                return result
            self.events.append(answer)

    def wait_for(self, method: str, session: str) -> dict[str, Any]:
        """The first event `method` of page `session` (already received, or the next ones)."""
        seen = 0
        while True:
            for event in self.events[seen:]:
                if event.get("method") == method and event.get("sessionId") == session:
                    return event
            seen = len(self.events)
            self.events.append(self._read())

    def _read(self) -> dict[str, Any]:
        deadline = time.monotonic() + TIMEOUT
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("Chromium did not answer")
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                raise RuntimeError("Chromium closed the pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        loaded: dict[str, Any] = json.loads(message)
        return loaded

    def open(self, url: str, height: int = 900) -> str:
        """A new page with the network logged, `url` loaded; its session id."""
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        session = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.send("Network.enable", session)
        self.send("Page.enable", session)
        self.send(
            "Emulation.setDeviceMetricsOverride",
            session,
            width=WIDTH,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )
        self.send("Page.navigate", session, url=url)
        self.wait_for("Page.loadEventFired", session)
        return session

    def requests(self, session: str) -> list[str]:
        """Every URL page `session` asked for so far."""
        return [
            event["params"]["request"]["url"]
            for event in self.events
            if event.get("method") == "Network.requestWillBeSent"
            and event.get("sessionId") == session
        ]

    def evaluate(self, session: str, expression: str) -> Any:
        answer = self.send("Runtime.evaluate", session, expression=expression, returnByValue=True)
        return answer["result"].get("value")

    def screenshot(self, session: str, height: int, box: dict[str, float] | None = None) -> bytes:
        """A PNG of the page's top `height` CSS px, or of `box` (x, y, width, height)."""
        clip = {"x": 0, "y": 0, "width": WIDTH, "height": height, **(box or {}), "scale": 1}
        shot = self.send(
            "Page.captureScreenshot", session, format="png", clip=clip, captureBeyondViewport=True
        )
        return base64.b64decode(shot["data"])

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, OSError):  # it is going away anyway
            self.send("Browser.close")
        try:
            self.process.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)


def figure_box(browser: Browser, session: str, caption: str) -> dict[str, float]:
    """Where on the page the first figure whose caption holds `caption` is, in CSS px."""
    script = (
        "(() => { const f = [...document.querySelectorAll('figure')].find("
        f"f => f.querySelector('figcaption').textContent.includes({json.dumps(caption)})); "
        "if (!f) return null; const b = f.getBoundingClientRect(); "
        "return {x: b.x + scrollX, y: b.y + scrollY, width: b.width, height: b.height}; })()"
    )
    box: dict[str, float] | None = browser.evaluate(session, script)
    if box is None:
        sys.exit(f"no figure's caption holds {caption!r}")
    return box


def _dices(*arguments: str) -> None:
    subprocess.run([sys.executable, "-m", "dices_cli", *arguments], check=True, cwd=REPO)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, help="an ingested data directory (default: build)")
    parser.add_argument("--html", type=Path, help="keep the report here (default: temporary)")
    parser.add_argument("--png", type=Path, default=REPO / "docs" / "report.png")
    parser.add_argument("--figure", help="only the figure whose caption holds this text")
    arguments = parser.parse_args()
    executable = chromium()
    if executable is None:
        sys.exit("chromium not found: apt-get install chromium, or set CHROMIUM")
    with tempfile.TemporaryDirectory() as work:
        folder = Path(work)
        data = arguments.data
        if data is None:
            data = folder / "data"
            files = [str(folder / f"dices_{name}.csv") for name in ("350", "990")]
            for name, file in zip(("350", "990"), files, strict=True):
                generator = SHARED / "data" / "make_replica.py"
                subprocess.run([sys.executable, str(generator), name, file], check=True)
            _dices("ingest", *files, "--data", str(data), "-q")
        html = arguments.html or folder / "report.html"
        _dices(
            "report",
            "--by",
            "rater_race",
            "--by",
            "rater_gender",
            "--predictions",
            str(DEMO_PREDICTIONS),
            "--data",
            str(data),
            "-o",
            str(html),
            "--force",
        )
        browser = Browser(executable, folder / "profile")
        try:
            session = browser.open(html.resolve().as_uri(), height=TOP_HEIGHT)
            box = (
                None if arguments.figure is None else figure_box(browser, session, arguments.figure)
            )
            arguments.png.write_bytes(browser.screenshot(session, TOP_HEIGHT, box))
        finally:
            browser.close()
    print(f"wrote {arguments.png}")


if __name__ == "__main__":
    main()
