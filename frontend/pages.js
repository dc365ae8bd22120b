// The auditor's pages: sign-in, brands, brand overview, ground truth, runs, a run, methodology.
// Every page reads its state from the URL (path + query), so each is deep-linkable and the
// back button returns to the previous state. API data goes into text nodes and attributes only.

import { callApi, clearKey, getKey, setKey } from "./api.js";
import { bandChart } from "./chart.js";
import { safeHttpUrl } from "./citations.js";
import { appLink, el, notice, rowsList, table } from "./dom.js";
import { collectionRows } from "./run_collection.js";
import {
  CLASSES, FIGURES, SEGMENTS, agreementRows, asOfParam, decidedByText, errorField, figureSeries, fromParam, highlightSegments, kappaText, pendingText,
  markdownBlocks, methodologySource, metricsQuery, newIdempotencyKey, overviewParams, queryString, rateText,
  segmentValues, sourceTotals, splitList,
  stateText, toParam, validityText,
} from "./model.js";
import { POSITION_FIGURES, buildMarks, meanPositionText, methodView, positionSeries, positionText } from "./model.js";

let navigate = () => {};

/** The router's navigate(path, {replace, state}) for the pages to use. */
export function setNavigate(fn) {
  navigate = fn;
}

const enc = encodeURIComponent;


function sourceLink(url) {
  const href = safeHttpUrl(url);
  if (href) return el("a", { text: href, attrs: { href, rel: "noopener noreferrer nofollow", target: "_blank" } });
  return el("span", { text: url ? `${url} (not a safe web link; shown as text)` : "no source URL", attrs: { class: "muted" } });
}

function field(label, input, hint) {
  const id = input.getAttribute("id");
  const error = el("p", { attrs: { class: "field-error", id: `${id}-error`, role: "alert" } });
  error.hidden = true;
  input.setAttribute("aria-describedby", `${id}-error`);
  return {
    node: el("div", {
      attrs: { class: "field" },
      children: [el("label", { text: label, attrs: { for: id } }), input, hint ? el("p", { text: hint, attrs: { class: "muted small" } }) : null, error],
    }),
    show(text) {
      error.textContent = text;
      error.hidden = !text;
      if (text) input.setAttribute("aria-invalid", "true");
      else input.removeAttribute("aria-invalid");
    },
  };
}

function loading(main, text = "Loading…") {
  const p = el("p", { text, attrs: { class: "muted" } });
  main.append(p);
  return p;
}

// -- sign-in -------------------------------------------------------------------------------

export function signinPage(main, { reason, next } = {}) {
  const input = el("input", {
    attrs: { id: "api-key", type: "password", autocomplete: "off", spellcheck: "false", required: true, placeholder: "atk_…" },
  });
  const f = field("API key", input, "Kept in this tab only (sessionStorage) and sent only to this gateway's API as a bearer header. Create one with `attesta gateway keys create`.");
  const submit = el("button", { text: "Sign in", attrs: { type: "submit" } });
  const out = el("div", { attrs: { "aria-live": "polite" } });
  // No name on the input and no method: without script nothing is ever put into a URL.
  const form = el("form", { attrs: { class: "card", id: "signin-form", autocomplete: "off" }, children: [f.node, submit, out] });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const key = input.value.trim();
    input.value = "";
    if (!key) {
      f.show("Paste the key first.");
      return;
    }
    submit.disabled = true;
    setKey(key);
    const probe = await callApi("GET", "/v1/brands", { auth: true });
    submit.disabled = false;
    if (!probe.ok) {
      if (probe.status !== 401 && probe.status !== 403) {
        clearKey();
        out.replaceChildren(notice(probe.text, "failed"));
      }
      return; // 401/403: the handler re-renders this page with the reason
    }
    navigate(next && next.startsWith("/") && !next.startsWith("//") ? next : "/brands", { replace: true });
  });
  main.append(el("h1", { text: "Sign in" }));
  if (reason) main.append(notice(reason, "failed"));
  if (getKey()) main.append(notice("A key is already in use in this tab; signing in replaces it.", ""));
  main.append(form, el("p", { text: "The chat and the evidence check work without a key.", attrs: { class: "muted small" } }));
  input.focus();
}

// -- brands --------------------------------------------------------------------------------

const BRAND_FIELDS = [
  ["brand_id", "Brand id", "lower-case letters, digits, . _ - (optional: derived from the name)"],
  ["name", "Name", ""],
  ["aliases", "Aliases", "one per line"],
  ["domains", "Domains", "one per line, e.g. acme.example"],
  ["competitors", "Competitors", "brand ids, one per line"],
  ["sources", "Sources", "http(s) pages the ground truth is read from, one per line"],
];
const LIST_FIELDS = new Set(["aliases", "domains", "competitors", "sources"]);

function brandForm(brand, onSaved) {
  const fields = {};
  const nodes = [];
  for (const [key, label, hint] of BRAND_FIELDS) {
    if (brand && key === "brand_id") continue;
    const id = `brand-${key.replace("_", "-")}`;
    const input = LIST_FIELDS.has(key)
      ? el("textarea", { attrs: { id, rows: "3" } })
      : el("input", { attrs: { id, type: "text", required: key === "name" } });
    if (brand) input.value = LIST_FIELDS.has(key) ? (brand[key] || []).join("\n") : brand[key] || "";
    fields[key] = { input, ...field(label, input, hint) };
    nodes.push(fields[key].node);
  }
  const formError = el("div", { attrs: { "aria-live": "polite" } });
  // .write-action: what writes (POST/PATCH/DELETE); hidden for a viewer key by styles.css (#25).
  const submit = el("button", { text: brand ? "Save changes" : "Create brand", attrs: { type: "submit", class: "write-action" } });
  const form = el("form", { attrs: { class: "card write-action", id: "brand-form" }, children: [...nodes, submit, formError] });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    for (const f of Object.values(fields)) f.show("");
    formError.replaceChildren();
    const body = {};
    for (const [key, f] of Object.entries(fields)) {
      const value = f.input.value;
      if (LIST_FIELDS.has(key)) body[key] = splitList(value);
      else if (value.trim()) body[key] = value.trim();
    }
    submit.disabled = true;
    const reply = brand
      ? await callApi("PATCH", `/v1/brands/${enc(brand.brand_id)}`, { body })
      : await callApi("POST", "/v1/brands", { body, idempotencyKey: newIdempotencyKey() });
    submit.disabled = false;
    if (!reply.ok) {
      const key = errorField(reply.data);
      if (key && fields[key]) fields[key].show(reply.text);
      else formError.replaceChildren(notice(reply.text, "failed"));
      return;
    }
    onSaved(reply.data);
  });
  return form;
}

export async function brandsPage(main) {
  main.append(el("h1", { text: "Brands" }));
  const wait = loading(main);
  const reply = await callApi("GET", "/v1/brands");
  wait.remove();
  if (!reply.ok) {
    main.append(notice(reply.text, "failed"));
    return;
  }
  const items = reply.data.items || [];
  main.append(items.length
    ? table("Tracked brands", ["Brand", "Id", "Domains", "Competitors", ""], items.map((b) => [
        appLink(`/brands/${enc(b.brand_id)}`, b.name),
        el("code", { text: b.brand_id }),
        (b.domains || []).join(", "),
        (b.competitors || []).join(", "),
        el("span", { children: [appLink(`/brands/${enc(b.brand_id)}/ground-truth`, "ground truth"), " · ", appLink(`/brands/${enc(b.brand_id)}/edit`, "edit", { class: "write-action" })] }),
      ]), { id: "brands-table" })
    : el("p", { text: "No brands yet: create the first one below.", attrs: { class: "muted" } }));
  main.append(el("h2", { text: "Create a brand", attrs: { class: "write-action" } }), brandForm(null, (b) => navigate(`/brands/${enc(b.brand_id)}/ground-truth`)));
}

export async function brandEditPage(main, brandId) {
  main.append(el("h1", { text: "Edit brand" }));
  const reply = await callApi("GET", `/v1/brands/${enc(brandId)}`);
  if (!reply.ok) {
    main.append(notice(reply.text, "failed"));
    return;
  }
  main.append(el("p", { children: [el("code", { text: reply.data.brand_id })] }),
    brandForm(reply.data, (b) => navigate(`/brands/${enc(b.brand_id)}`)));
}

function brandTabs(brandId, current) {
  const tabs = [["overview", `/brands/${enc(brandId)}`, "Overview"], ["ground-truth", `/brands/${enc(brandId)}/ground-truth`, "Ground truth"],
    ["runs", `/runs${queryString({ brand_id: brandId })}`, "Runs"], ["edit", `/brands/${enc(brandId)}/edit`, "Edit"]];
  return el("nav", {
    attrs: { class: "tabs", "aria-label": "brand" },
    children: tabs.map(([key, href, text]) => appLink(href, text, { ...(key === current ? { "aria-current": "page" } : {}), ...(key === "edit" ? { class: "write-action" } : {}) })),
  });
}

// -- brand overview: the metrics over time -----------------------------------------------------

async function downloadExport(path, filename, status) {
  status.replaceChildren(notice("Preparing the download…"));
  const reply = await callApi("GET", path, { raw: true, accept: "*/*" });
  if (!reply.ok) {
    status.replaceChildren(notice(`Export failed: ${reply.text}`, "failed"));
    return;
  }
  const blob = await reply.response.blob();
  const url = URL.createObjectURL(blob);
  const a = el("a", { attrs: { href: url, download: filename } });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
  status.replaceChildren(notice(`Downloaded ${filename} (${blob.size.toLocaleString("en-US")} bytes).`, "ok"));
}

function exportButtons(kind, params, formats, query = queryString) {
  const status = el("div", { attrs: { "aria-live": "polite" } });
  const buttons = formats.map((fmt) => el("button", {
    text: `Export ${fmt.toUpperCase()}`,
    attrs: { type: "button", class: "secondary", "data-export": `${kind}-${fmt}` },
    on: { click: () => downloadExport(`/v1/exports/${kind}${query({ ...params, format: fmt })}`, `attesta-${kind}.${fmt}`, status) },
  }));
  return el("div", { attrs: { class: "exports" }, children: [...buttons, status] });
}

export async function overviewPage(main, brandId, query) {
  const period = ["day", "week", "month"].includes(query.get("period")) ? query.get("period") : "week";
  const from = query.get("from") || "";
  const to = query.get("to") || "";
  const scope = query.get("engine") || "all";
  const segment = Object.fromEntries(SEGMENTS.map(([dim]) => [dim, query.get(dim) || ""]));
  const method = query.get("collection_method") || "";
  const brandReply = await callApi("GET", `/v1/brands/${enc(brandId)}`);
  if (!brandReply.ok) {
    main.append(el("h1", { text: "Brand overview" }), notice(brandReply.text, "failed"));
    return;
  }
  const brand = brandReply.data;
  main.append(el("h1", { text: brand.name }), brandTabs(brandId, "overview"));
  // The figures on screen, asked for as they are shown: the API computes every figure and
  // interval of this engine and segment (issue #27); the export asks with the same parameters.
  const apiParams = overviewParams({ brandId, period, from, to, engine: scope, segment, method });
  // The review queue's size for this brand (issue #28), asked for alongside the metrics.
  const queueCall = callApi("GET", `/v1/review/queue${queryString({ brand_id: brandId, limit: 1 })}`);
  const started = performance.now();
  const reply = await callApi("GET", `/v1/metrics${metricsQuery(apiParams)}`);
  const apiMs = performance.now() - started;
  // The API splits rows by collection method unless one (or "any") is asked for: the page
  // draws one method's rows as they came (issue #25 item 4).
  const view = methodView(reply.ok ? reply.data : null, brandId, method);
  const rows = view.rows;
  const total = view.total;
  const marks = reply.ok ? buildMarks(reply.data.build_changes, scope) : [];
  const engines = segmentValues(reply.data, "engine");
  if (scope !== "all" && !engines.includes(scope)) engines.push(scope);

  const periodSel = el("select", { attrs: { id: "period" }, children: ["day", "week", "month"].map((p) => el("option", { text: p, attrs: { value: p, selected: p === period } })) });
  const engineSel = el("select", {
    attrs: { id: "engine" },
    children: [el("option", { text: "all engines", attrs: { value: "all", selected: scope === "all" } }),
      ...engines.map((e) => el("option", { text: e, attrs: { value: e, selected: scope === e } }))],
  });
  const segmentSels = SEGMENTS.map(([dim, label]) => {
    const values = segmentValues(reply.data, dim);
    if (segment[dim] && !values.includes(segment[dim])) values.push(segment[dim]);
    const text = (v) => (dim === "branded" ? (v === "true" ? "branded (names a tracked brand)" : "unbranded") : v);
    return [dim, label, el("select", {
      attrs: { id: `segment-${dim}` },
      children: [el("option", { text: dim === "branded" ? "all prompts" : dim === "source" ? "the brand's prompts (no ad-hoc chats)" : "any", attrs: { value: "" } }),
        ...values.map((v) => el("option", { text: text(v), attrs: { value: v, selected: segment[dim] === v } }))],
    })];
  });
  const methods = segmentValues(reply.data, "collection_method");
  if (method && method !== "any" && !methods.includes(method)) methods.push(method);
  const methodSel = el("select", {
    attrs: { id: "collection-method" },
    children: [el("option", { text: "one at a time (never averaged)", attrs: { value: "" } }),
      el("option", { text: "all methods together", attrs: { value: "any", selected: method === "any" } }),
      ...methods.map((m) => el("option", { text: m, attrs: { value: m, selected: method === m } }))],
  });
  const fromIn = el("input", { attrs: { id: "from", type: "date", value: from } });
  const toIn = el("input", { attrs: { id: "to", type: "date", value: to } });
  const controls = el("form", {
    attrs: { class: "card controls", id: "overview-controls" },
    children: [
      el("label", { text: "Period", attrs: { for: "period" } }), periodSel,
      el("label", { text: "Engine", attrs: { for: "engine" } }), engineSel,
      ...segmentSels.flatMap(([dim, label, sel]) => [el("label", { text: label, attrs: { for: `segment-${dim}` } }), sel]),
      el("label", { text: "Collection method", attrs: { for: "collection-method" } }), methodSel,
      el("label", { text: "From (UTC)", attrs: { for: "from" } }), fromIn,
      el("label", { text: "To (UTC, inclusive)", attrs: { for: "to" } }), toIn,
      el("button", { text: "Show", attrs: { type: "submit" } }),
    ],
  });
  controls.addEventListener("submit", (event) => {
    event.preventDefault();
    const chosen = Object.fromEntries(segmentSels.map(([dim, , sel]) => [dim, sel.value]));
    navigate(`/brands/${enc(brandId)}${queryString({ period: periodSel.value, engine: engineSel.value === "all" ? "" : engineSel.value, ...chosen, collection_method: methodSel.value, from: fromIn.value, to: toIn.value })}`);
  });
  main.append(controls);
  if (!reply.ok) {
    main.append(notice(reply.text, "failed"));
    return;
  }
  const shown = rows;
  const latest = shown[shown.length - 1];
  const minimum = reply.data.minimum;
  const segmentText = SEGMENTS.filter(([dim]) => segment[dim]).map(([dim, label]) => (dim === "branded" ? (segment[dim] === "true" ? "branded prompts" : "unbranded prompts") : `${label.toLowerCase()} ${segment[dim]}`));
  main.append(el("p", {
    text: `${shown.length} ${period}(s) · ${scope === "all" ? `all engines (${engines.length})` : `engine ${scope}`}${segmentText.map((t) => ` · ${t}`).join("")}${latest ? ` · latest ${latest.period_start.slice(0, 10)}: n = ${latest.n}, refused ${latest.refused}, pending ${latest.pending}` : ""}`,
    attrs: { class: "muted", id: "overview-summary" },
  }));
  if (view.split) {
    main.append(el("p", {
      text: `This brand's answers were collected ${view.methods.length} ways (${view.methods.map((m) => m || "not recorded").join(", ")}); they are never averaged. Showing: ${view.method || "not recorded"}. Choose another collection method above, or "all methods together".`,
      attrs: { class: "notice", id: "collection-method-note" },
    }));
  }
  const queue = await queueCall;
  main.append(el("p", {
    attrs: { id: "overview-review" },
    children: queue.ok
      ? [document.createTextNode(`${pendingText(queue.data)} `), appLink(`/review${queryString({ brand_id: brandId })}`, "Open the review queue")]
      : [document.createTextNode(`Review queue: ${queue.text}`)],
  }));
  if (minimum) {
    main.append(el("p", {
      text: `A figure from fewer than ${minimum.n} answers or ${minimum.prompts} distinct prompts is underpowered: drawn grey and hatched, labelled "underpowered (n = …)", not a precise figure (see the methodology).`,
      attrs: { class: "muted small", id: "underpowered-rule" },
    }));
  }
  const grid = el("div", { attrs: { class: "charts" } });
  main.append(grid);
  const width = Math.max(280, Math.min(420, Math.floor((main.clientWidth || 860) / 2) - 40));
  for (const [key, label] of FIGURES) {
    const { card } = bandChart(label, figureSeries(shown, key), { period, width, marks });
    grid.append(card);
  }
  // Where the answers name the brand against its competitors (issue #25 item 3): the API's
  // figures and intervals, drawn as they come.
  main.append(el("h2", { text: "Position in the answers" }), el("p", {
    text: "The order in which each answer first names the brand and its competitors: the share of answers naming it first, and a visibility weighted by place (1st 1.0, 2nd 0.9, 3rd 0.81, …, 0 when not named). Ad-hoc chats with the assistant are not counted.",
    attrs: { class: "muted small" },
  }));
  const positionGrid = el("div", { attrs: { class: "charts", id: "position-charts" } });
  main.append(positionGrid);
  for (const [key, label] of POSITION_FIGURES) {
    const { card } = bandChart(label, positionSeries(shown, key), { period, width, marks });
    positionGrid.append(card);
  }
  if (latest) {
    main.append(table(`Latest ${period} (${latest.period_start.slice(0, 10)})`, ["Figure", "Value with its 95 % interval"],
      [...FIGURES.map(([key, label]) => [label, rateText(latest[key])]),
        // The classifier's bootstrap over prompts (docs/metrics.md "The prompt as the unit").
        ...(latest.citation_rate_by_prompt ? [[`Citation rate, prompts as the unit (bootstrap over ${latest.citation_rate_by_prompt.prompts} prompt(s))`, rateText(latest.citation_rate_by_prompt)]] : []),
        ...(latest.position ? [
          ["Named first (share of answers)", rateText(latest.position.first)],
          ["Position-weighted visibility", rateText(latest.position.weighted_visibility)],
          ["Mean position where named (1 = first)", meanPositionText(latest.position.mean)],
        ] : [])],
      { id: "latest-table" }));
  }
  main.append(sourcesView(total));
  main.append(el("h2", { text: "Export the metrics" }), el("p", { text: "The figures on screen: one row per period of the engine and segment chosen above, with the same values, intervals and underpowered flags.", attrs: { class: "muted small" } }),
    exportButtons("metrics", apiParams, ["csv", "json"], metricsQuery));
  const renderMs = performance.now() - started;
  main.setAttribute("data-render-ms", renderMs.toFixed(1));
  main.setAttribute("data-ready-at-ms", performance.now().toFixed(1)); // since navigation start
  main.setAttribute("data-api-ms", apiMs.toFixed(1));
}

const SOURCE_LABEL_TEXT = { owned: "the brand's own domains", competitor: "a competitor's domains", third_party: "anyone else's (third party)" };

/** Where the answers' cited sources point, over the chosen range and scope (the API's totals row). */
function sourcesView(total) {
  const totals = sourceTotals(total);
  const section = el("section", { attrs: { class: "card", id: "sources-view", "aria-labelledby": "sources-title" } });
  section.append(el("h2", { text: "Sources cited", attrs: { id: "sources-title" } }));
  if (!totals.answers) {
    section.append(el("p", { text: "No answers in this range and scope.", attrs: { class: "muted" } }));
    return section;
  }
  section.append(
    table(`Share of the ${totals.answers.toLocaleString("en-US")} answers citing at least one source on…`, ["Source", "Share with its 95 % interval"],
      totals.shares.map(([key, r]) => [SOURCE_LABEL_TEXT[key], rateText(r)]), { id: "source-share-table" }),
    totals.domains.length
      ? table("Most cited domains (answers citing each)", ["Domain", "Answers", "Label"], totals.domains.map((d) => [d.domain, String(d.answers), d.label]), { id: "top-domains-table" })
      : el("p", { text: "No cited domains.", attrs: { class: "muted" } }),
    el("p", { text: "Counted over every answer of the range (not summed from each period's ten).", attrs: { class: "muted small" } }),
  );
  return section;
}

// -- ground truth --------------------------------------------------------------------------

export async function groundTruthPage(main, brandId, query) {
  const showSuperseded = query.get("superseded") === "1";
  main.append(el("h1", { text: "Ground truth" }), brandTabs(brandId, "ground-truth"));
  const reply = await callApi("GET", `/v1/brands/${enc(brandId)}/ground-truth${queryString({ include_superseded: showSuperseded ? "true" : "" })}`);
  if (!reply.ok) {
    main.append(notice(reply.text, "failed"));
    return;
  }
  const gt = reply.data;
  const refreshOut = el("div", { attrs: { "aria-live": "polite", id: "refresh-result" } });
  const refreshBtn = el("button", { text: "Refresh from the sources", attrs: { type: "button", id: "refresh", class: "write-action" } });
  refreshBtn.addEventListener("click", async () => {
    refreshBtn.disabled = true;
    refreshOut.replaceChildren(notice("Fetching the brand's sources…"));
    const r = await callApi("POST", `/v1/brands/${enc(brandId)}/ground-truth/refresh`, { idempotencyKey: newIdempotencyKey() });
    refreshBtn.disabled = false;
    if (!r.ok) {
      refreshOut.replaceChildren(notice(`Refresh failed: ${r.text}`, "failed"));
      return;
    }
    const o = r.data;
    refreshOut.replaceChildren(
      notice(o.changed ? `Changed: ${o.added_fact_ids.length} fact(s) added, ${o.superseded_fact_ids.length} superseded.` : "Unchanged: the sources say what they said before.", "ok"),
      rowsList([["Ground-truth hash", el("code", { text: o.ground_truth_hash })], ["Active facts", String(o.active_fact_ids.length)]]),
      table("Sources fetched", ["URL", "Result", "HTTP", "Bytes", "Facts", "SHA-256"], (o.sources || []).map((s) => [
        sourceLink(s.url), s.ok ? "fetched" : `failed: ${s.error || ""}`, s.http_status ?? "", s.bytes ?? "", String(s.facts_extracted ?? 0), s.sha256 ? el("code", { text: s.sha256 }) : "",
      ])),
    );
    const again = el("p", { children: [appLink(`/brands/${enc(brandId)}/ground-truth${showSuperseded ? "?superseded=1" : ""}`, "Reload the facts", { id: "reload-facts" })] });
    refreshOut.append(again);
  });
  main.append(el("div", {
    attrs: { class: "card" },
    children: [rowsList([["Ground-truth hash", el("code", { text: gt.ground_truth_hash, attrs: { id: "gt-hash" } })], ["Active facts", String(gt.facts.length)]]), refreshBtn, refreshOut],
  }));
  const toggle = appLink(`/brands/${enc(brandId)}/ground-truth${showSuperseded ? "" : "?superseded=1"}`, showSuperseded ? "Hide superseded facts" : "Show superseded facts", { id: "superseded-toggle" });
  main.append(el("p", { children: [toggle] }));
  const factRows = (facts) => facts.map((f) => [
    f.type, f.text, sourceLink(f.source_url), f.fetched_at, f.attribution, el("code", { text: f.content_sha256 }), validityText(f),
  ]);
  const columns = ["Type", "Fact", "Source", "Fetched at", "Attribution", "SHA-256", "Valid"];
  main.append(gt.facts.length
    ? table("Active facts (the hash is over these)", columns, factRows(gt.facts), { id: "facts-table" })
    : el("p", { text: "No active facts: refresh from the sources or add one below.", attrs: { class: "muted" } }));
  if (showSuperseded) {
    const old = gt.superseded || [];
    main.append(old.length
      ? table("Superseded facts, most recent first (kept, never deleted)", columns, factRows(old), { id: "superseded-table" })
      : el("p", { text: "No superseded facts: no refresh has replaced a fact of this brand.", attrs: { class: "muted", id: "superseded-none" } }));
  }

  const text = el("textarea", { attrs: { id: "fact-text", rows: "2", required: true } });
  const url = el("input", { attrs: { id: "fact-url", type: "url", required: true, placeholder: "https://…" } });
  const attribution = el("input", { attrs: { id: "fact-attribution", type: "text", required: true } });
  const type = el("input", { attrs: { id: "fact-type", type: "text", placeholder: "claim" } });
  const fields = { text: field("Fact", text), source_url: field("Source URL", url), attribution: field("Attribution", attribution), type: field("Type (optional)", type) };
  const out = el("div", { attrs: { "aria-live": "polite" } });
  const form = el("form", { attrs: { class: "card write-action", id: "fact-form" }, children: [...Object.values(fields).map((f) => f.node), el("button", { text: "Add fact", attrs: { type: "submit", class: "write-action" } }), out] });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    for (const f of Object.values(fields)) f.show("");
    const body = { text: text.value.trim(), source_url: url.value.trim(), attribution: attribution.value.trim() };
    if (type.value.trim()) body.type = type.value.trim();
    const r = await callApi("POST", `/v1/brands/${enc(brandId)}/ground-truth/facts`, { body, idempotencyKey: newIdempotencyKey() });
    if (!r.ok) {
      const key = errorField(r.data);
      if (key && fields[key]) fields[key].show(r.text);
      else out.replaceChildren(notice(r.text, "failed"));
      return;
    }
    navigate(`/brands/${enc(brandId)}/ground-truth`, { replace: true });
  });
  main.append(el("h2", { text: "Add a manual fact", attrs: { class: "write-action" } }), form);
}

// -- runs ----------------------------------------------------------------------------------

const RUNS_PAGE = 15;
const RUN_FILTERS = ["brand_id", "engine", "citation_class", "decided_by", "tag", "status", "source", "from", "to"];

function runFilterParams(query) {
  const out = {};
  for (const key of RUN_FILTERS) out[key] = query.get(key) || "";
  return out;
}

function runApiParams(filters) {
  return { ...filters, from: fromParam(filters.from), to: toParam(filters.to) };
}

function runForm(brands, onDone) {
  const brandSel = el("select", { attrs: { id: "run-brand" }, children: brands.map((b) => el("option", { text: b.name, attrs: { value: b.brand_id } })) });
  const engine = el("input", { attrs: { id: "run-engine", type: "text", required: true, value: "chatgpt" } });
  const model = el("input", { attrs: { id: "run-model", type: "text", required: true, value: "gpt-4o" } });
  const prompt = el("textarea", { attrs: { id: "run-prompt", rows: "2", required: true } });
  const answer = el("textarea", { attrs: { id: "run-answer", rows: "4", required: true } });
  const fields = { brand_ids: field("Brand", brandSel), engine: field("Engine", engine), model: field("Model", model), prompt: field("Prompt", prompt), answer: field("Answer (as the engine gave it)", answer) };
  const out = el("div", { attrs: { "aria-live": "polite" } });
  const form = el("form", { attrs: { class: "card write-action", id: "run-form" }, children: [...Object.values(fields).map((f) => f.node), el("button", { text: "Record run", attrs: { type: "submit", class: "write-action" } }), out] });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    for (const f of Object.values(fields)) f.show("");
    const body = { engine: engine.value.trim(), model: model.value.trim(), prompt: prompt.value, answer: answer.value, brand_ids: brandSel.value ? [brandSel.value] : [] };
    const r = await callApi("POST", "/v1/runs", { body, idempotencyKey: newIdempotencyKey() });
    if (!r.ok) {
      const key = errorField(r.data);
      if (key && fields[key]) fields[key].show(r.text);
      else out.replaceChildren(notice(r.text, "failed"));
      return;
    }
    prompt.value = "";
    answer.value = "";
    out.replaceChildren(notice("Recorded; the classifier decides its class in a moment.", "ok"), el("p", { children: [appLink(`/runs/${enc(r.data.run_id)}`, `Open run ${r.data.run_id}`)] }));
    onDone(r.data);
  });
  return form;
}

export async function runsPage(main, query) {
  const filters = runFilterParams(query);
  const cursor = query.get("cursor") || "";
  main.append(el("h1", { text: "Runs" }));
  const brandsReply = await callApi("GET", "/v1/brands");
  if (!brandsReply.ok) {
    main.append(notice(brandsReply.text, "failed"));
    return;
  }
  const brands = brandsReply.data.items || [];
  const select = (id, options, value) => el("select", {
    attrs: { id }, children: [el("option", { text: "any", attrs: { value: "" } }), ...options.map(([v, t]) => el("option", { text: t, attrs: { value: v, selected: v === value } }))],
  });
  const inputs = {
    brand_id: select("f-brand", brands.map((b) => [b.brand_id, b.name]), filters.brand_id),
    engine: el("input", { attrs: { id: "f-engine", type: "text", value: filters.engine } }),
    citation_class: select("f-class", CLASSES.map((c) => [c, c]), filters.citation_class),
    decided_by: select("f-decided-by", [["deterministic", "deterministic (heuristic)"], ["judge", "judge"], ["human", "a person (review queue)"]], filters.decided_by),
    tag: el("input", { attrs: { id: "f-tag", type: "text", value: filters.tag, placeholder: "topic, persona or funnel" } }),
    status: select("f-status", ["pending", "classified", "refused"].map((s) => [s, s]), filters.status),
    source: el("input", { attrs: { id: "f-source", type: "text", value: filters.source } }),
    from: el("input", { attrs: { id: "f-from", type: "date", value: filters.from } }),
    to: el("input", { attrs: { id: "f-to", type: "date", value: filters.to } }),
  };
  const labels = { brand_id: "Brand", engine: "Engine", citation_class: "Class", decided_by: "Decided by", tag: "Prompt tag", status: "Status", source: "Source", from: "From (UTC)", to: "To (UTC, inclusive)" };
  const form = el("form", {
    attrs: { class: "card controls", id: "runs-filters" },
    children: [...Object.entries(inputs).flatMap(([k, input]) => [el("label", { text: labels[k], attrs: { for: input.id } }), input]), el("button", { text: "Filter", attrs: { type: "submit" } })],
  });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const next = {};
    for (const [k, input] of Object.entries(inputs)) next[k] = input.value.trim();
    navigate(`/runs${queryString(next)}`);
  });
  main.append(form);
  const reply = await callApi("GET", `/v1/runs${queryString({ ...runApiParams(filters), limit: RUNS_PAGE, cursor })}`);
  if (!reply.ok) {
    main.append(notice(reply.text, "failed"));
  } else {
    const items = reply.data.items || [];
    const names = new Map(brands.map((b) => [b.brand_id, b.name]));
    main.append(items.length
      ? table("Runs, most recently recorded first", ["Run", "Answered", "Engine", "Model", "Brand: class (decided by)"], items.map((r) => [
          appLink(`/runs/${enc(r.run_id)}`, r.run_id.slice(0, 13)),
          r.answered_at || r.recorded_at, r.engine, r.model,
          el("span", { children: (r.brands || []).map((s) => el("span", { text: `${names.get(s.brand_id) || s.brand_id}: ${stateText(s)}`, attrs: { class: `cls cls-${(s.citation_class || s.status || "").toLowerCase()}` } })) }),
        ]), { id: "runs-table" })
      : el("p", { text: "No runs match these filters.", attrs: { class: "muted" } }));
    const pager = el("nav", { attrs: { class: "pager", "aria-label": "pages" } });
    if (cursor) pager.append(el("button", { text: "← Back", attrs: { type: "button", class: "secondary" }, on: { click: () => window.history.back() } }));
    if (reply.data.next_cursor) pager.append(appLink(`/runs${queryString({ ...filters, cursor: reply.data.next_cursor })}`, "Next page →", { id: "next-page" }));
    main.append(pager);
  }
  main.append(el("h2", { text: "Export these runs" }), exportButtons("runs", runApiParams(filters), ["csv", "jsonl"]));
  if (brands.length) {
    main.append(el("h2", { text: "Record a run", attrs: { class: "write-action" } }), runForm(brands, () => {}));
  }
}

// -- one run -------------------------------------------------------------------------------

function answerWithHighlights(answer, brands) {
  const terms = brands.flatMap((b) => [b.name, ...(b.aliases || []), ...(b.domains || [])]);
  const p = el("p", { attrs: { class: "answer-text", id: "run-answer-text" } });
  for (const seg of highlightSegments(answer, terms)) {
    if (seg.kind) p.append(el("mark", { text: seg.text, attrs: { class: seg.kind, title: seg.kind === "link" ? "a link in the answer (not followed)" : "a mention of the brand" } }));
    else p.append(document.createTextNode(seg.text));
  }
  return p;
}

async function evidenceStatus(sha256) {
  const holder = el("span", { text: "checking…", attrs: { class: "muted" } });
  callApi("GET", `/v1/public/evidence/${sha256}`, { auth: false }).then((r) => {
    if (r.ok) {
      const inc = r.data.inclusion;
      holder.textContent = inc ? `recorded; in the signed log at leaf ${inc.leaf_index} of tree size ${inc.tree_size}` : "recorded; not yet signed into a tree head";
      holder.className = "status-ok";
    } else {
      holder.textContent = r.status === 404 ? "not recorded (yet)" : r.text;
      holder.className = "status-failed";
    }
  });
  return holder;
}

export async function runPage(main, runId, query) {
  const asOfLocal = query.get("as_of") || "";
  main.append(el("h1", { text: "Run" }));
  const reply = await callApi("GET", `/v1/runs/${enc(runId)}`);
  if (!reply.ok) {
    main.append(notice(reply.text, "failed"));
    return;
  }
  const run = reply.data;
  const brandReplies = await Promise.all(run.brand_ids.map((id) => callApi("GET", `/v1/brands/${enc(id)}`)));
  const brands = brandReplies.filter((r) => r.ok).map((r) => r.data);
  const verifyHref = `/verify?sha256=${run.answer_sha256}`;
  main.append(el("section", {
    attrs: { class: "card" },
    children: [
      rowsList([
        ["Run id", el("code", { text: run.run_id })], ["Engine / model", `${run.engine} / ${run.model}`], ["Source", run.source],
        ...collectionRows(run),
        ["Answered at", run.answered_at || "not given"], ["Recorded at", run.recorded_at],
        ["Evidence (answer SHA-256)", el("code", { text: run.answer_sha256, attrs: { id: "evidence-sha" } })],
        ["Inclusion proof", await evidenceStatus(run.answer_sha256)],
        ["Check it yourself", appLink(verifyHref, "Open in /verify", { id: "verify-link" })],
      ]),
      el("h2", { text: "Prompt" }), el("p", { text: run.prompt, attrs: { class: "answer-text" } }),
      el("h2", { text: "Answer" }), answerWithHighlights(run.answer, brands),
      el("p", { text: "Highlighted: mentions of the brand (name, aliases, domains) and links in the answer.", attrs: { class: "muted small" } }),
    ],
  }));
  const names = new Map(brands.map((b) => [b.brand_id, b.name]));
  main.append(el("h2", { text: "Current class per brand" }), table(null, ["Brand", "Class", "Position", "Decided by", "Judge model", "Reason", "Ground-truth hash"], run.brands.map((s) => [
    names.get(s.brand_id) || s.brand_id, s.status === "classified" ? s.citation_class : s.status,
    // Its place among it and its competitors, in the order the answer first names them.
    positionText(s) + (Array.isArray(s.named_order) && s.named_order.length ? ` (${s.named_order.map((id) => names.get(id) || id).join(", ")})` : ""),
    s.decided_by || "", s.judge_model || "", s.reason || "",
    s.ground_truth_hash ? el("code", { text: s.ground_truth_hash.slice(0, 16) }) : "",
  ]), { id: "run-classes" }));

  const asOf = el("input", { attrs: { id: "as-of", type: "datetime-local", value: asOfLocal } });
  const picker = el("form", {
    attrs: { class: "controls", id: "as-of-form" },
    children: [el("label", { text: "History as of (UTC)", attrs: { for: "as-of" } }), asOf, el("button", { text: "Show", attrs: { type: "submit" } })],
  });
  picker.addEventListener("submit", (event) => {
    event.preventDefault();
    navigate(`/runs/${enc(runId)}${queryString({ as_of: asOf.value })}`);
  });
  main.append(el("h2", { text: "History" }), picker);
  const hist = await callApi("GET", `/v1/runs/${enc(runId)}/classifications${queryString({ as_of: asOfParam(asOfLocal) })}`);
  if (!hist.ok) {
    main.append(notice(hist.text, "failed"));
    return;
  }
  const facts = new Map();
  for (const b of brands) {
    // Superseded facts too: an older classification may have used a fact replaced since.
    const gt = await callApi("GET", `/v1/brands/${enc(b.brand_id)}/ground-truth?include_superseded=true`);
    if (gt.ok) for (const f of [...gt.data.facts, ...(gt.data.superseded || [])]) facts.set(f.fact_id, f);
  }
  if (asOfLocal) {
    main.append(el("p", { text: `Classes as of ${asOfParam(asOfLocal)}: ${hist.data.as_of_classes.map((c) => `${names.get(c.brand_id) || c.brand_id} ${c.citation_class}`).join(", ") || "none yet"}`, attrs: { id: "as-of-classes" } }));
  }
  const items = hist.data.items || [];
  main.append(items.length
    ? table("Every classification, oldest first (append-only)", ["Classified at", "Brand", "Class", "Decided by", "Judge model", "Trigger", "Reason", "Reviewer's note", "Facts used", "Evidence"], items.map((c) => [
        c.classified_at, names.get(c.brand_id) || c.brand_id, c.citation_class, decidedByText(c), c.judge_model || "", c.trigger + (c.trigger_reason ? `: ${c.trigger_reason}` : ""), c.reason, c.note || "",
        c.fact_ids.length === 0 ? el("span", { text: "none used", attrs: { class: "muted" } }) : el("ul", { attrs: { class: "facts" }, children: c.fact_ids.map((id) => {
          const f = facts.get(id);
          return el("li", { children: [el("span", { text: f ? f.text : id }), " ", el("code", { text: f ? `sha256 ${f.content_sha256}` : "(fact not found)" }), f && !f.active ? el("span", { text: ` (superseded ${f.superseded_at})`, attrs: { class: "muted" } }) : null] });
        }) }),
        appLink(`/verify?sha256=${c.evidence_sha256}`, c.evidence_sha256.slice(0, 12)),
      ]), { id: "history-table" })
    : el("p", { text: asOfLocal ? "No classification existed yet at that time." : "Not classified yet.", attrs: { class: "muted" } }));
}

// -- methodology ---------------------------------------------------------------------------

/** Judge-human agreement over this workspace's blind reviews, as the API computed it. */
async function agreementSection() {
  const section = el("section", { attrs: { class: "card", id: "agreement", "aria-labelledby": "agreement-title" } });
  section.append(el("h2", { text: "Judge–human agreement (your workspace)", attrs: { id: "agreement-title" } }));
  if (!getKey()) {
    section.append(el("p", { text: "Sign in to see the agreement between the judge and the people who reviewed its labels blind.", attrs: { class: "muted" } }));
    return section;
  }
  const r = await callApi("GET", "/v1/review/agreement");
  if (!r.ok) {
    section.append(notice(r.text, "failed"));
    return section;
  }
  const a = r.data;
  const share = `${+(a.sample_share * 100).toFixed(2)} %`;
  if (!a.n) {
    section.append(el("p", { text: `n = 0: no blind review yet (${share} of the judge's labels are drawn for one).`, attrs: { id: "agreement-summary" } }));
    return section;
  }
  section.append(
    el("p", { text: `n = ${a.n} blind review(s) (${share} of the judge's labels are drawn). The person chose the judge's class in ${rateText(a.observed)}; Cohen's kappa ${kappaText(a.kappa)}.`, attrs: { id: "agreement-summary" } }),
    table("The judge's precision per class, against the person's blind label", ["Judge's class", "Judge said (n)", "Person agreed", "Precision with its 95 % interval"], agreementRows(a), { id: "agreement-table" }),
  );
  return section;
}

function inline(spans) {
  return spans.map((s) => (s.style ? el(s.style, { text: s.text }) : document.createTextNode(s.text)));
}

export async function methodologyPage(main) {
  main.append(el("h1", { text: "Methodology" }));
  let source;
  try {
    const resp = await fetch("/methodology.md", { credentials: "omit" });
    if (!resp.ok) throw new Error(`HTTP ${resp.status}`);
    source = await resp.text();
  } catch (err) {
    main.append(notice(`The methodology could not be loaded (${err.message}).`, "failed"));
    return;
  }
  const article = el("article", { attrs: { class: "card methodology" } });
  for (const b of markdownBlocks(methodologySource(source))) {
    if (b.type === "h") {
      if (b.level === 1) continue; // the page has its own h1
      article.append(el(`h${Math.min(6, b.level)}`, { children: inline(b.inline) }));
    } else if (b.type === "p") article.append(el("p", { children: inline(b.inline) }));
    else if (b.type === "ul") article.append(el("ul", { children: b.items.map((i) => el("li", { children: inline(i) })) }));
    else if (b.type === "code") article.append(el("pre", { children: [el("code", { text: b.text })] }));
    else if (b.type === "table") {
      article.append(el("table", {
        children: [
          el("thead", { children: [el("tr", { children: b.head.map((c) => el("th", { attrs: { scope: "col" }, children: inline(c) })) })] }),
          el("tbody", { children: b.rows.map((r) => el("tr", { children: r.map((c) => el("td", { children: inline(c) })) })) }),
        ],
      }));
    }
  }
  main.append(article);
  main.append(await agreementSection());
  // The engines in use: those with runs in this workspace (when signed in).
  if (getKey()) {
    const m = await callApi("GET", "/v1/metrics?period=month");
    if (m.ok) {
      main.append(el("section", {
        attrs: { class: "card" },
        children: [el("h2", { text: "Engines in use" }), el("p", { text: segmentValues(m.data, "engine").join(", ") || "no runs yet" }),
          el("p", { text: "Cadence: runs arrive as they are submitted to POST /v1/runs; scheduled collection is not part of this deployment yet.", attrs: { class: "muted small" } })],
      }));
    }
  }
}
