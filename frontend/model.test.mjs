// node --test frontend/   — the pure helpers of the auditor's pages.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import {
  agreementRows, decidedByText, durationText, kappaText, pendingText, sampleText,
} from "./model.js";
import {
  asOfParam, errorField, figureSeries, fromParam, highlightSegments, markdownBlocks, methodologySource, metricsQuery,
  overviewParams, queryString, rateText, segmentValues, sourceTotals, splitList, stateText, toParam, validityText,
} from "./model.js";
import { buildMarks, meanPositionText, methodView, positionSeries, positionText } from "./model.js";

const rate = (successes, n) => ({ value: n ? successes / n : null, successes, n, ci95_low: null, ci95_high: null });
const row = (engine, day, s, n) => ({
  brand_id: "b", engine, period_start: `${day}T00:00:00Z`, n, refused: 1, pending: 0, counts: {},
  citation_rate: rate(s, n), share_of_voice: rate(s, n + 2), confabulation_rate: rate(0, n), echo_rate: rate(0, n), absent_rate: rate(n - s, n), score: rate(s * 0.75, n),
});

test("the overview asks for the figures on screen: one query for the API and the export", () => {
  const params = overviewParams({ brandId: "b", period: "day", from: "2026-01-01", to: "2026-01-02", engine: "all", segment: { branded: "true", topic: "safety", persona: "" } });
  assert.equal(metricsQuery(params), "?period=day&brand_id=b&from=2026-01-01T00%3A00%3A00Z&to=2026-01-03T00%3A00%3A00Z&branded=true&topic=safety&group_by=");
  const one = overviewParams({ brandId: "b", period: "week", from: "", to: "", engine: "chatgpt", segment: {} });
  assert.equal(metricsQuery({ ...one, format: "csv" }), "?period=week&brand_id=b&engine=chatgpt&format=csv&group_by=");
  assert.equal(metricsQuery({ period: "day" }), "?period=day");
});

test("segments and sources come from the API as given (nothing summed in the page)", () => {
  const response = { segment_values: { engine: ["a", "b"], branded: ["false", "true"], topic: [] } };
  assert.deepEqual(segmentValues(response, "branded"), ["false", "true"]);
  assert.deepEqual(segmentValues(response, "persona"), []);
  assert.deepEqual(segmentValues(null, "engine"), []);
  const owned = { ...rate(3, 14), underpowered: true };
  const total = { source_share: { answers: 14, prompts: 3, owned, competitor: rate(0, 14), third_party: rate(11, 14) }, top_domains: [{ domain: "w.example", answers: 7, label: "third_party" }] };
  const totals = sourceTotals(total);
  assert.equal(totals.answers, 14);
  assert.equal(totals.shares[0][1], owned);
  assert.deepEqual(totals.domains.map((d) => [d.domain, d.answers]), [["w.example", 7]]);
  assert.equal(sourceTotals(undefined).answers, 0);
});

test("figure series: gaps (null) where n = 0, never a made-up 0", () => {
  const s = figureSeries([row("a", "2026-01-01", 0, 0), row("a", "2026-01-02", 2, 4)], "citation_rate");
  assert.deepEqual(s.value, [null, 0.5]);
  assert.deepEqual(s.n, [0, 4]);
  assert.equal(s.x[1] - s.x[0], 86400);
  assert.equal(rateText({ n: 0, value: null }), "no data (n = 0)");
  assert.equal(rateText({ n: 10, value: 0.8, ci95_low: 0.490162, ci95_high: 0.943318 }), "80.0 % (95 % CI 49.0–94.3 %, n = 10)");
  assert.deepEqual(s.underpowered, [false, false]);
});

test("underpowered cells: marked in the series and labelled in the text, as the API said", () => {
  const weak = { ...row("a", "2026-01-02", 2, 4), citation_rate: { ...rate(2, 4), ci95_low: 0.150039, ci95_high: 0.849961, underpowered: true } };
  const s = figureSeries([row("a", "2026-01-01", 1, 40), weak], "citation_rate");
  assert.deepEqual(s.underpowered, [false, true]);
  assert.equal(rateText(weak.citation_rate), "underpowered (n = 4): 50.0 % (95 % CI 15.0–85.0 %, n = 4)");
  assert.equal(rateText({ value: 0.5, n: 4, ci95_low: null, ci95_high: null, underpowered: true }), "underpowered (n = 4): 50.0 % (95 % CI –––, n = 4)");
});

test("dates: the inclusive 'to' day is the API's exclusive next midnight", () => {
  assert.equal(fromParam("2026-02-28"), "2026-02-28T00:00:00Z");
  assert.equal(toParam("2026-02-28"), "2026-03-01T00:00:00Z");
  assert.equal(toParam("2026-12-31"), "2027-01-01T00:00:00Z");
  assert.equal(fromParam("28/02/2026"), null);
  assert.equal(asOfParam("2026-02-28T10:30"), "2026-02-28T10:30:00Z");
  assert.equal(asOfParam(""), null);
  assert.equal(queryString({ a: "x y", b: "", c: null, d: 0 }), "?a=x+y&d=0");
});

test("forms: lists split on lines or commas; the API's error names its field", () => {
  assert.deepEqual(splitList(" a.example\n\nb.example, c.example "), ["a.example", "b.example", "c.example"]);
  assert.equal(errorField({ error: { code: "invalid_request", reason: "body.domains.0: String should match pattern" } }), "domains");
  assert.equal(errorField({ error: { code: "conflict", reason: "brand id taken" } }), null);
  assert.equal(errorField(null), null);
});

test("answer highlights: links and whole-word mentions; the pieces give the text back", () => {
  const text = "Acme (acme.example) beats Acmeville; see https://acme.example/about. ACME!";
  const segs = highlightSegments(text, ["Acme", "acme.example"]);
  assert.equal(segs.map((s) => s.text).join(""), text);
  assert.deepEqual(segs.filter((s) => s.kind).map((s) => [s.kind, s.text]), [
    ["mention", "Acme"], ["mention", "acme.example"], ["link", "https://acme.example/about."], ["mention", "ACME"],
  ].map(([k, t]) => [k, t === "https://acme.example/about." ? "https://acme.example/about." : t]));
  assert.deepEqual(highlightSegments("", ["x"]), []);
  assert.deepEqual(highlightSegments("a.b", ["a.b", "(", ""]).map((s) => s.kind), ["mention"]);
});

test("state text: class with who decided, or the status", () => {
  assert.equal(stateText({ status: "classified", citation_class: "ECHO", decided_by: "judge", judge_model: "m1" }), "ECHO (judge: m1)");
  assert.equal(stateText({ status: "classified", citation_class: "STRONG", decided_by: "deterministic" }), "STRONG (deterministic)");
  assert.equal(stateText({ status: "pending" }), "pending");
  assert.equal(validityText({ active: true, recorded_at: "2026-12-01T00:00:00Z" }), "active since 2026-12-01T00:00:00Z");
  assert.equal(validityText({ active: false, recorded_at: "2026-12-01T00:00:00Z", superseded_at: "2026-12-03T10:00:00Z" }),
    "2026-12-01T00:00:00Z → 2026-12-03T10:00:00Z (superseded)");
});

test("methodology: docs/metrics.md reads into headings, tables and code; no links survive", () => {
  const md = readFileSync(new URL("./methodology.md", import.meta.url), "utf8");
  const blocks = markdownBlocks(methodologySource(md));
  assert.ok(!methodologySource(md).includes("Prometheus `GET /metrics`\n\nThe classifier"));
  const tables = blocks.filter((b) => b.type === "table");
  assert.ok(tables.length >= 1);
  const names = tables[0].rows.map((r) => r[0].map((s) => s.text).join(""));
  assert.deepEqual(names, ["citation rate", "share of voice", "confabulation rate", "echo rate", "absent rate", "Attesta score"]);
  assert.ok(blocks.some((b) => b.type === "code" && b.text.includes("centre = ")));
  const link = markdownBlocks("see [the code](javascript:alert%281%29) now")[0].inline;
  assert.deepEqual(link.map((s) => s.text).join(""), "see the code now");
});

test("review queue: waiting times, the queue's size and the sample in words", () => {
  assert.deepEqual([0, 59, 60, 3599, 3600, 3660, 86400, 90000].map(durationText),
    ["0 s", "59 s", "1 min", "59 min", "1 h", "1 h 1 min", "1 d", "1 d 1 h"]);
  assert.equal(durationText(null), "unknown");
  assert.equal(durationText(-1), "unknown");
  assert.equal(pendingText({ pending: 0, oldest_pending_age_s: null }), "No pair is pending review.");
  assert.equal(pendingText({ pending: 1, oldest_pending_age_s: 42 }), "1 pair is pending review (the oldest waiting 42 s).");
  assert.equal(pendingText({ pending: 3, oldest_pending_age_s: 7300 }), "3 pairs are pending review (the oldest waiting 2 h 1 min).");
  assert.equal(sampleText({ sample_open: 2, sample_share: 0.05 }), "2 judge labels wait for a blind review (5 % of the judge's labels are drawn).");
  assert.equal(sampleText({ sample_open: 1, sample_share: 1 }), "1 judge label waits for a blind review (100 % of the judge's labels are drawn).");
});

test("agreement: kappa and the per-class rows, as the API computed them", () => {
  assert.equal(kappaText(0.677419), "0.68");
  assert.equal(kappaText(0), "0.00");
  assert.equal(kappaText(null), "undefined");
  const precision = { value: 0.8, successes: 4, n: 5, ci95_low: 0.375535, ci95_high: 0.963776 };
  const rows = agreementRows({ per_class: [
    { citation_class: "DESCRIPTIVE", judge_n: 5, human_n: 5, agreed: 4, precision },
    { citation_class: "STRONG", judge_n: 0, human_n: 1, agreed: 0, precision: { value: null, successes: 0, n: 0 } },
  ] });
  assert.deepEqual(rows, [["DESCRIPTIVE", "5", "4", "80.0 % (95 % CI 37.6–96.4 %, n = 5)"]]);
  assert.deepEqual(agreementRows(null), []);
});

test("decided by: a person's label names its reviewer", () => {
  assert.equal(decidedByText({ decided_by: "human", reviewer: "Ana Lúcia" }), "human (Ana Lúcia)");
  assert.equal(decidedByText({ decided_by: "judge", reviewer: null }), "judge");
  assert.equal(decidedByText({ decided_by: "deterministic" }), "deterministic");
  assert.equal(decidedByText(null), "");
});

test("position: the API's figures drawn as given, and each brand's place in one answer", () => {
  const first = { value: 0.5, successes: 2, n: 4, ci95_low: 0.15, ci95_high: 0.85, underpowered: true };
  const rows = [{ period_start: "2026-01-01T00:00:00Z" }, { period_start: "2026-01-02T00:00:00Z", position: { first, mean: { value: 1.25, n: 3, ci95_low: 1, ci95_high: 2 } } }];
  const s = positionSeries(rows, "first");
  assert.deepEqual(s.value, [null, 0.5]);
  assert.deepEqual([s.low[1], s.high[1], s.n[1], s.underpowered[1]], [0.15, 0.85, 4, true]);
  assert.equal(meanPositionText(rows[1].position.mean), "1.25 (95 % CI 1.00–2.00, n = 3 answers naming the brand)");
  assert.equal(meanPositionText(null), "no data (n = 0)");
  assert.equal(positionText({ status: "classified", position: 2, named_order: ["b", "a", "c"] }), "2nd of 3 named");
  assert.equal(positionText({ status: "classified", position: 11, named_order: [] }), "11th of 0 named");
  assert.equal(positionText({ status: "classified", position: null, named_order: ["b"] }), "not named");
  assert.equal(positionText({ status: "classified", position: null, named_order: null }), "not computed");
  assert.equal(positionText({ status: "pending" }), "not computed");
});

test("collection method: one method's rows as the API split them, and build changes as marks", () => {
  const r = (method, n) => ({ brand_id: "b", period_start: "2026-01-01T00:00:00Z", collection_method: method, n });
  const response = { rows: [r("api", 7), r("api_with_search", 3), r(null, 1), { ...r("api", 9), brand_id: "x" }], totals: [r("api", 7), r("api_with_search", 3), r(null, 1)] };
  const v = methodView(response, "b", "");
  assert.deepEqual([v.method, v.split, v.rows.length, v.rows[0].n, v.total.n], ["api", true, 1, 7, 7]);
  assert.deepEqual(v.methods, ["api", "api_with_search", null]);
  const asked = methodView(response, "b", "any");
  assert.deepEqual([asked.method, asked.split, asked.rows.length], ["any", false, 3]);
  const one = methodView({ rows: [r(null, 2)], totals: [r(null, 2)] }, "b", "");
  assert.deepEqual([one.method, one.split, one.rows.length], [null, false, 1]);
  const changes = [{ engine: "e1", day: "2026-12-01", model_build: { model: "m2", system_fingerprint: "fp_b" }, previous: { model: "m1", system_fingerprint: null } }];
  assert.deepEqual(buildMarks(changes, "all"), [{ x: Date.UTC(2026, 11, 1) / 1000, label: "2026-12-01 e1: model build m2 · fp_b (was m1)" }]);
  assert.deepEqual(buildMarks(changes, "e2"), []);
});
