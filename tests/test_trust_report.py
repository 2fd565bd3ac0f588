"""Issue 9, item 8: the report as a researcher reads it — filters that match nothing say so, a
filter link opens at the browser, conditions read as labels (keys in tooltips), identical rotation
rows are merged, and bar-chart labels stay inside the picture. Browser checks run in headless
Chromium (see test_report_browser.py; a missing browser fails, never skips)."""

from __future__ import annotations

import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pyarrow as pa
import pytest

from tempcore.report import build_report, plots
from tempcore.report.format import condition_label, condition_labels
from test_report import browser_json, make_inputs, run_report
from test_report_browser import CHROMIUM


def dom_of(page: Path, fragment: str, tmp_path: Path) -> str:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} not found: the browser test needs Debian's chromium")
    profile = tmp_path / f"profile{abs(hash(fragment))}"
    profile.mkdir()
    cmd = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", "--no-default-browser-check",
           "--disable-extensions", "--window-size=1200,900", f"--user-data-dir={profile}", "--dump-dom",
           page.resolve().as_uri() + fragment]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env={**os.environ, "HOME": str(profile)})
    shutil.rmtree(profile, ignore_errors=True)
    assert done.returncode == 0 and "<html" in done.stdout, done.stderr[-2000:]
    return done.stdout


class Elements(HTMLParser):
    """Attributes and text of the elements with an id, the sample cards and the condition cells."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.by_id: dict[str, dict[str, str]] = {}
        self.text: dict[str, str] = {}
        self.cards = 0
        self.conditions: list[tuple[str, str, str]] = []  # (data-condition, title, text)
        self._open: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "article" and "sample" in a.get("class", "").split():
            self.cards += 1
        if "id" in a:
            self.by_id[a["id"]] = a
            self.text.setdefault(a["id"], "")
        if tag == "th" and "data-condition" in a:
            self.conditions.append((a["data-condition"], a.get("title", ""), ""))
            self._open.append((tag, "cond"))
        else:
            self._open.append((tag, a.get("id")))

    def handle_endtag(self, tag: str) -> None:
        if self._open:
            self._open.pop()

    def handle_data(self, data: str) -> None:
        if not self._open:
            return
        tag, ident = self._open[-1]
        if ident == "cond":
            key, title, text = self.conditions[-1]
            self.conditions[-1] = (key, title, text + data)
        elif ident in self.text:
            self.text[ident] += data


def parse(html: str) -> Elements:
    e = Elements()
    e.feed(html)
    return e


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("trust-report")
    paths = make_inputs(root / "in")
    assert run_report(paths, root / "out", "--max-thumbnail-samples", "2") == 0
    return root / "out" / "report.html"


def test_a_filter_that_matches_nothing_says_so(page: Path, tmp_path: Path) -> None:
    for fragment, named in (("#filter=temporaly_grounded", "temporaly_grounded"),
                            ("#filter=visual_bias&benchmark=gamma", "gamma")):
        e = parse(dom_of(page, fragment, tmp_path))
        status = e.by_id["browser-status"]
        assert status["data-matching"] == "0" and status["data-unknown"] == "1" and e.cards == 0
        assert "No sample matches" in e.text["browser-status"] and named in e.text["browser-status"]


def test_fss_categories_filter_the_browser(page: Path, tmp_path: Path) -> None:
    rows = browser_json(page.read_text(encoding="utf-8"))["rows"]
    for cat in ("key", "anti_key", "non_key"):
        e = parse(dom_of(page, f"#filter={cat}", tmp_path))
        expected = sum(r["fss_category"] == cat for r in rows)
        assert expected > 0 and e.by_id["browser-status"]["data-matching"] == str(expected)
        assert e.by_id["browser-status"]["data-unknown"] == "0"


def test_a_filter_link_scrolls_to_the_browser(page: Path, tmp_path: Path) -> None:
    e = parse(dom_of(page, "#filter=temporally_grounded", tmp_path))
    assert int(e.by_id["browser-status"]["data-scrolled"]) > 500
    plain = parse(dom_of(page, "", tmp_path))
    assert "data-scrolled" not in plain.by_id["browser-status"]  # no filter: the report opens at the top


def test_conditions_show_labels_with_the_key_as_tooltip(page: Path, tmp_path: Path) -> None:
    e = parse(dom_of(page, "#filter=temporally_grounded&benchmark=alpha", tmp_path))
    assert e.conditions
    by_key = {key: (title, text) for key, title, text in e.conditions}
    assert by_key["maxprob|mode=qa|k=4|fps=10|seed=0"] == ("maxprob|mode=qa|k=4|fps=10|seed=0", "MaxProb · QA · K=4")
    assert by_key["noframe|mode=none|k=4|fps=10|seed=0"][1] == "No frames · K=4"
    assert all("|" not in text for _, _, text in e.conditions)


def test_condition_labels_show_what_differs() -> None:
    assert condition_label("maxprob|mode=qa|k=8|encoder=google/siglip2-base|rotation=1") == \
        "MaxProb · QA · K=8 · rotation 1"
    keys = ["maxprob|mode=qa|k=8|encoder=google/siglip2-base", "maxprob|mode=qa|k=8|encoder=/m/clip-b"]
    assert condition_labels(keys) == {keys[0]: "MaxProb · QA · K=8 · encoder siglip2-base",
                                      keys[1]: "MaxProb · QA · K=8 · encoder clip-b"}
    same = ["x|k=8|variant=a/b", "x|k=8|variant=c/b"]  # variants that read alike stay distinguishable
    assert condition_labels(same) == {same[0]: "x · K=8 · variant a/b", same[1]: "x · K=8 · variant c/b"}


def _rotation_table() -> pa.Table:
    """m_fixed answers the same under every rotation; m_moved does not (it tracks the option position)."""
    rows = []
    for i in range(6):
        for rot in range(4):
            for model, correct in (("m_fixed", int(i % 2 == 0)), ("m_moved", int(i <= rot))):
                for strategy, mode, c in (("maxprob", "qa", correct), ("minprob", "qa", 1 - correct),
                                          ("noframe", "none", 0)):
                    rows.append({"benchmark": "b", "sample_id": f"s{i}", "model": model, "strategy": strategy,
                                 "mode": mode, "k": 8, "window": None, "correct": c, "rotation": rot})
    return pa.Table.from_pylist(rows)


def test_identical_rotation_rows_are_shown_once() -> None:
    report = build_report(_rotation_table(), thumbnails=False, n_boot=50)
    acc = next(t for t in report.tables if t.key == "accuracy").table
    fixed = [r for r in acc.rows if r["model"] == "m_fixed"]
    moved = [r for r in acc.rows if r["model"] == "m_moved"]
    assert len(fixed) == 3 and {r["rotation"] for r in fixed} == {"0-3 (same)"}
    assert all(r["n"] == 6 for r in fixed)
    # m_moved's maxprob rows differ per rotation: four rows each; its no-frame rows are all 0 -> merged
    assert sorted(r["rotation"] for r in moved if r["strategy"] == "maxprob") == [0, 1, 2, 3]
    assert [r["rotation"] for r in moved if r["strategy"] == "noframe"] == ["0-3 (same)"]
    assert any("identical figures under every option rotation" in n for n in acc.notes)


LABEL_CHECK = """<!doctype html><html><body>{svg}<p id="out"></p><script>
var svg = document.querySelector("svg").getBoundingClientRect(), bad = [];
document.querySelectorAll("text[transform^='rotate(-30']").forEach(function (t) {{
  var r = t.getBoundingClientRect();
  if (r.left < svg.left - 0.5 || r.right > svg.right + 0.5 || r.bottom > svg.bottom + 0.5) {{ bad.push(t.textContent); }}
}});
var o = document.getElementById("out");
o.setAttribute("data-labels", String(document.querySelectorAll("text[transform^='rotate(-30']").length));
o.setAttribute("data-clipped", String(bad.length));
</script></body></html>"""


def test_bar_labels_stay_inside_the_picture(tmp_path: Path) -> None:
    groups = ["videomme / qwen3-vl-8b-instruct-awq", "videomme / internvl3-8b", "nextqa / llava-onevision-qwen2-7b",
              "mvbench / a-very-long-model-name-that-goes-on-and-on-and-on-forever"]
    svg = plots.grouped_bars(groups, {"MaxProb": [0.5, 0.6, 0.7, 0.4], "MinProb": [0.3, 0.2, 0.1, 0.4]},
                             title="x", ylabel="%", percent=True, y_range=(0.0, 100.0))
    page = tmp_path / "bars.html"
    page.write_text(LABEL_CHECK.format(svg=svg.replace("<svg ", '<svg xmlns="http://www.w3.org/2000/svg" ', 1)))
    e = parse(dom_of(page, "", tmp_path))
    assert e.by_id["out"]["data-labels"] == "4" and e.by_id["out"]["data-clipped"] == "0"
    assert "a-very-long-model-name-that-goes-on-and-on-and-on-forever</title>" in svg  # full text as tooltip
