"""The overview's band charts with little data, in headless Chromium: one, two and ninety periods.

The web app's own modules and stylesheets (frontend/, served as the gateway serves them: same
files, same origin) draw the figures of a `/v1/metrics` reply in the overview's grid of cards,
at the width the overview passes. The time axis must span the periods the API returned (not
years wide with a lone point pinned to the left edge) and no canvas, grid line or label may run
out of its card, on a wide and on a narrow window. No services are needed: the chart draws the
API's figures as given, so the test hands it API-shaped rows.
"""

from __future__ import annotations

import functools
import threading
from datetime import UTC, datetime, timedelta
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # a real browser process (Debian's Chromium)

FRONTEND = Path(__file__).resolve().parents[2] / "frontend"
HARNESS = "/__charts_little_data.html"
PERIOD_S = {"day": 86400, "week": 7 * 86400}
FIGURES = ["Mention rate", "Strong rate", "Descriptive rate", "Echo rate", "Confabulated rate",
           "Absent rate"]

# The overview's layout (pages.js): a grid of chart cards in <main>, each drawn at the width the
# overview computes from main's width; then the plot fits its card.
PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>charts</title>
<link rel="stylesheet" href="/vendor/uplot-1.6.32/uPlot.min.css">
<link rel="stylesheet" href="/styles.css"></head>
<body><main id="app"></main>
<script type="module">
import { bandChart } from "/chart.js";
window.drawOverview = (rows, period, figures) => {
  const main = document.getElementById("app");
  main.replaceChildren();
  const grid = document.createElement("div");
  grid.className = "charts";
  main.append(grid);
  const width = Math.max(280, Math.min(420, Math.floor((main.clientWidth || 860) / 2) - 40));
  window.plots = figures.map((label, i) => {
    const series = { x: [], value: [], low: [], high: [], n: [] };
    for (const row of rows) {  // the API's figure as given: nothing recomputed
      const rate = row.figures[i];
      series.x.push(Math.floor(Date.parse(row.period_start) / 1000));
      series.value.push(rate.n > 0 ? rate.value : null);
      series.low.push(rate.n > 0 ? rate.ci95_low : null);
      series.high.push(rate.n > 0 ? rate.ci95_high : null);
      series.n.push(rate.n);
    }
    const { card, plot } = bandChart(label, series, { period, width });
    grid.append(card);
    return plot;
  });
};
window.chartsReady = true;
</script></body></html>
"""

# Per card: the x scale, the first and last period's place on the plot, and every element that
# sticks out of the card (its box, and the canvas's drawing buffer).
MEASURE = """
const out = [];
document.querySelectorAll("figure.chart").forEach((card, i) => {
  const plot = window.plots[i];
  const box = card.getBoundingClientRect();
  const over = [];
  card.querySelectorAll("*").forEach((node) => {
    const r = node.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) return;
    if (r.left < box.left - 0.5 || r.right > box.right + 0.5)
      over.push(`${node.tagName.toLowerCase()}.${node.className}: ${r.left.toFixed(1)}-${r.right.toFixed(1)}`);
  });
  const canvas = card.querySelector("canvas");
  const xs = plot.data[0];
  out.push({
    min: plot.scales.x.min, max: plot.scales.x.max,
    first: xs[0], last: xs[xs.length - 1],
    firstPos: plot.valToPos(xs[0], "x"), lastPos: plot.valToPos(xs[xs.length - 1], "x"),
    plotWidth: plot.bbox.width / devicePixelRatio,
    card: [box.left, box.right], canvasCss: canvas.getBoundingClientRect().width,
    canvasPx: canvas.width / devicePixelRatio, over,
  });
});
return { cards: out, pageOverflow: document.documentElement.scrollWidth - document.documentElement.clientWidth };
"""


@pytest.fixture(scope="module")
def app_files():
    """frontend/ over HTTP on 127.0.0.1 (the gateway serves the same files), plus the page."""

    class Handler(SimpleHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            if self.path == HARNESS:
                body = PAGE.encode()
                self.send_response(200)
                self.send_header("content-type", "text/html; charset=utf-8")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            super().do_GET()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(FRONTEND)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _rows(periods: int, period: str) -> list[dict]:
    """A `/v1/metrics` reply's rows: consecutive periods up to the current one, each figure with
    its value, 95 % interval and n; every third period of a long range has no data (n = 0)."""
    step = timedelta(seconds=PERIOD_S[period])
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    start = today - timedelta(days=today.weekday()) if period == "week" else today
    rows = []
    for k in range(periods):
        n = 0 if periods > 2 and k % 3 == 2 else 5 + k % 7
        value = (k % 5 + 1) / 6
        rows.append({"period_start": (start - step * (periods - 1 - k)).isoformat().replace("+00:00", "Z"),
                     "figures": [{"n": n, "value": value, "ci95_low": value / 2,
                                  "ci95_high": min(1.0, value * 1.4)} for _ in FIGURES]})
    return rows


@pytest.mark.timeout(300)
@pytest.mark.parametrize("window_width", [1280, 560])
@pytest.mark.parametrize("periods,period", [(1, "week"), (2, "week"), (90, "day")])
def test_the_axis_spans_the_data_and_nothing_leaves_its_card(browser, app_files, periods, period,
                                                           window_width, tmp_path):
    d = browser
    d.set_window_size(window_width, 1000)
    d.get(app_files + HARNESS)
    d.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "(function wait() { window.chartsReady ? done() : setTimeout(wait, 20); })();")
    d.execute_script("window.drawOverview(arguments[0], arguments[1], arguments[2])",
                     _rows(periods, period), period, FIGURES)
    # Two frames: the plot refits to its card when the card is laid out (ResizeObserver).
    d.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(done, 50)));")
    seen = d.execute_script(MEASURE)
    assert d.save_screenshot(str(tmp_path / f"charts-{periods}-{period}-{window_width}px.png"))
    step = PERIOD_S[period]
    assert len(seen["cards"]) == len(FIGURES)
    assert seen["pageOverflow"] <= 0, f"the page scrolls sideways by {seen['pageOverflow']} px"
    for card in seen["cards"]:
        span = card["max"] - card["min"]
        data_span = card["last"] - card["first"]
        # The axis holds every period the API returned, with at most a period's margin (and at
        # least three periods wide): not years.
        assert card["min"] <= card["first"] and card["last"] <= card["max"], card
        assert span <= max(3 * step, data_span + step) + 1, (
            f"{periods} {period}(s): the axis spans {span / 86400:.1f} days for "
            f"{data_span / 86400:.1f} days of data")
        # The periods sit inside the plot, the first not pinned to its left edge, a lone one
        # in the middle.
        width = card["plotWidth"]
        assert 0 < card["firstPos"] <= card["lastPos"] < width, card
        if periods == 1:
            assert 0.35 * width < card["firstPos"] < 0.65 * width, card
        # Nothing leaves the card: the canvas (its box and what it draws on), every element.
        assert not card["over"], "\n".join(card["over"])
        left, right = card["card"]
        assert card["canvasCss"] <= right - left and card["canvasPx"] <= right - left, card
