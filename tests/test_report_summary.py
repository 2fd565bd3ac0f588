"""The report leads with its answer (issue 30, item 4): a summary card (TPI with its bootstrap
interval, the category shares as a stacked bar, the counts, the scoring, the panel, the most Key
and Anti-key samples with their frames) before the tables; the parameters at the end, readable
(an unset encoder filter names the encoders of the predictions, never ``None``); column names that
wrap so the tables fit the page."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from test_report import make_inputs, run_report


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("summary")
    paths = make_inputs(root / "in")
    table = pq.read_table(paths["predictions"])
    scored = [s in ("maxprob", "minprob") for s in table.column("strategy").to_pylist()]
    table = table.append_column("encoder", pa.array(["enc-x" if s else None for s in scored], pa.string()))
    pq.write_table(table, paths["predictions"])
    assert run_report(paths, root / "out") == 0
    return root / "out"


def test_html_opens_with_the_summary_and_ends_with_the_parameters(out: Path) -> None:
    text = (out / "report.html").read_text(encoding="utf-8")
    card = text.index('id="summary"')
    assert card < text.index('id="s-profiles"') < text.index('id="browser"') < text.index('id="inputs"')
    summary = text[card:text.index('id="s-profiles"')]
    # alpha and beta: 3 of each category, TPI 6 / 9, with a bootstrap interval
    assert summary.count("TPI 0.667 [") == 2 and "95% bootstrap interval, 200 replicates" in summary
    assert summary.count('class="bar"') == 2 and summary.count('class="seg cat-') == 8
    assert "width:25.000%" in summary and "Temporally Grounded 3 (25%)" in summary
    assert "Scoring hard" in summary and "Panel (2 models): m1, m&lt;i&gt;2&lt;/i&gt;" in summary
    assert "Encoder: enc-x" in summary
    # the most Key samples (FSS +1: pattern 0) and Anti-key (FSS -1: pattern 1), with their frames
    assert "Most Key" in summary and "alpha_0" in summary and "FSS +1.000" in summary
    assert "Most Anti-key" in summary and "alpha_1" in summary and "FSS -1.000" in summary
    assert summary.count("data:image/jpeg;base64,") >= 6 * 2 * 4
    inputs = text[text.index('id="inputs"'):]
    assert "param " not in text and ">None<" not in inputs
    assert "<dt>encoder</dt><dd>all (enc-x)</dd>" in inputs
    assert "<dt>tau (FSS threshold)</dt><dd>0.15</dd>" in inputs


def test_markdown_opens_with_the_summary_and_ends_with_the_parameters(out: Path) -> None:
    md = (out / "report.md").read_text(encoding="utf-8")
    assert md.index("## Summary") < md.index("## Benchmark quality profiles") < md.index("## Inputs and parameters")
    assert md.rstrip().splitlines()[-1].startswith("- ")  # the parameters close the report
    summary = md[md.index("## Summary"):md.index("## Benchmark quality profiles")]
    assert "**alpha**: TPI 0.667 \\[" in summary and "Temporally Grounded 3 (25%)" in summary
    assert "encoder: enc-x" in summary and "Most Key (highest FSS): alpha_0 (alpha, FSS +1.000)" in summary
    params = md[md.index("## Inputs and parameters"):]
    assert "- encoder: all (enc-x)" in params and "param " not in md and "None" not in params


def test_long_column_names_can_wrap(out: Path) -> None:
    text = (out / "report.html").read_text(encoding="utf-8")
    assert "<th>temporally_<wbr>grounded_<wbr>fraction (%)</th>" in text
