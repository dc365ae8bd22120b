// One figure over time with its 95 % interval drawn as a band (uPlot, vendored in vendor/).
// Hovering a period shows its value, interval and n in a readout line under the chart.

import uPlot from "./vendor/uplot-1.6.32/uPlot.esm.js";
import { el } from "./dom.js";

const pct = (v) => (v === null || v === undefined ? "–" : `${(v * 100).toFixed(1)} %`);

function periodLabel(seconds, period) {
  const iso = new Date(seconds * 1000).toISOString();
  if (period === "month") return iso.slice(0, 7);
  return period === "week" ? `week of ${iso.slice(0, 10)}` : iso.slice(0, 10);
}

/** A chart card: title, the plot (a labelled figure), and the hover readout. */
export function bandChart(title, series, { period, width }) {
  const readout = el("p", { attrs: { class: "readout small", "aria-live": "polite" } });
  const plotBox = el("div", { attrs: { class: "plot", role: "img", "aria-label": `${title} over time with its 95 % interval band` } });
  const card = el("figure", {
    attrs: { class: "card chart", "data-figure": title },
    children: [el("figcaption", { text: title }), plotBox, readout],
  });
  const points = series.value.filter((v) => v !== null).length;
  const describe = (i) => {
    if (i === null || i === undefined || i < 0 || i >= series.x.length) {
      readout.textContent = points ? `${points} period(s) with data; hover for n and the interval.` : "No classified runs in this range.";
      return;
    }
    const n = series.n[i];
    readout.textContent = n > 0
      ? `${periodLabel(series.x[i], period)}: ${pct(series.value[i])}, 95 % interval ${pct(series.low[i])}–${pct(series.high[i])}, n = ${n}`
      : `${periodLabel(series.x[i], period)}: no data (n = 0)`;
  };
  describe(null);
  const opts = {
    width, height: 180,
    legend: { show: false },
    cursor: { drag: { x: false, y: false } },
    scales: { x: { time: true }, y: { range: [0, 1] } },
    axes: [{}, { values: (u, splits) => splits.map((v) => `${Math.round(v * 100)}%`), size: 50 }],
    series: [
      {},
      { label: title, stroke: "#1f5fbf", width: 2, points: { show: true, size: 5 } },
      { label: "95 % low", stroke: "rgba(31,95,191,0.35)", width: 1 },
      { label: "95 % high", stroke: "rgba(31,95,191,0.35)", width: 1 },
    ],
    bands: [{ series: [3, 2], fill: "rgba(31,95,191,0.15)" }],
    hooks: { setCursor: [(u) => describe(u.cursor.idx)] },
  };
  const plot = new uPlot(opts, [series.x, series.value, series.low, series.high], plotBox);
  return { card, plot };
}
