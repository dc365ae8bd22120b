// Pure helpers of the auditor's pages: no DOM, no network, importable by node
// (`node --test frontend/`). The pages only draw what these functions return.

// -- metrics -------------------------------------------------------------------------------

export const FIGURES = [
  ["citation_rate", "Citation rate"],
  ["share_of_voice", "Share of voice"],
  ["confabulation_rate", "Confabulation rate"],
  ["echo_rate", "Echo rate"],
  ["absent_rate", "Absent rate"],
  ["score", "Attesta score"],
];

/**
 * What the overview asks the metrics for: no grouping, so the API returns one row per period of
 * the segment on screen — exactly the series the charts draw, every figure and interval
 * (Wilson and the prompt bootstrap) computed by the classifier (issue #27: the page sums and
 * recomputes nothing).
 */
export const OVERVIEW_GROUP_BY = "";

/**
 * The segments the overview can narrow to: [dimension, label]. "source" (issue #25 item 6): the
 * API leaves the ad-hoc chats with the assistant (source "assistant") out of the figures unless
 * asked; choosing that source shows them alone, as their own source.
 */
export const SEGMENTS = [["branded", "Prompts"], ["topic", "Topic"], ["persona", "Persona"], ["funnel", "Funnel stage"], ["source", "Source"]];

const SOURCE_LABELS = ["owned", "competitor", "third_party"];

/**
 * The query of the figures on screen — the same for `/v1/metrics` and `/v1/exports/metrics`:
 * the window, the engine ("all": any) and the segment ({branded: "true"|"false"|"", topic, …}).
 */
export function overviewParams({ brandId, period, from, to, engine, segment, method }) {
  const params = { period, brand_id: brandId, from: fromParam(from), to: toParam(to), group_by: OVERVIEW_GROUP_BY, engine: engine === "all" ? "" : engine };
  for (const [dim] of SEGMENTS) params[dim] = (segment && segment[dim]) || "";
  params.collection_method = method || "";
  return params;
}

/**
 * Which collection method's rows the overview draws (issue #25 item 4). Without a method asked
 * for, the API splits every row by method (it never averages across methods); the page then
 * shows one method's rows as they came — by default the method of the brand's largest totals row
 * — and says so. `method` "any" (every method together) or a method: the rows are already that.
 * Returns { method, split, rows, total, methods }.
 */
export function methodView(response, brandId, method) {
  const rows = ((response && response.rows) || []).filter((r) => r.brand_id === brandId);
  const totals = ((response && response.totals) || []).filter((r) => r.brand_id === brandId);
  if (method) return { method, split: false, rows, total: totals[0] || null, methods: [] };
  const key = (r) => (r.collection_method === undefined ? null : r.collection_method);
  const methods = [...new Set(totals.map(key))];
  const top = totals.slice().sort((a, b) => (b.n || 0) - (a.n || 0))[0];
  const chosen = top ? key(top) : null;
  return { method: chosen, split: methods.length > 1, rows: rows.filter((r) => key(r) === chosen), total: top || null, methods };
}

/** The API's model build changes as chart marks: [{x (Unix seconds of the day), label}], one engine's or all. */
export function buildMarks(changes, engine) {
  const text = (b) => (b ? [b.model, b.system_fingerprint].filter(Boolean).join(" · ") || "unknown build" : "unknown build");
  return (changes || []).filter((c) => !engine || engine === "all" || c.engine === engine).map((c) => ({
    x: Math.floor(Date.parse(`${c.day}T00:00:00Z`) / 1000),
    label: `${c.day} ${c.engine}: model build ${text(c.model_build)} (was ${text(c.previous)})`,
  }));
}

/** The query string of the metrics (and their export): like queryString, but an empty group_by
 * is sent (it means "no grouping"; left out, the API groups by engine). */
export function metricsQuery(params) {
  const { group_by: groupBy, ...rest } = params;
  const text = queryString(rest);
  if (groupBy === undefined || groupBy === null) return text;
  return `${text}${text ? "&" : "?"}group_by=${encodeURIComponent(groupBy)}`;
}

/** The values a dimension takes in the window, as the API listed them ("true"/"false" for branded). */
export function segmentValues(response, dim) {
  const values = response && response.segment_values && response.segment_values[dim];
  return Array.isArray(values) ? values.map(String) : [];
}

/** The source share over the whole range, from the API's totals row (counted over every answer of the range). */
export function sourceTotals(total) {
  if (!total || !total.source_share) return { answers: 0, shares: SOURCE_LABELS.map((key) => [key, { n: 0, value: null }]), domains: [] };
  return {
    answers: total.source_share.answers || 0,
    shares: SOURCE_LABELS.map((key) => [key, total.source_share[key] || { n: 0, value: null }]),
    domains: (total.top_domains || []).slice(0, 10),
  };
}

/**
 * The arrays a band chart draws for one figure: x (Unix seconds of the period start), value,
 * low, high, n and underpowered per period, as the API gave them; value/low/high are null where
 * n = 0 (a gap, never a made-up 0).
 */
export function figureSeries(rows, figure) {
  const out = { x: [], value: [], low: [], high: [], n: [], underpowered: [] };
  for (const row of rows) {
    const rate = row[figure] || {};
    out.x.push(Math.floor(Date.parse(row.period_start) / 1000));
    out.value.push(rate.n > 0 && typeof rate.value === "number" ? rate.value : null);
    out.low.push(rate.n > 0 && typeof rate.ci95_low === "number" ? rate.ci95_low : null);
    out.high.push(rate.n > 0 && typeof rate.ci95_high === "number" ? rate.ci95_high : null);
    out.n.push(typeof rate.n === "number" ? rate.n : 0);
    out.underpowered.push(rate.underpowered === true);
  }
  return out;
}

/**
 * The position figures the overview charts (issue #25 item 3): shares in [0, 1] drawn as band
 * charts like the others; the mean place is a number, not a share, and goes in the table.
 */
export const POSITION_FIGURES = [
  ["first", "Named first (share of answers)"],
  ["weighted_visibility", "Position-weighted visibility"],
];

/** figureSeries of one position figure (`row.position[key]`), as the API gave it. */
export function positionSeries(rows, key) {
  return figureSeries(rows.map((r) => ({ period_start: r.period_start, [key]: (r.position && r.position[key]) || {} })), key);
}

/** "1.33 (95 % CI 1.00–2.00, n = 3 answers naming the brand)", "underpowered (n = 3): …" or "no data (n = 0)". */
export function meanPositionText(mean) {
  if (!mean || !(mean.n > 0) || typeof mean.value !== "number") return "no data (n = 0)";
  const num = (v) => (typeof v === "number" ? v.toFixed(2) : "–");
  const figure = `${num(mean.value)} (95 % CI ${num(mean.ci95_low)}–${num(mean.ci95_high)}, n = ${mean.n} answers naming the brand)`;
  return mean.underpowered === true ? `underpowered (n = ${mean.n}): ${figure}` : figure;
}

/** The brand's place in one answer for the run page: "1st of 2 named", "not named" or "not computed". */
export function positionText(state) {
  if (!state || state.status !== "classified" || !Array.isArray(state.named_order)) return "not computed";
  if (typeof state.position !== "number") return "not named";
  const k = state.position;
  const suffix = k % 100 >= 11 && k % 100 <= 13 ? "th" : ({ 1: "st", 2: "nd", 3: "rd" }[k % 10] || "th");
  return `${k}${suffix} of ${state.named_order.length} named`;
}

/** "41.2 % (95 % CI 35.0–47.6 %, n = 250)", "underpowered (n = 6): 50.0 % (95 % CI …)" or "no data (n = 0)". */
export function rateText(rate) {
  if (!rate || !(rate.n > 0) || typeof rate.value !== "number") return "no data (n = 0)";
  const pct = (v) => (typeof v === "number" ? `${(v * 100).toFixed(1)} %` : "–");
  const figure = `${pct(rate.value)} (95 % CI ${typeof rate.ci95_low === "number" ? (rate.ci95_low * 100).toFixed(1) : "–"}–${pct(rate.ci95_high)}, n = ${rate.n})`;
  return rate.underpowered === true ? `underpowered (n = ${rate.n}): ${figure}` : figure;
}

// -- dates ---------------------------------------------------------------------------------

const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** A date picker's "YYYY-MM-DD" as the API's `from` (that day 00:00 UTC), or null. */
export function fromParam(day) {
  return typeof day === "string" && DATE.test(day) ? `${day}T00:00:00Z` : null;
}

/** An inclusive "to" day as the API's exclusive `to` (the next day 00:00 UTC), or null. */
export function toParam(day) {
  if (typeof day !== "string" || !DATE.test(day)) return null;
  const next = new Date(`${day}T00:00:00Z`);
  next.setUTCDate(next.getUTCDate() + 1);
  return next.toISOString().replace(".000Z", "Z");
}

/** A datetime-local value ("YYYY-MM-DDTHH:MM", read as UTC) as RFC 3339, or null. */
export function asOfParam(local) {
  if (typeof local !== "string" || !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/.test(local)) return null;
  return `${local.length === 16 ? `${local}:00` : local}Z`;
}

/** The query string of a path, dropping empty values; keys in the given order. */
export function queryString(params) {
  const q = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") q.set(key, String(value));
  }
  const text = q.toString();
  return text ? `?${text}` : "";
}

// -- brand forms ---------------------------------------------------------------------------

/** A textarea of one item per line (or comma-separated) as a list of trimmed, non-empty items. */
export function splitList(text) {
  if (typeof text !== "string") return [];
  return text.split(/[\n,]/).map((s) => s.trim()).filter(Boolean);
}

/**
 * The form field an API validation error is about: `{"error": {"reason": "body.domains.0: ..."}}`
 * → "domains". Null when the reason names no body field (then the error is shown at the form).
 */
export function errorField(body) {
  const reason = body && body.error && typeof body.error.reason === "string" ? body.error.reason : "";
  const match = /^body\.([a-z_]+)/.exec(reason);
  return match ? match[1] : null;
}

// -- the answer text of a run --------------------------------------------------------------

const URL_IN_TEXT = /\bhttps?:\/\/[^\s<>"')\]]+/gi;

function escapeRegExp(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * The answer cut into segments to draw: [{text, kind}] with kind "link" (a URL in the text),
 * "mention" (a brand name, alias or domain, whole words, case-insensitive) or null. The pieces
 * joined give the text back exactly. Links are highlighted, never made clickable.
 */
export function highlightSegments(text, terms) {
  if (typeof text !== "string" || !text) return [];
  const marks = [];
  for (const m of text.matchAll(URL_IN_TEXT)) marks.push([m.index, m.index + m[0].length, "link"]);
  const words = [...new Set((terms || []).filter((t) => typeof t === "string" && t.trim()).map((t) => t.trim()))]
    .sort((a, b) => b.length - a.length);
  if (words.length) {
    const pattern = new RegExp(`(?<![\\p{L}\\p{N}])(?:${words.map(escapeRegExp).join("|")})(?![\\p{L}\\p{N}])`, "giu");
    for (const m of text.matchAll(pattern)) {
      const start = m.index;
      const end = start + m[0].length;
      if (!marks.some(([s, e]) => start < e && end > s)) marks.push([start, end, "mention"]);
    }
  }
  marks.sort((a, b) => a[0] - b[0]);
  const out = [];
  let at = 0;
  for (const [start, end, kind] of marks) {
    if (start > at) out.push({ text: text.slice(at, start), kind: null });
    out.push({ text: text.slice(start, end), kind });
    at = end;
  }
  if (at < text.length) out.push({ text: text.slice(at), kind: null });
  return out;
}

// -- methodology: a small Markdown reader (headings, paragraphs, lists, tables, code) ----------

/**
 * docs/metrics.md as blocks the page draws with text nodes: {type: "h", level, inline} |
 * {type: "p", inline} | {type: "ul", items: [inline]} | {type: "table", head: [inline],
 * rows: [[inline]]} | {type: "code", text}. Inline = [{text, style}] with style null, "code",
 * "strong" or "em"; links keep their text only (no URL from a document becomes a link).
 */
export function markdownBlocks(source) {
  const lines = String(source).replace(/\r\n/g, "\n").split("\n");
  const blocks = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) {
      i += 1;
      continue;
    }
    if (line.startsWith("```")) {
      const body = [];
      i += 1;
      while (i < lines.length && !lines[i].startsWith("```")) body.push(lines[i++]);
      i += 1;
      blocks.push({ type: "code", text: body.join("\n") });
      continue;
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    if (heading) {
      blocks.push({ type: "h", level: heading[1].length, inline: inlineSpans(heading[2]) });
      i += 1;
      continue;
    }
    if (line.startsWith("|")) {
      const cells = (l) => l.trim().replace(/^\||\|$/g, "").split("|").map((c) => inlineSpans(c.trim()));
      const head = cells(line);
      i += 2; // the |---| line
      const rows = [];
      while (i < lines.length && lines[i].startsWith("|")) rows.push(cells(lines[i++]));
      blocks.push({ type: "table", head, rows });
      continue;
    }
    if (/^\s*- /.test(line)) {
      const items = [];
      while (i < lines.length && (/^\s*- /.test(lines[i]) || (/^\s{2,}\S/.test(lines[i]) && items.length))) {
        if (/^\s*- /.test(lines[i])) items.push(lines[i].replace(/^\s*- /, ""));
        else items[items.length - 1] += ` ${lines[i].trim()}`;
        i += 1;
      }
      blocks.push({ type: "ul", items: items.map(inlineSpans) });
      continue;
    }
    const para = [];
    while (i < lines.length && lines[i].trim() && !/^(#|```|\||\s*- )/.test(lines[i])) para.push(lines[i++].trim());
    blocks.push({ type: "p", inline: inlineSpans(para.join(" ")) });
  }
  return blocks;
}

const INLINE = /`([^`]+)`|\*\*([^*]+)\*\*|\*([^*]+)\*|\[([^\]]+)\]\([^)]*\)/g;

export function inlineSpans(text) {
  const out = [];
  let at = 0;
  for (const m of text.matchAll(INLINE)) {
    if (m.index > at) out.push({ text: text.slice(at, m.index), style: null });
    if (m[1] !== undefined) out.push({ text: m[1], style: "code" });
    else if (m[2] !== undefined) out.push({ text: m[2], style: "strong" });
    else if (m[3] !== undefined) out.push({ text: m[3], style: "em" });
    else out.push({ text: m[4], style: null });
    at = m.index + m[0].length;
  }
  if (at < text.length) out.push({ text: text.slice(at), style: null });
  return out;
}

/** The part of docs/metrics.md the page shows: everything before the operators' Prometheus part. */
export function methodologySource(markdown) {
  const cut = String(markdown).indexOf("\n## Operations:");
  return cut >= 0 ? markdown.slice(0, cut) : String(markdown);
}

// -- classes -------------------------------------------------------------------------------

export const CLASSES = ["STRONG", "DESCRIPTIVE", "ECHO", "CONFABULATED", "ABSENT"];

/** Text for a run's per-brand state: "STRONG (heuristic)" / "pending" / "refused". */
export function stateText(state) {
  if (!state || typeof state !== "object") return "unknown";
  if (state.status !== "classified") return String(state.status || "unknown");
  const by = state.decided_by === "judge" ? `judge${state.judge_model ? `: ${state.judge_model}` : ""}` : state.decided_by;
  return `${state.citation_class}${by ? ` (${by})` : ""}`;
}

/** A fact's validity: "since <recorded_at>" while active, "<recorded_at> → <superseded_at>" after. */
export function validityText(fact) {
  const since = fact.recorded_at || fact.fetched_at || "?";
  return fact.active ? `active since ${since}` : `${since} → ${fact.superseded_at || "?"} (superseded)`;
}

/** A random Idempotency-Key value (one per user action). */
export function newIdempotencyKey(cryptoObj = globalThis.crypto) {
  if (cryptoObj && typeof cryptoObj.randomUUID === "function") return cryptoObj.randomUUID();
  const bytes = new Uint8Array(16);
  cryptoObj.getRandomValues(bytes);
  return [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
}

// -- review queue (issue #28) -----------------------------------------------------------------

/** A waiting time the API measured, in words: "45 s", "12 min", "3 h 5 min", "2 d 4 h". */
export function durationText(seconds) {
  if (typeof seconds !== "number" || !Number.isFinite(seconds) || seconds < 0) return "unknown";
  const s = Math.floor(seconds);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 24) return m % 60 ? `${h} h ${m % 60} min` : `${h} h`;
  const d = Math.floor(h / 24);
  return h % 24 ? `${d} d ${h % 24} h` : `${d} d`;
}

/** The queue's size as the API counted it: "2 pairs pending review (the oldest waiting 3 h)". */
export function pendingText(queue) {
  if (!queue || typeof queue.pending !== "number") return "unknown";
  if (queue.pending === 0) return "No pair is pending review.";
  const pairs = queue.pending === 1 ? "1 pair is" : `${queue.pending} pairs are`;
  return `${pairs} pending review (the oldest waiting ${durationText(queue.oldest_pending_age_s)}).`;
}

/** The blind sample's size: "1 judge label drawn for a blind review (5 % of the judge's labels)". */
export function sampleText(queue) {
  if (!queue || typeof queue.sample_open !== "number") return "";
  const share = typeof queue.sample_share === "number" ? `${+(queue.sample_share * 100).toFixed(2)} %` : "a share";
  const labels = queue.sample_open === 1 ? "1 judge label waits" : `${queue.sample_open} judge labels wait`;
  return `${labels} for a blind review (${share} of the judge's labels are drawn).`;
}

/** Kappa as published: "0.68" or "undefined" (no reviews, or one class only). */
export function kappaText(kappa) {
  return typeof kappa === "number" && Number.isFinite(kappa) ? kappa.toFixed(2) : "undefined";
}

/** Rows of the agreement table: [class, judge said (n), person agreed, precision with its interval]. */
export function agreementRows(agreement) {
  return ((agreement && agreement.per_class) || []).filter((c) => c.judge_n > 0).map((c) => [
    c.citation_class, String(c.judge_n), String(c.agreed), rateText(c.precision),
  ]);
}

/** Who decided a history row: "deterministic", "judge", or "human (Ana)" with the reviewer. */
export function decidedByText(row) {
  if (!row || typeof row !== "object") return "";
  return row.decided_by === "human" && row.reviewer ? `human (${row.reviewer})` : String(row.decided_by || "");
}
