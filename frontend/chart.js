// One figure over time with its 95 % interval drawn as a band (uPlot, vendored in vendor/).
// Hovering a period shows its value, interval and n in a readout line under the chart. The chart
// draws the API's figures as given (series from model.js figureSeries): it computes nothing.

import uPlot from "./vendor/uplot-1.6.32/uPlot.esm.js";
import { el } from "./dom.js";

const pct = (v) => (v === null || v === undefined ? "–" : `${(v * 100).toFixed(1)} %`);

const DAY_S = 86400;
const PERIOD_S = { day: DAY_S, week: 7 * DAY_S, month: 31 * DAY_S };
// The narrowest time axis, in periods: one period of data sits in the middle of three.
const MIN_SPAN_PERIODS = 3;

/**
 * The time axis for the periods the API returned: from half a period before the first to half a
 * period after the last, widened evenly to at least MIN_SPAN_PERIODS. (uPlot's own range for a
 * single x value runs years wide, with the point pinned to the left edge.)
 */
export function timeRange(xs, period) {
  const step = PERIOD_S[period] || DAY_S;
  const known = xs.filter((x) => Number.isFinite(x));
  const first = known.length ? Math.min(...known) : Math.floor(Date.now() / 1000);
  const last = known.length ? Math.max(...known) : first;
  let lo = first - step / 2;
  let hi = last + step / 2;
  const missing = MIN_SPAN_PERIODS * step - (hi - lo);
  if (missing > 0) {
    lo -= missing / 2;
    hi += missing / 2;
  }
  return [lo, hi];
}

const HATCH = "rgba(110,110,110,0.55)";

/** Grey diagonal hatching over each underpowered period's column, inside the plot area only. */
function hatchUnderpowered(u, flags) {
  const { ctx, bbox } = u;
  const half = 7 * devicePixelRatio;
  ctx.save();
  ctx.beginPath();
  ctx.rect(bbox.left, bbox.top, bbox.width, bbox.height);
  ctx.clip();
  ctx.strokeStyle = HATCH;
  ctx.lineWidth = Math.max(1, devicePixelRatio);
  flags.forEach((under, i) => {
    if (!under) return;
    const cx = u.valToPos(u.data[0][i], "x", true);
    const left = Math.max(bbox.left, cx - half);
    const right = Math.min(bbox.left + bbox.width, cx + half);
    ctx.beginPath();
    for (let y = bbox.top - (right - left); y < bbox.top + bbox.height; y += 6 * devicePixelRatio) {
      ctx.moveTo(left, y + (right - left));
      ctx.lineTo(right, y);
    }
    ctx.stroke();
  });
  ctx.restore();
}

const MARK = "rgba(176,96,0,0.9)";

/** A dashed vertical line at each mark's day (a model build change, issue #25 item 4). */
function drawMarks(u, marks) {
  const { ctx, bbox } = u;
  ctx.save();
  ctx.strokeStyle = MARK;
  ctx.lineWidth = Math.max(1, devicePixelRatio);
  ctx.setLineDash([4 * devicePixelRatio, 3 * devicePixelRatio]);
  for (const mark of marks) {
    const x = u.valToPos(mark.x, "x", true);
    if (x < bbox.left || x > bbox.left + bbox.width) continue;
    ctx.beginPath();
    ctx.moveTo(x, bbox.top);
    ctx.lineTo(x, bbox.top + bbox.height);
    ctx.stroke();
  }
  ctx.restore();
}

function periodLabel(seconds, period) {
  const iso = new Date(seconds * 1000).toISOString();
  if (period === "month") return iso.slice(0, 7);
  return period === "week" ? `week of ${iso.slice(0, 10)}` : iso.slice(0, 10);
}

/**
 * A chart card: title, the plot (a labelled figure), and the hover readout. `width` is the first
 * draw's; once the card is on the page the plot takes its box's width (and follows it), so
 * neither the canvas nor its grid lines run out of the card.
 */
export function bandChart(title, series, { period, width, marks = [] }) {
  const readout = el("p", { attrs: { class: "readout small", "aria-live": "polite" } });
  const plotBox = el("div", { attrs: { class: "plot", role: "img", "aria-label": `${title} over time with its 95 % interval band` } });
  const card = el("figure", {
    attrs: { class: "card chart", "data-figure": title },
    children: [el("figcaption", { text: title }), plotBox, readout],
  });
  // A cell below the API's minimum sample (issue #25): its point is grey and hollow, its column
  // hatched, and it is listed under the chart as "underpowered (n = …)".
  const flags = series.x.map((_, i) => Boolean(series.underpowered && series.underpowered[i]) && series.value[i] !== null);
  const weak = flags.map((f, i) => (f ? i : -1)).filter((i) => i >= 0);
  const points = series.value.filter((v) => v !== null).length;
  const describe = (i) => {
    if (i === null || i === undefined || i < 0 || i >= series.x.length) {
      readout.textContent = points ? `${points} period(s) with data; hover for n and the interval.` : "No classified runs in this range.";
      return;
    }
    const n = series.n[i];
    readout.textContent = n > 0
      ? `${periodLabel(series.x[i], period)}: ${flags[i] ? `underpowered (n = ${n}): ` : ""}${pct(series.value[i])}, 95 % interval ${pct(series.low[i])}–${pct(series.high[i])}, n = ${n}`
      : `${periodLabel(series.x[i], period)}: no data (n = 0)`;
  };
  describe(null);
  if (weak.length) {
    card.setAttribute("data-underpowered", String(weak.length));
    card.append(el("ul", {
      attrs: { class: "underpowered small", "aria-label": `${title}: underpowered periods` },
      children: weak.map((i) => el("li", { text: `${periodLabel(series.x[i], period)}: underpowered (n = ${series.n[i]})` })),
    }));
  }
  // Days the engine's reported model build changed (the API's build_changes): a dashed line on
  // the plot and a line of text under it, so a move on that day is read with the change in mind.
  if (marks.length) {
    card.setAttribute("data-build-changes", String(marks.length));
    card.append(el("ul", {
      attrs: { class: "build-changes small", "aria-label": `${title}: model build changes` },
      children: marks.map((m) => el("li", { text: m.label })),
    }));
  }
  const opts = {
    width, height: 180,
    legend: { show: false },
    cursor: { drag: { x: false, y: false } },
    scales: { x: { time: true, range: () => timeRange(series.x, period) }, y: { range: [0, 1] } },
    axes: [{}, { values: (u, splits) => splits.map((v) => `${Math.round(v * 100)}%`), size: 50 }],
    series: [
      {},
      { label: title, stroke: "#1f5fbf", width: 2, points: { show: true, size: 5, filter: () => flags.map((f, i) => (f ? -1 : i)).filter((i) => i >= 0) } },
      { label: "95 % low", stroke: "rgba(31,95,191,0.35)", width: 1 },
      { label: "95 % high", stroke: "rgba(31,95,191,0.35)", width: 1 },
      { label: "underpowered", stroke: "#6e6e6e", fill: "#e4e4e4", paths: () => null, points: { show: true, size: 9, width: 2, stroke: "#6e6e6e", fill: "#e4e4e4" } },
    ],
    bands: [{ series: [3, 2], fill: "rgba(31,95,191,0.15)" }],
    hooks: { setCursor: [(u) => describe(u.cursor.idx)], draw: [(u) => hatchUnderpowered(u, flags), (u) => drawMarks(u, marks)] },
  };
  const plot = new uPlot(opts, [series.x, series.value, series.low, series.high, series.value.map((v, i) => (flags[i] ? v : null))], plotBox);
  new ResizeObserver(() => {
    const fit = Math.floor(plotBox.clientWidth);
    if (fit > 0 && fit !== plot.width) plot.setSize({ width: fit, height: plot.height });
  }).observe(plotBox);
  return { card, plot };
}
