"""Reading a saved HTML report in tests: the Vega-Lite spec of a chart, as the page holds it.

The page keeps each chart's spec as an inert JSON script (``<script type="application/json"
id="chart-N-spec">``) beside the chart's element (``<div id="chart-N" data-key="heatmap">``);
these helpers find one by its key without a browser.
"""

from __future__ import annotations

import json
from collections import Counter
from html.parser import HTMLParser
from typing import Any

__all__ = ["chart_spec", "heatmap_counts"]


class _Charts(HTMLParser):
    """The report's chart elements (data-key -> element id) and its JSON scripts by id."""

    def __init__(self) -> None:
        super().__init__()
        self.keys: dict[str, str] = {}
        self.scripts: dict[str, str] = {}
        self._open: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "div" and a.get("data-key") and a.get("id"):
            self.keys[str(a["data-key"])] = str(a["id"])
        if tag == "script" and a.get("type") == "application/json" and a.get("id"):
            self._open = str(a["id"])
            self.scripts[self._open] = ""

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self.scripts[self._open] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._open = None


def chart_spec(html: str, key: str) -> dict[str, Any]:
    """The spec of the chart whose data-key is ``key`` in the report page ``html``; an
    AssertionError naming the page's charts when it has none of that key."""
    charts = _Charts()
    charts.feed(html)
    assert key in charts.keys, sorted(charts.keys)
    spec: dict[str, Any] = json.loads(charts.scripts[charts.keys[key] + "-spec"])
    return spec


def heatmap_counts(html: str) -> Counter[str]:
    """Transactions per condition in the report's latency heatmap cells."""
    counts: Counter[str] = Counter()
    for rows in chart_spec(html, "heatmap")["datasets"].values():
        for row in rows:
            counts[row["condition"]] += row["count"]
    return counts
