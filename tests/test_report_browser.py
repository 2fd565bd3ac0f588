"""The HTML report in a real browser: headless Chromium (Debian's ``chromium`` package).

Chromium loads report.html from disk (no network flags), runs the page script, and ``--dump-dom``
prints the resulting DOM. The filters come in the URL hash, so the dumped DOM shows what a user
sees after choosing them. This test needs /usr/bin/chromium (``make test`` installs it) and fails
with a clear message when it is missing: a browser test that silently skips proves nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from test_report import CATEGORY, EVIL_QUESTION, N_PER_BENCH, make_inputs, run_report

CHROMIUM = Path("/usr/bin/chromium")


class DomSummary(HTMLParser):
    """What the dumped DOM holds: sample cards, the status line, tables, scripts, the page title (not
    the SVG titles), question texts."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.cards: list[dict[str, str]] = []
        self.status: dict[str, str] = {}
        self.status_text = ""
        self.tables = 0
        self.scripts = 0
        self.images: list[str] = []
        self.title = ""
        self.questions: list[str] = []
        self._in: str | None = None
        self._head = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        classes = a.get("class", "").split()
        if tag == "article" and "sample" in classes:
            self.cards.append(a)
        elif tag == "p" and a.get("id") == "browser-status":
            self.status = a
            self._in = "status"
        elif tag == "p" and "question" in classes:
            self.questions.append("")
            self._in = "question"
        elif tag == "table" and "data" in classes:
            self.tables += 1
        elif tag == "script":
            self.scripts += 1
        elif tag == "img":
            self.images.append(a.get("src", ""))
        elif tag == "title" and self._head:
            self._in = "title"
        elif tag == "head":
            self._head = True

    def handle_endtag(self, tag: str) -> None:
        if tag in ("p", "title"):
            self._in = None
        if tag == "head":
            self._head = False

    def handle_data(self, data: str) -> None:
        if self._in == "status":
            self.status_text += data
        elif self._in == "question":
            self.questions[-1] += data
        elif self._in == "title":
            self.title += data


def dump_dom(page: Path, fragment: str, profile: Path) -> DomSummary:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} not found: the browser test needs Debian's chromium "
                    "(apt-get install -y chromium; `make test` installs it)")
    url = page.resolve().as_uri() + fragment
    cmd = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", "--no-default-browser-check",
           "--disable-extensions", f"--user-data-dir={profile}", "--dump-dom", url]
    env = {**os.environ, "HOME": str(profile)}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, f"chromium failed ({done.returncode}): {done.stderr[-2000:]}"
    assert "<html" in done.stdout, f"chromium printed no DOM: {done.stderr[-2000:]}"
    summary = DomSummary()
    summary.feed(done.stdout)
    return summary


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("browser")
    paths = make_inputs(root / "in")
    assert run_report(paths, root / "out") == 0
    return root / "out" / "report.html"


@pytest.fixture
def profile(tmp_path: Path) -> Path:
    p = tmp_path / "profile"
    p.mkdir()
    yield p
    shutil.rmtree(p, ignore_errors=True)


def _expected(category: str, benchmark: str | None = None) -> set[str]:
    return {f"{b}_{i}" for b in ("alpha", "beta") for i in range(N_PER_BENCH)
            if CATEGORY[i % 4] == category and (benchmark is None or b == benchmark)}


def test_page_renders_tables_and_browser(page: Path, profile: Path) -> None:
    dom = dump_dom(page, "", profile)
    assert dom.tables >= 10  # the analyses' tables are in the rendered page
    assert dom.title == "TempCore report"
    assert dom.status.get("data-matching") == str(2 * N_PER_BENCH)
    assert len(dom.cards) == 24 and dom.status.get("data-shown") == "24"  # one page of 25
    assert {c["data-category"] for c in dom.cards} == set(CATEGORY.values())
    assert sum(src.startswith("data:image/jpeg;base64,") for src in dom.images) >= 24 * 8
    assert all(src.startswith("data:") for src in dom.images)


def test_category_filter_from_the_url(page: Path, profile: Path) -> None:
    dom = dump_dom(page, "#filter=temporally_grounded", profile)
    ids = {c["data-sample-id"] for c in dom.cards}
    assert ids == _expected("temporally_grounded") and len(ids) == 6
    assert {c["data-category"] for c in dom.cards} == {"temporally_grounded"}
    assert dom.status.get("data-matching") == "6" and "Temporally Grounded" in dom.status_text


def test_category_and_benchmark_filter(page: Path, profile: Path) -> None:
    dom = dump_dom(page, "#filter=visual_bias&benchmark=beta", profile)
    assert {c["data-sample-id"] for c in dom.cards} == _expected("visual_bias", "beta")
    assert {c["data-benchmark"] for c in dom.cards} == {"beta"}
    dom = dump_dom(page, "#filter=temporally_sensitive&benchmark=alpha", profile)
    assert {c["data-sample-id"] for c in dom.cards} == \
        _expected("temporally_grounded", "alpha") | _expected("visual_bias", "alpha")


def test_script_in_a_question_shows_as_text(page: Path, profile: Path) -> None:
    dom = dump_dom(page, "#filter=temporally_grounded&benchmark=alpha", profile)
    assert "alpha_0" in {c["data-sample-id"] for c in dom.cards}
    assert EVIL_QUESTION in dom.questions  # the exact text, shown as text
    assert dom.title == "TempCore report"  # the injected script never ran
    assert dom.scripts == 2  # no <script> element was created from the question
    assert "x" not in dom.images  # nor the <img onerror> of the question


PROBE = """<script>
(function () {
  var card = document.getElementById("summary"), bars = card ? card.querySelectorAll(".bar") : [];
  var bar = bars.length ? bars[bars.length - 1] : null, how = card && card.querySelector(".how");
  var r = card ? card.getBoundingClientRect() : null, b = bar ? bar.getBoundingClientRect() : null;
  var out = document.createElement("pre");
  out.id = "layout-probe";
  out.textContent = JSON.stringify({
    vw: window.innerWidth, vh: window.innerHeight, scrollY: window.pageYOffset,
    card: r && {top: r.top, left: r.left, right: r.right, bottom: r.bottom},
    bar: b && {top: b.top, bottom: b.bottom, right: b.right},
    how: how && how.getBoundingClientRect().bottom,
    card_overflow: card ? card.scrollWidth - card.clientWidth : null,
    page_width: document.documentElement.clientWidth,
    wide_tables: Array.prototype.filter.call(document.querySelectorAll("div.scroll"), function (d) {
      return d.scrollWidth > d.clientWidth + 1; }).map(function (d) {
      var item = d.closest("section.item"); return item ? item.id : "?"; }),
    first_section: document.querySelector("section[id^='s-']").getBoundingClientRect().top});
  document.body.insertBefore(out, document.body.firstChild);
})();
</script>"""


def chromium(args: list[str], profile: Path) -> subprocess.CompletedProcess[str]:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} not found: the browser test needs Debian's chromium")
    cmd = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", "--no-default-browser-check",
           "--disable-extensions", "--hide-scrollbars", f"--user-data-dir={profile}", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env={**os.environ, "HOME": str(profile)})
    assert done.returncode == 0, f"chromium failed ({done.returncode}): {done.stderr[-2000:]}"
    return done


FRAME = """<!DOCTYPE html><html><body style="margin:0">
<iframe id="f" src="{src}" width="{w}" height="{h}" style="border:0"></iframe>
<script>document.getElementById("f").addEventListener("load", function () {{
  var p = this.contentDocument.getElementById("layout-probe"), out = document.createElement("pre");
  out.id = "layout-probe"; out.textContent = p ? p.textContent : "{{}}"; document.body.appendChild(out);
}});</script></body></html>"""


def layout(page: Path, width: int, height: int, profile: Path, tmp_path: Path) -> dict:
    """Where the summary card lies in a ``width`` x ``height`` viewport (a copy of the page with a
    probe). Narrower than a headless window can be (500 px), the page is measured in an iframe."""
    import json
    import re

    probed = tmp_path / f"probe_{width}.html"
    probed.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
    target, args = probed, [f"--window-size={width},{height}"]
    if width < 500:
        target = tmp_path / f"frame_{width}.html"
        target.write_text(FRAME.format(src=probed.name, w=width, h=height), encoding="utf-8")
        args = ["--window-size=800,1000", "--allow-file-access-from-files", "--virtual-time-budget=5000"]
    done = chromium([*args, "--dump-dom", target.resolve().as_uri()], profile)
    m = re.search(r'<pre id="layout-probe">(.*?)</pre>', done.stdout, re.S)
    assert m, f"no probe in the DOM: {done.stderr[-2000:]}"
    return json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&"))


def test_summary_card_is_visible_without_scrolling(page: Path, profile: Path, tmp_path: Path) -> None:
    at = layout(page, 1280, 800, profile, tmp_path)
    assert at["vw"] == 1280 and at["scrollY"] == 0
    card, bar = at["card"], at["bar"]
    assert 0 <= card["top"] < at["first_section"]  # before every section of tables
    # every benchmark's TPI, bar and counts, and the scoring and panel, in the first screen (the
    # window's page area is under 800 px: the headless window keeps room for its frame)
    assert at["vh"] <= 800 and card["top"] < at["vh"]
    assert bar["bottom"] <= at["vh"] and at["how"] <= at["vh"], at
    assert card["right"] <= at["page_width"] and at["card_overflow"] <= 0


@pytest.mark.parametrize("width,height", [(1920, 1080), (390, 844)])
def test_summary_card_fits_wide_and_phone_screens(page: Path, profile: Path, tmp_path: Path, width: int,
                                                 height: int) -> None:
    from PIL import Image

    shot = tmp_path / f"report_{width}.png"
    chromium([f"--window-size={width},{height}", f"--screenshot={shot}", page.resolve().as_uri()], profile)
    with Image.open(shot) as img:
        assert img.size == (width, height)
        rgb = img.convert("RGB")
        colours = {rgb.getpixel((x, y)) for x in range(0, width, 2) for y in range(0, height, 2)}
    assert (0x2C, 0xA0, 0x2C) in colours and (0xD6, 0x27, 0x28) in colours  # the category bar is on screen
    at = layout(page, width, height, profile, tmp_path)
    assert at["vw"] == width
    assert at["card"]["left"] >= 0 and at["card"]["right"] <= at["page_width"], at  # no horizontal overflow
    assert at["card_overflow"] <= 0 and at["bar"]["right"] <= at["card"]["right"], at


def test_tables_fit_the_page_at_1400_px(page: Path, profile: Path, tmp_path: Path) -> None:
    at = layout(page, 1400, 900, profile, tmp_path)
    assert at["wide_tables"] == [], at["wide_tables"]  # no table scrolls sideways (long names wrap)
