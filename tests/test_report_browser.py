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
