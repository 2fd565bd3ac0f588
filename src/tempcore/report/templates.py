"""The HTML report's inline stylesheet and the sample browser's script (plain JavaScript).

The script builds the browser from the JSON data block with ``createElement`` / ``textContent``
only (never ``innerHTML``), so no benchmark or model text can become markup; an image source is
set only when it is a ``data:image/jpeg;base64,`` URI. Filters (category, benchmark, free text,
page) live in the URL hash — ``report.html#filter=temporally_grounded&benchmark=nextqa&q=why&page=2``
— so a filtered view can be bookmarked, and ``#browser-status`` states what is shown. ``filter``
takes a category of the taxonomy, ``temporally_sensitive``, or an FSS category (``key``,
``non_key``, ``anti_key``); a value the page does not know (or an unknown benchmark) matches no
sample and the status line names it. A link with a filter scrolls to the browser.
"""

CSS = """
:root { --fg:#222; --muted:#666; --line:#ddd; --bg:#fff; --accent:#4c78a8; }
* { box-sizing: border-box; }
body { font-family: -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; color: var(--fg);
  background: var(--bg); margin: 0; padding: 0 24px 48px; line-height: 1.45; font-size: 14px; }
header.top { border-bottom: 2px solid var(--accent); margin-bottom: 12px; }
h1 { font-size: 24px; margin: 18px 0 4px; } h2 { font-size: 19px; margin-top: 34px;
  border-bottom: 1px solid var(--line); } h3 { font-size: 15px; margin: 22px 0 6px; }
nav.toc a { margin-right: 14px; color: var(--accent); text-decoration: none; }
table.data { border-collapse: collapse; margin: 6px 0; font-size: 12.5px; }
table.data th, table.data td { border: 1px solid var(--line); padding: 3px 7px; }
table.data th { background: #f4f6f9; text-align: left; }
table.data td.num { text-align: right; font-variant-numeric: tabular-nums; }
.scroll { overflow-x: auto; max-width: 100%; }
.notes { color: var(--muted); font-size: 12px; margin: 2px 0 10px 18px; }
.unavailable { color: #8a6d3b; background: #fcf8e3; padding: 4px 8px; display: inline-block; }
figure { display: inline-block; margin: 8px 14px 8px 0; vertical-align: top; max-width: 100%; }
figcaption { color: var(--muted); font-size: 11.5px; max-width: 520px; }
svg.plot { background: #fff; max-width: 100%; height: auto; }
dl.params { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; font-size: 13px; }
dl.params dt { color: var(--muted); } dl.params dd { margin: 0; }
.controls { display: flex; flex-wrap: wrap; gap: 12px; align-items: center; margin: 10px 0;
  padding: 8px; background: #f4f6f9; border: 1px solid var(--line); }
.controls label { font-size: 13px; } .controls select, .controls input { font-size: 13px; }
#browser-status { font-weight: bold; margin: 6px 0; }
article.sample { border: 1px solid var(--line); border-left: 6px solid #999; padding: 8px 12px; margin: 10px 0; }
article.sample.cat-temporally_grounded { border-left-color: #2ca02c; }
article.sample.cat-visual_bias { border-left-color: #d62728; }
article.sample.cat-frame_agnostic { border-left-color: #4c78a8; }
article.sample.cat-trivial { border-left-color: #9e9e9e; }
.sample .head { display: flex; flex-wrap: wrap; gap: 12px; align-items: baseline; }
.sample .sid { font-family: ui-monospace, Menlo, monospace; font-size: 12.5px; }
.badge { display: inline-block; padding: 1px 7px; border-radius: 9px; font-size: 11.5px; color: #fff; background: #999; }
.badge.cat-temporally_grounded { background: #2ca02c; } .badge.cat-visual_bias { background: #d62728; }
.badge.cat-frame_agnostic { background: #4c78a8; } .badge.cat-trivial { background: #9e9e9e; }
.badge.cat-incomplete { background: #bbb; color: #333; }
.question { font-size: 14.5px; margin: 6px 0; white-space: pre-wrap; }
ol.options { margin: 4px 0 8px; padding-left: 26px; list-style: upper-alpha; }
ol.options li.correct { font-weight: bold; color: #1e7d1e; }
table.answers { border-collapse: collapse; font-size: 12px; margin: 6px 0; }
table.answers th, table.answers td { border: 1px solid var(--line); padding: 2px 6px; text-align: center; }
table.answers th.cond { text-align: left; font-weight: normal; font-family: ui-monospace, Menlo, monospace; }
td.ok { background: #e6f4e6; } td.wrong { background: #fbe9e9; } td.none { color: #aaa; }
.strip { margin: 6px 0; } .strip h4 { margin: 4px 0; font-size: 12.5px; }
.thumbs { display: flex; flex-wrap: wrap; gap: 4px; }
.thumb { font-size: 10px; color: var(--muted); text-align: center; }
.thumb img { display: block; border: 1px solid var(--line); }
.note { color: #8a6d3b; font-size: 12px; }
.pager button { margin: 0 4px; }
.summary-card { border: 1px solid var(--line); border-left: 6px solid var(--accent); background: #fafbfd;
  padding: 4px 16px 10px; margin: 10px 0 18px; max-width: 100%; overflow-wrap: anywhere; }
.summary-card h2 { margin-top: 8px; border: 0; }
.summary-card .bench { margin: 6px 0 10px; } .summary-card .big { font-size: 17px; font-weight: 600; }
.summary-card .bar { display: flex; height: 18px; width: 100%; max-width: 720px; margin: 4px 0;
  border: 1px solid var(--line); overflow: hidden; }
.summary-card .seg { display: block; height: 100%; }
.cat-temporally_grounded.seg, .sw.cat-temporally_grounded { background: #2ca02c; }
.cat-visual_bias.seg, .sw.cat-visual_bias { background: #d62728; }
.cat-frame_agnostic.seg, .sw.cat-frame_agnostic { background: #4c78a8; }
.cat-trivial.seg, .sw.cat-trivial { background: #9e9e9e; }
.summary-card .counts, .summary-card .how, .muted { color: var(--muted); font-size: 12.5px; }
.legend { display: flex; flex-wrap: wrap; gap: 4px 14px; font-size: 12px; }
.legend .sw { display: inline-block; width: 10px; height: 10px; margin-right: 4px; }
.extremes-row { display: flex; flex-wrap: wrap; gap: 4px 32px; }
.extremes ul { margin: 4px 0; padding-left: 18px; } .extremes li { margin: 2px 0; }
.mini { display: inline-flex; flex-wrap: wrap; gap: 2px; align-items: center; margin-left: 8px; font-size: 11px;
  color: var(--muted); } .mini img { width: 40px; height: auto; border: 1px solid var(--line); }
"""

JS = r"""
(function () {
  "use strict";
  var source = document.getElementById("tempcore-browser-data");
  if (!source) { return; }
  var data = JSON.parse(source.textContent);
  var rows = data.rows || [];
  var PAGE = 25;
  var LABELS = {trivial: "Trivial", frame_agnostic: "Frame-Agnostic", temporally_grounded: "Temporally Grounded",
                visual_bias: "Visual Bias", incomplete: "Incomplete", temporally_sensitive: "Temporally Sensitive",
                key: "Key", non_key: "Non-key", anti_key: "Anti-key", all: "all"};
  var LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
  var catSel = document.getElementById("f-category");
  var benchSel = document.getElementById("f-benchmark");
  var search = document.getElementById("f-search");
  var status = document.getElementById("browser-status");
  var list = document.getElementById("browser-list");
  var pager = document.getElementById("browser-pager");

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }
  function num(x) { return (x === null || x === undefined) ? "\u2013" : Number(x).toFixed(3); }
  function option(sel, value, label) { var o = el("option", null, label); o.value = value; sel.appendChild(o); }

  var benches = [];
  rows.forEach(function (r) { if (benches.indexOf(r.benchmark) < 0) { benches.push(r.benchmark); } });
  benches.sort();
  option(benchSel, "all", "all benchmarks");
  benches.forEach(function (b) { option(benchSel, b, b); });
  var CATEGORIES = ["all", "temporally_sensitive", "temporally_grounded", "visual_bias", "frame_agnostic",
                    "trivial", "incomplete", "key", "non_key", "anti_key"];
  var FSS_CATEGORIES = ["key", "non_key", "anti_key"];
  CATEGORIES.forEach(function (c) {
    option(catSel, c, FSS_CATEGORIES.indexOf(c) >= 0 ? LABELS[c] + " (FSS)" : LABELS[c]);
  });

  function parseHash() {
    var out = {};
    location.hash.replace(/^#/, "").split("&").forEach(function (part) {
      if (!part) { return; }
      var i = part.indexOf("=");
      var key = decodeURIComponent(i < 0 ? part : part.slice(0, i));
      var value = i < 0 ? "" : decodeURIComponent(part.slice(i + 1).replace(/\+/g, " "));
      out[key] = value;
    });
    return out;
  }
  // A filter value the page does not know matches nothing, and the status line says so (it never
  // falls back to showing everything).
  function current() {
    var h = parseHash();
    var unknown = [];
    var cat = h.filter || h.category || "all";
    if (CATEGORIES.indexOf(cat) < 0) {
      unknown.push("category \u201c" + cat + "\u201d is not one of " + CATEGORIES.join(", "));
      cat = "all";
    }
    var bench = h.benchmark || "all";
    if (bench !== "all" && benches.indexOf(bench) < 0) {
      unknown.push("benchmark \u201c" + bench + "\u201d is not in the browser (" + benches.join(", ") + ")");
      bench = "all";
    }
    var page = Math.max(1, parseInt(h.page || "1", 10) || 1);
    return {category: cat, benchmark: bench, q: h.q || "", page: page, unknown: unknown};
  }
  function writeHash(f) {
    var parts = [];
    if (f.category !== "all") { parts.push("filter=" + encodeURIComponent(f.category)); }
    if (f.benchmark !== "all") { parts.push("benchmark=" + encodeURIComponent(f.benchmark)); }
    if (f.q) { parts.push("q=" + encodeURIComponent(f.q)); }
    if (f.page > 1) { parts.push("page=" + f.page); }
    var hash = parts.length ? "#" + parts.join("&") : "";
    if (history.replaceState) { history.replaceState(null, "", hash || location.pathname + location.search); }
    else { location.hash = hash; }
  }
  function matches(r, f) {
    if (f.unknown && f.unknown.length) { return false; }
    if (FSS_CATEGORIES.indexOf(f.category) >= 0) {
      if (r.fss_category !== f.category) { return false; }
    } else if (f.category === "temporally_sensitive") {
      if (r.category !== "temporally_grounded" && r.category !== "visual_bias") { return false; }
    } else if (f.category !== "all" && r.category !== f.category) { return false; }
    if (f.benchmark !== "all" && r.benchmark !== f.benchmark) { return false; }
    if (f.q) {
      var hay = (r.sample_id + " " + (r.question || "") + " " + (r.options || []).join(" ")).toLowerCase();
      if (hay.indexOf(f.q.toLowerCase()) < 0) { return false; }
    }
    return true;
  }

  function answersTable(r) {
    var models = [], conds = [], cells = {}, labels = {};
    (r.cells || []).forEach(function (c) {
      if (models.indexOf(c.model) < 0) { models.push(c.model); }
      if (conds.indexOf(c.condition) < 0) { conds.push(c.condition); }
      cells[c.condition + "\u0000" + c.model] = c;
      labels[c.condition] = c.condition_label || c.condition;
    });
    models.sort();
    var t = el("table", "answers");
    var head = el("tr");
    head.appendChild(el("th", null, "condition \\ model"));
    models.forEach(function (m) { head.appendChild(el("th", null, m)); });
    t.appendChild(head);
    conds.forEach(function (cond) {
      var tr = el("tr");
      var th = el("th", "cond", labels[cond]);
      th.title = cond;
      th.setAttribute("data-condition", cond);
      tr.appendChild(th);
      models.forEach(function (m) {
        var c = cells[cond + "\u0000" + m];
        if (!c) { tr.appendChild(el("td", "none", "\u00b7")); return; }
        var text = c.strategy === "oracle" ? (c.correct ? "\u2713 " : "\u2717 ") + (c.detail || "")
                 : (c.answer === null ? (c.parse_error ? "parse failure" : "?") : c.answer) + (c.correct ? " \u2713" : " \u2717");
        var td = el("td", c.correct ? "ok" : "wrong", text);
        if (c.response) { td.title = c.response; }
        tr.appendChild(td);
      });
      t.appendChild(tr);
    });
    return t;
  }

  function strip(name, s) {
    var box = el("div", "strip");
    var count = (s.indices || []).length;
    box.appendChild(el("h4", null, name + " frames (" + count + ")"));
    if (s.note) { box.appendChild(el("div", "note", s.note)); }
    var thumbs = el("div", "thumbs");
    (s.indices || []).forEach(function (idx, i) {
      var f = el("div", "thumb");
      var src = s.thumbs && s.thumbs[i];
      if (typeof src === "string" && src.indexOf("data:image/jpeg;base64,") === 0) {
        var img = el("img");
        img.src = src;
        img.alt = name + " frame " + idx;
        f.appendChild(img);
      }
      var t = s.timestamps && s.timestamps[i];
      f.appendChild(el("span", null, (t === null || t === undefined ? "?" : Number(t).toFixed(2)) + " s \u00b7 #" + idx));
      thumbs.appendChild(f);
    });
    box.appendChild(thumbs);
    return box;
  }

  function card(r) {
    var a = el("article", "sample cat-" + r.category);
    a.setAttribute("data-category", r.category);
    a.setAttribute("data-benchmark", r.benchmark);
    a.setAttribute("data-sample-id", r.sample_id);
    var head = el("div", "head");
    head.appendChild(el("span", "badge cat-" + r.category, LABELS[r.category] || r.category));
    head.appendChild(el("span", null, r.benchmark));
    head.appendChild(el("span", "sid", r.sample_id));
    head.appendChild(el("span", null, "FSS " + num(r.fss) + " (" + (LABELS[r.fss_category] || r.fss_category) + ")"));
    head.appendChild(el("span", null, "LIS " + num(r.lis)));
    a.appendChild(head);
    if (r.question !== null && r.question !== undefined) {
      a.appendChild(el("p", "question", r.question));
      var ol = el("ol", "options");
      (r.options || []).forEach(function (o, i) {
        var li = el("li", i === r.answer ? "correct" : null, o + (i === r.answer ? "  \u2713 correct" : ""));
        ol.appendChild(li);
      });
      a.appendChild(ol);
      if (r.video) {
        var v = "video: " + r.video + (r.segment ? " [" + r.segment[0] + " s, " + r.segment[1] + " s]" : "");
        a.appendChild(el("div", "note", v));
      }
    } else {
      a.appendChild(el("p", "note", "question not available (no annotations for this sample)"));
    }
    a.appendChild(answersTable(r));
    var frames = r.frames || {};
    if (frames.maxprob) { a.appendChild(strip("MaxProb", frames.maxprob)); }
    if (frames.minprob) { a.appendChild(strip("MinProb", frames.minprob)); }
    if (r.video_note) { a.appendChild(el("div", "note", r.video_note)); }
    return a;
  }

  function render() {
    var f = current();
    catSel.value = f.category;
    benchSel.value = f.benchmark;
    if (document.activeElement !== search) { search.value = f.q; }
    var hits = rows.filter(function (r) { return matches(r, f); });
    var pages = Math.max(1, Math.ceil(hits.length / PAGE));
    var page = Math.min(f.page, pages);
    var first = (page - 1) * PAGE;
    var shown = hits.slice(first, first + PAGE);
    while (list.firstChild) { list.removeChild(list.firstChild); }
    shown.forEach(function (r) { list.appendChild(card(r)); });
    var text = hits.length
      ? "Showing " + (first + 1) + "\u2013" + (first + shown.length) + " of " + hits.length + " matching samples"
      : "No sample matches" + (f.unknown.length ? ": the link's " + f.unknown.join("; and its ") : "");
    text += " (category: " + LABELS[f.category] + "; benchmark: " + f.benchmark + (f.q ? "; text: " + f.q : "") +
            "; " + rows.length + " samples in the browser)";
    status.textContent = text;
    status.setAttribute("data-matching", String(hits.length));
    status.setAttribute("data-shown", String(shown.length));
    status.setAttribute("data-filter", f.category);
    status.setAttribute("data-benchmark", f.benchmark);
    status.setAttribute("data-unknown", String(f.unknown.length));
    while (pager.firstChild) { pager.removeChild(pager.firstChild); }
    if (pages > 1) {
      var prev = el("button", null, "\u2190 previous"); prev.disabled = page <= 1;
      var next = el("button", null, "next \u2192"); next.disabled = page >= pages;
      prev.onclick = function () { f.page = page - 1; writeHash(f); render(); };
      next.onclick = function () { f.page = page + 1; writeHash(f); render(); };
      pager.appendChild(prev); pager.appendChild(el("span", null, "page " + page + " of " + pages)); pager.appendChild(next);
    }
  }
  function fromControls() {
    writeHash({category: catSel.value, benchmark: benchSel.value, q: search.value.trim(), page: 1});
    render();
  }
  catSel.addEventListener("change", fromControls);
  benchSel.addEventListener("change", fromControls);
  search.addEventListener("input", fromControls);
  // A link with a filter opens at the browser, not at the top of the report.
  function toBrowser() {
    if (!location.hash || location.hash === "#" || location.hash === "#browser") { return; }
    var section = document.getElementById("browser");
    if (section && section.scrollIntoView) { section.scrollIntoView(); }
    status.setAttribute("data-scrolled", String(Math.round(window.pageYOffset || 0)));
  }
  window.addEventListener("hashchange", function () { render(); toBrowser(); });
  render();
  toBrowser();
})();
"""
