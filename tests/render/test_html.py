"""The HTML page follows the measures a report holds: an extra MAP@10 is in the summary, the tests,
the chart and each case."""

from __future__ import annotations

import re

from ptah.render.html import render_html
from tests.render.reports import compared, report


def table(html: str, table_id: str) -> str:
    start = html.index(f'<table id="{table_id}">')
    return html[start : html.index("</table>", start) + len("</table>")]


def test_the_summary_has_a_map_at_10_column_with_its_means_and_deltas():
    summary = table(render_html(report(compared())), "summary")
    assert summary.startswith(
        '<table id="summary"><thead><tr><th>run</th><th class="l">channel</th><th>recall</th><th>Δ</th>'
        "<th>MRR</th><th>Δ</th><th>nDCG</th><th>Δ</th><th>MAP@10</th><th>Δ</th></tr></thead>"
    )
    assert (
        '<td class="" data-run="base" data-measure="MAP@10" data-field="mean" data-value="0.5" '
        'title="0.5000 / 1 cases">0.5000</td><td class="unclear">reference</td></tr>'
    ) in summary
    assert (
        '<td class="" data-run="worse" data-measure="MAP@10" data-field="mean" data-value="0.0" '
        'title="0.0000 / 1 cases">0.0000</td><td class="neg" data-run="worse" data-measure="MAP@10" '
        'data-field="delta" data-value="-0.5">-0.5000</td></tr></tbody></table>'
    ) in summary


def test_significance_chart_headlines_and_cases_name_map_at_10():
    html = render_html(report(compared()))
    assert (
        '<tr><td class="l">worse</td><td class="l">MAP@10</td><td class="neg">-0.5000</td><td>[-1.0000, +0.0000]</td>'
        '<td class="" data-run="worse" data-measure="MAP@10" data-field="p" data-value="0.5">0.5000</td>'
        '<td>0</td><td>1</td><td>1</td><td class="l worse">worse</td></tr>'
    ) in table(html, "significance")
    assert re.findall(
        r'<label><input type="radio" name="chart-measure" value="([^"]+)"[^>]*> ([^<]+)</label>',
        html,
    ) == [("recall", "recall"), ("mrr", "MRR"), ("ndcg", "nDCG"), ("MAP@10", "MAP@10")]
    assert '<div class="chart hidden" data-chart-measure="MAP@10">' in html
    assert (
        "<li>worse is worse than base on MAP@10 by 0.5000 (95% CI -1.0000..+0.0000, p = 0.5000; 0 cases better, "
        "1 worse, 1 tied)</li>"
    ) in html
    assert (
        "<tr><td></td><td>recall 1.0000 · MRR 0.5000 · nDCG 0.6309 · MAP@10 0.5000</td>"
        "<td>recall 0.0000 · MRR 0.0000 · nDCG 0.0000 · MAP@10 0.0000</td></tr>"
    ) in html
