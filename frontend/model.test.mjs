// node --test frontend/   — the pure helpers of the auditor's pages.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import {
  agreementRows, decidedByText, durationText, kappaText, pendingText, sampleText,
} from "./model.js";
import {
  allEnginesRows, asOfParam, errorField, figureSeries, fromParam, highlightSegments, markdownBlocks,
  methodologySource, queryString, rateText, scopeRows, segmentRows, segmentValues, sourceTotals, splitList, stateText, toParam, validityText, wilson,
} from "./model.js";

const close = (a, b) => Math.abs(a - b) < 5e-7;

test("wilson: the pinned values of docs/metrics.md (same as the classifier's tests)", () => {
  for (const [s, n, lo, hi] of [[81, 263, 0.255289, 0.36621], [8, 10, 0.490162, 0.943318], [0, 4, 0, 0.489891], [4, 8, 0.215216, 0.784784]]) {
    const [l, h] = wilson(s, n);
    assert.ok(close(l, lo) && close(h, hi), `${s}/${n}: ${l} ${h}`);
  }
  assert.deepEqual(wilson(0, 0), [null, null]);
  assert.equal(wilson(5, 5)[1], 1);
});

const rate = (successes, n) => ({ value: n ? successes / n : null, successes, n, ci95_low: null, ci95_high: null });
const row = (engine, day, s, n) => ({
  brand_id: "b", engine, period_start: `${day}T00:00:00Z`, n, refused: 1, pending: 0, counts: {},
  citation_rate: rate(s, n), share_of_voice: rate(s, n + 2), confabulation_rate: rate(0, n), echo_rate: rate(0, n), absent_rate: rate(n - s, n), score: rate(s * 0.75, n),
});

test("all engines: successes and n add up per period, the interval is recomputed", () => {
  const rows = [row("a", "2026-01-02", 3, 10), row("b", "2026-01-02", 5, 10), row("a", "2026-01-01", 1, 4)];
  const all = allEnginesRows(rows);
  assert.deepEqual(all.map((r) => r.period_start), ["2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"]);
  const jan2 = all[1];
  assert.equal(jan2.n, 20);
  assert.equal(jan2.refused, 2);
  assert.deepEqual([jan2.citation_rate.successes, jan2.citation_rate.n, jan2.citation_rate.value], [8, 20, 0.4]);
  assert.deepEqual([jan2.share_of_voice.successes, jan2.share_of_voice.n], [8, 24]);
  assert.deepEqual([jan2.citation_rate.ci95_low, jan2.citation_rate.ci95_high], wilson(8, 20));
  assert.equal(scopeRows(rows, "a").length, 2);
  assert.equal(scopeRows(rows, "a")[0].period_start, "2026-01-01T00:00:00Z");
});

test("segments: one engine's rows of a segment summed per period, with the source share and domains", () => {
  const share = (owned, n) => ({ answers: n, prompts: 1, owned: rate(owned, n), competitor: rate(0, n), third_party: rate(n - owned, n) });
  const seg = (engine, branded, topic, s, n, owned, domains) => ({
    ...row(engine, "2026-01-02", s, n), branded, topic, persona: null, funnel: null, source_share: share(owned, n), top_domains: domains,
  });
  const rows = [
    seg("a", true, "safety", 2, 4, 1, [{ domain: "k.example", answers: 1, label: "owned" }]),
    seg("a", false, "safety", 1, 6, 3, [{ domain: "k.example", answers: 3, label: "owned" }, { domain: "w.example", answers: 3, label: "third_party" }]),
    seg("a", false, null, 5, 5, 0, []),
    seg("b", false, "market", 0, 3, 0, [{ domain: "w.example", answers: 4, label: "third_party" }]),
  ];
  assert.deepEqual(segmentValues(rows, "topic"), ["market", "safety"]);
  assert.deepEqual(segmentValues(rows, "branded"), ["false", "true"]);
  assert.equal(segmentRows(rows, { branded: "false", topic: "" }).length, 3);
  const safety = scopeRows(segmentRows(rows, { topic: "safety" }), "a");
  assert.equal(safety.length, 1);
  assert.deepEqual([safety[0].citation_rate.successes, safety[0].citation_rate.n], [3, 10]);
  assert.deepEqual([safety[0].citation_rate.ci95_low, safety[0].citation_rate.ci95_high], wilson(3, 10));
  assert.deepEqual([safety[0].source_share.owned.successes, safety[0].source_share.owned.n], [4, 10]);
  const totals = sourceTotals(scopeRows(segmentRows(rows, { branded: "false" }), "all"));
  assert.equal(totals.answers, 14);
  assert.deepEqual(totals.domains.map((d) => [d.domain, d.answers]), [["w.example", 7], ["k.example", 3]]);
  assert.deepEqual(totals.shares.map(([k, r]) => [k, r.successes, r.n]), [["owned", 3, 14], ["competitor", 0, 14], ["third_party", 11, 14]]);
  assert.equal(sourceTotals([]).answers, 0);
});

test("figure series: gaps (null) where n = 0, never a made-up 0", () => {
  const s = figureSeries([row("a", "2026-01-01", 0, 0), row("a", "2026-01-02", 2, 4)], "citation_rate");
  assert.deepEqual(s.value, [null, 0.5]);
  assert.deepEqual(s.n, [0, 4]);
  assert.equal(s.x[1] - s.x[0], 86400);
  assert.equal(rateText({ n: 0, value: null }), "no data (n = 0)");
  assert.equal(rateText({ n: 10, value: 0.8, ci95_low: 0.490162, ci95_high: 0.943318 }), "80.0 % (95 % CI 49.0–94.3 %, n = 10)");
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
