"""report.html rendered by headless Chromium: images decode, the claims are in the DOM, the page is not
blank, and the first screen shows the scoreboard before any claim.

The campaign sets are hand-made with tests/runfactory.py: a CPU campaign with a failed run and a
framework missing from one workload and a GPU campaign, analysed together; and one like `make demo`'s
(synthetic data, quick profile, keras and pytorch on cnn-mnist and lstm-imdb, 2 repeats). The
screenshots are kept as test artifacts under reports/test-artifacts/ (report-screenshot.png, the whole
page; first-screen.png, the demo-like report's first 1280x900 screen). Skipped (with the reason) when
chromium is not installed; .ci/run installs it before the tests.
"""

from __future__ import annotations

import base64
import html
import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

import studies
from analysis import analyze
from tests.analysis.test_analysis import build_campaign, build_cpu_gpu_campaigns
from tests.runfactory import make_run

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "reports" / "test-artifacts"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# The first screen: a laptop browser window.
SCREEN_W, SCREEN_H = 1280, 900

pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is not installed (apt-get install -y chromium; .ci/run installs it in CI)")


class _DomScan(HTMLParser):
    """Collects every <img> src and the rows of the table whose class is 'claims'."""

    def __init__(self) -> None:
        super().__init__()
        self.img_srcs: list[str] = []
        self.claims_tables = 0
        self.claims_rows = 0
        self._in_claims = False
        self._in_body = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "img":
            self.img_srcs.append(a.get("src") or "")
        elif tag == "table" and a.get("class") == "claims":
            self.claims_tables += 1
            self._in_claims = True
        elif tag == "tbody" and self._in_claims:
            self._in_body = True
        elif tag == "tr" and self._in_body:
            self.claims_rows += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._in_claims = self._in_body = False


def png_size(data: bytes) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk; raises AssertionError if the bytes are not a PNG."""
    assert data[:8] == PNG_SIGNATURE, "not a PNG signature"
    assert data[12:16] == b"IHDR", "first chunk is not IHDR"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def chromium(tmp_path: Path, page: Path, *args: str) -> str:
    """Run headless Chromium on a local page with args (e.g. --screenshot=..., --dump-dom); its stdout."""
    proc = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
         f"--user-data-dir={tmp_path / 'chromium-profile'}", *args, page.resolve().as_uri()],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    demo = build_campaign(tmp_path / "cpu")
    _, gpu = build_cpu_gpu_campaigns(tmp_path / "gpu")
    result = analyze([demo, gpu], tmp_path / "report")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "report-screenshot.png"
    shot.unlink(missing_ok=True)
    dom = chromium(tmp_path, result.report_html, f"--screenshot={shot}", "--window-size=1280,4000", "--dump-dom")

    scan = _DomScan()
    scan.feed(dom)
    # Every figure made it into the rendered page, each as a data: URI holding a real PNG.
    assert len(scan.img_srcs) == len(result.figures) >= 8
    for src in scan.img_srcs:
        assert src.startswith("data:image/png;base64,"), src[:60]
        width, height = png_size(base64.b64decode(src.split(",", 1)[1], validate=True))
        assert width > 0 and height > 0
    # The claims: a row of the claims table per claim this campaign set decides, a line per claim it
    # cannot decide; every registered claim is in one or the other.
    assert scan.claims_tables == 1 and scan.claims_rows >= 1
    assert scan.claims_rows + dom.count('<span class="tag claim">') == len(studies.claims())
    assert dom.index('id="what-reproduced"') < dom.index('id="runs-overview"')
    assert "pytorch-lstm-imdb-cpu-r2 (failed)" in dom
    assert re.search(r'<span class="tag reproduced">reproduced</span>', dom)

    # The screenshot is a real page: large, and not a single colour.
    assert shot.stat().st_size > 50_000
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)
    assert pixels.shape[:2] == (4000, 1280)
    assert float(pixels[..., :3].std()) > 0.01


# --- The first screen ------------------------------------------------------------------------

# Appended to a copy of the report (the report itself has no script): once the page has loaded, it writes
# the page offsets of the elements the first screen must show, and of the first claim, into the DOM.
_LAYOUT_PROBE = """<script>
addEventListener("load", () => {
  const box = (selector) => {
    const e = document.querySelector(selector);
    if (!e) return null;
    const r = e.getBoundingClientRect();
    return {top: r.top + scrollY, bottom: r.bottom + scrollY};
  };
  const out = {width: innerWidth,
               heading: box("#scoreboard-measured-vs-published"),
               figure: box('img[alt^="Scoreboard"]'),
               table: box("table.scoreboard"),
               claim: box("table.claims tbody tr")};
  const pre = document.createElement("pre");
  pre.id = "layout";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def build_demo_like_campaign(root: Path) -> Path:
    """A campaign like `make demo`'s under root/results/demo: synthetic data, quick profile (2 epochs), keras
    and pytorch on cnn-mnist and lstm-imdb, 2 repeats each, all on CPU."""
    campaign = root / "results" / "demo"
    for fw, seconds in (("keras", 18.0), ("pytorch", 12.0)):
        for wl, acc in (("cnn-mnist", 0.88), ("lstm-imdb", 0.80)):
            for repeat in (1, 2):
                final = acc + repeat / 100
                make_run(campaign, fw, wl, repeat, profile="quick", data_source="synthetic",
                         training_time=seconds + repeat, accuracy=final, curve=(final - 0.05, final))
    return campaign


def test_first_screen_shows_the_scoreboard_before_any_claim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "kit"
    build_demo_like_campaign(root)
    monkeypatch.chdir(root)  # relative folders, as `make demo` passes them: the header names results/demo
    result = analyze(Path("results/demo"), Path("reports/demo"))
    report = result.report_html.resolve()
    page = report.read_text(encoding="utf-8")

    # Document order: the scoreboard (heading, figure, table) comes before the first claim row.
    claim_row = page.index("<tbody>", page.index('<table class="claims">'))
    order = [page.index('id="scoreboard-measured-vs-published"'), page.index('<img alt="Scoreboard'),
             page.index('<table class="scoreboard">'), claim_row]
    assert order == sorted(order), order
    assert page.index('class="banner"') < order[0]  # the synthetic-data banner stays on top

    # The first screen, kept as a test artifact.
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "first-screen.png"
    shot.unlink(missing_ok=True)
    chromium(tmp_path, report, f"--screenshot={shot}", f"--window-size={SCREEN_W},{SCREEN_H}")
    print(f"first screen: {shot}")
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)
    assert pixels.shape[:2] == (SCREEN_H, SCREEN_W) and float(pixels[..., :3].std()) > 0.01

    # Layout, measured by Chromium at the same width: the scoreboard's figure and table end within the
    # screenshot's height, above the first claim. Offsets are from the top of the page, so they do not depend
    # on the viewport's height (headless Chromium's --dump-dom window keeps room for a browser bar).
    probed = report.with_name("report-layout-probe.html")
    probed.write_text(page.replace("</body>", _LAYOUT_PROBE + "</body>"), encoding="utf-8")
    dom = chromium(tmp_path, probed, f"--window-size={SCREEN_W},{SCREEN_H}", "--dump-dom")
    found = re.search(r'<pre id="layout">(.*?)</pre>', dom, re.S)
    assert found, "the layout probe did not run"
    layout = json.loads(html.unescape(found.group(1)))
    print(f"layout: {layout}")
    assert layout["width"] == SCREEN_W
    heading, figure, table, claim = (layout[k] for k in ("heading", "figure", "table", "claim"))
    assert heading["bottom"] <= figure["top"] < figure["bottom"] <= table["top"] < table["bottom"]
    assert figure["bottom"] - figure["top"] > 100  # the figure drew: not a broken image
    assert table["bottom"] <= SCREEN_H, f"the scoreboard table ends at {table['bottom']} px, below the first screen"
    assert claim["top"] > table["bottom"]
