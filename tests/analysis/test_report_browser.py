"""report.html rendered by headless Chromium: images decode, the claims table is in the DOM, and
the page is not blank.

The campaign set is hand-made with tests/runfactory.py: a CPU campaign with a failed run and a
framework missing from one workload, and a GPU campaign, analysed together. The screenshot is kept
as a test artifact under reports/test-artifacts/. Skipped (with the reason) when chromium is not
installed; .ci/run installs it before the tests.
"""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from analysis import analyze
from analysis.studies import CLAIMS
from tests.analysis.test_analysis import build_campaign, build_cpu_gpu_campaigns

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "reports" / "test-artifacts"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

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


def test_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    demo = build_campaign(tmp_path / "cpu")
    _, gpu = build_cpu_gpu_campaigns(tmp_path / "gpu")
    result = analyze([demo, gpu], tmp_path / "report")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "report-screenshot.png"
    shot.unlink(missing_ok=True)
    proc = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'chromium-profile'}", f"--screenshot={shot}", "--window-size=1280,4000",
         "--dump-dom", result.report_html.resolve().as_uri()],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout

    scan = _DomScan()
    scan.feed(dom)
    # Every figure made it into the rendered page, each as a data: URI holding a real PNG.
    assert len(scan.img_srcs) == len(result.figures) >= 8
    for src in scan.img_srcs:
        assert src.startswith("data:image/png;base64,"), src[:60]
        width, height = png_size(base64.b64decode(src.split(",", 1)[1], validate=True))
        assert width > 0 and height > 0
    # The claims table, near the top, one row per registered claim.
    assert scan.claims_tables == 1 and scan.claims_rows == len(CLAIMS)
    assert dom.index('id="what-reproduced"') < dom.index('id="runs-overview"')
    assert "pytorch-lstm-imdb-cpu-r2 (failed)" in dom
    assert re.search(r'<span class="tag reproduced">reproduced</span>', dom)

    # The screenshot is a real page: large, and not a single colour.
    assert shot.stat().st_size > 50_000
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)
    assert pixels.shape[:2] == (4000, 1280)
    assert float(pixels[..., :3].std()) > 0.01
