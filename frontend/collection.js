// The collection pages (the collector's API, issue #12): prompts (list, add, import a CSV or
// JSONL file with the per-row report), engines (list, add, with their collection method) and
// their secrets (add, write-only; retire), schedules (list, add, run now).

import { callApi } from "./api.js";
import { appLink, el, notice, table } from "./dom.js";
import { errorField, newIdempotencyKey, queryString, splitList } from "./model.js";
import { METHOD_LABELS, methodLabel } from "./run_collection.js";

let navigate = () => {};

export function setCollectionNavigate(fn) {
  navigate = fn;
}

const enc = encodeURIComponent;

function tabs(current) {
  const items = [["prompts", "/collect/prompts", "Prompts"], ["engines", "/collect/engines", "Engines"], ["schedules", "/collect/schedules", "Schedules"]];
  return el("nav", {
    attrs: { class: "tabs", "aria-label": "collection" },
    children: items.map(([key, href, text]) => appLink(href, text, key === current ? { "aria-current": "page" } : {})),
  });
}

/** A form of labelled inputs; the API's 422 for a field is shown next to it. */
function apiForm(id, specs, submitText, send) {
  const inputs = {};
  const errors = {};
  const nodes = specs.map(([key, label, input, hint]) => {
    const inputId = `${id}-${key.replace(/_/g, "-")}`;
    input.setAttribute("id", inputId);
    input.setAttribute("aria-describedby", `${inputId}-error`);
    inputs[key] = input;
    errors[key] = el("p", { attrs: { class: "field-error", id: `${inputId}-error`, role: "alert" } });
    errors[key].hidden = true;
    return el("div", { attrs: { class: "field" }, children: [el("label", { text: label, attrs: { for: inputId } }), input, hint ? el("p", { text: hint, attrs: { class: "muted small" } }) : null, errors[key]] });
  });
  const out = el("div", { attrs: { "aria-live": "polite" } });
  // write-action: hidden from viewer keys (styles.css; the gateway refuses their writes anyway).
  const form = el("form", { attrs: { class: "card write-action", id }, children: [...nodes, el("button", { text: submitText, attrs: { type: "submit" } }), out] });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    for (const [key, e] of Object.entries(errors)) {
      e.hidden = true;
      inputs[key].removeAttribute("aria-invalid");
    }
    out.replaceChildren();
    const reply = await send(inputs);
    if (!reply.ok) {
      const key = errorField(reply.data);
      if (key && errors[key]) {
        errors[key].textContent = reply.text;
        errors[key].hidden = false;
        inputs[key].setAttribute("aria-invalid", "true");
      } else out.replaceChildren(notice(reply.text, "failed"));
    }
  });
  return form;
}

const text = (attrs = {}) => el("input", { attrs: { type: "text", ...attrs } });

// -- prompts -------------------------------------------------------------------------------

export async function promptsPage(main, query) {
  main.append(el("h1", { text: "Prompts" }), tabs("prompts"));
  const filters = { prompt_set: query.get("prompt_set") || "", tag: query.get("tag") || "", after: query.get("after") || "" };
  const reply = await callApi("GET", `/v1/prompts${queryString({ ...filters, limit: 50 })}`);
  if (!reply.ok) {
    main.append(notice(reply.text, "failed"));
    return;
  }
  const items = reply.data.items || [];
  main.append(items.length
    ? table("Prompts", ["Prompt", "Set", "Locale", "Tags", "Branded", "Brands"], items.map((p) => [
        p.text, p.prompt_set, p.locale, Object.entries(p.tags || {}).filter(([, v]) => v).map(([k, v]) => `${k}: ${v}`).join(", "),
        p.branded ? `yes (${(p.branded_brand_ids || []).join(", ")})` : "no", (p.brand_ids || []).join(", "),
      ]), { id: "prompts-table" })
    : el("p", { text: "No prompts yet.", attrs: { class: "muted" } }));
  if (reply.data.next_after) main.append(appLink(`/collect/prompts${queryString({ ...filters, after: reply.data.next_after })}`, "Next page →"));

  main.append(el("h2", { text: "Add a prompt", attrs: { class: "write-action" } }), apiForm("prompt-form", [
    ["text", "Prompt", el("textarea", { attrs: { rows: "2", required: true } })],
    ["prompt_set", "Set", text({ value: "default" })],
    ["locale", "Locale", text({ value: "en" })],
    ["topic", "Topic tag", text()],
    ["brand_ids", "Brands (ids, one per line)", el("textarea", { attrs: { rows: "2" } })],
  ], "Add prompt", async (i) => {
    const body = { text: i.text.value, prompt_set: i.prompt_set.value.trim() || "default", locale: i.locale.value.trim() || "en", brand_ids: splitList(i.brand_ids.value) };
    if (i.topic.value.trim()) body.tags = { topic: i.topic.value.trim() };
    const r = await callApi("POST", "/v1/prompts", { body, idempotencyKey: newIdempotencyKey() });
    if (r.ok) navigate("/collect/prompts", { replace: true });
    return r;
  }));

  const file = el("input", { attrs: { id: "import-file", type: "file", accept: ".csv,.jsonl,.ndjson,text/csv,application/x-ndjson" } });
  const report = el("div", { attrs: { "aria-live": "polite", id: "import-report" } });
  const importForm = el("form", {
    attrs: { class: "card write-action", id: "import-form" },
    children: [el("label", { text: "CSV or JSONL file", attrs: { for: "import-file" } }), file,
      el("p", { text: "CSV with a header (text, prompt_set, locale, topic, persona, funnel, brand_ids separated by ;) or one JSON object per line. A re-import changes nothing.", attrs: { class: "muted small" } }),
      el("button", { text: "Import", attrs: { type: "submit" } }), report],
  });
  importForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const chosen = file.files && file.files[0];
    if (!chosen) {
      report.replaceChildren(notice("Choose a file first.", "failed"));
      return;
    }
    const jsonl = /\.(jsonl|ndjson)$/i.test(chosen.name);
    const r = await callApi("POST", "/v1/prompts/import", { rawBody: await chosen.text(), contentType: jsonl ? "application/x-ndjson" : "text/csv" });
    if (!r.ok) {
      report.replaceChildren(notice(`Import failed: ${r.text}`, "failed"));
      return;
    }
    const o = r.data;
    report.replaceChildren(
      notice(`${o.accepted} accepted, ${o.unchanged} unchanged, ${o.refused} refused.`, o.refused ? "failed" : "ok"),
      table("Per row", ["Line", "Outcome", "Prompt id", "Reason"], (o.rows || []).map((row) => [String(row.line), row.outcome, row.prompt_id || "", row.reason || ""]), { id: "import-rows" }),
      el("p", { children: [appLink("/collect/prompts", "Reload the prompts")] }),
    );
  });
  main.append(el("h2", { text: "Import prompts" }), importForm);
}

// -- engines -------------------------------------------------------------------------------

export async function enginesPage(main) {
  main.append(el("h1", { text: "Engines" }), tabs("engines"));
  const [reply, secretsReply] = await Promise.all([callApi("GET", "/v1/engines"), callApi("GET", "/v1/secrets")]);
  if (!reply.ok) {
    main.append(notice(reply.text, "failed"));
    return;
  }
  const secrets = secretsReply.ok ? secretsReply.data.items || [] : [];
  const secretName = new Map(secrets.map((s) => [s.secret_id, s.name]));
  const keyFrom = (e) => (e.api_key_secret_id ? `secret ${secretName.get(e.api_key_secret_id) || e.api_key_secret_id}`
    : e.operator_key ? `operator key ${e.operator_key}` : "none");
  const items = reply.data.items || [];
  main.append(items.length
    ? table("Engines", ["Id", "Name", "Kind", "Collection", "Model", "Endpoint", "Key", "Concurrency", "Retired"], items.map((e) => [
        el("code", { text: e.engine_id }), e.name, e.kind, methodLabel(e.collection_method), e.model, e.base_url || "", keyFrom(e),
        String(e.concurrency ?? ""), e.retired_at || "",
      ]), { id: "engines-table" })
    : el("p", { text: "No engines yet.", attrs: { class: "muted" } }));
  const keyChoice = el("select", {
    children: [el("option", { text: "no key", attrs: { value: "" } }),
      ...secrets.map((s) => el("option", { text: s.name, attrs: { value: s.secret_id } }))],
  });
  main.append(el("h2", { text: "Add an engine", attrs: { class: "write-action" } }), apiForm("engine-form", [
    ["name", "Name", text({ required: true })],
    ["kind", "Kind", el("select", { children: ["openai", "assistant"].map((k) => el("option", { text: k, attrs: { value: k } })) }), "openai: an OpenAI-compatible endpoint; assistant: this deployment's own assistant"],
    ["base_url", "Endpoint (base URL)", text({ placeholder: "https://api.example.com/v1" }), "a public address (a private or local one only if the operator allows it)"],
    ["model", "Model", text()],
    ["collection_method", "Collection method", el("select", {
      children: [el("option", { text: "from the kind and params", attrs: { value: "" } }),
        ...Object.entries(METHOD_LABELS).map(([v, label]) => el("option", { text: label, attrs: { value: v } }))],
    }), "how its answers are collected: metrics never average across methods. An endpoint that searches the web or grounds its answers is \"API with web search\""],
    ["api_key_secret_id", "API key", keyChoice, "one of this workspace's secrets (add one below); the key itself is never shown again"],
  ], "Add engine", async (i) => {
    const body = { name: i.name.value.trim(), kind: i.kind.value };
    for (const key of ["base_url", "model", "collection_method", "api_key_secret_id"]) if (i[key].value.trim()) body[key] = i[key].value.trim();
    const r = await callApi("POST", "/v1/engines", { body, idempotencyKey: newIdempotencyKey() });
    if (r.ok) navigate("/collect/engines", { replace: true });
    return r;
  }));
  // Secrets: a key is sent once, from a password field that is cleared at once; only the name
  // and the id ever come back.
  main.append(el("h2", { text: "Engine secrets" }), secrets.length
    ? table("Secrets", ["Name", "Id", "Added", ""], secrets.map((s) => [
        s.name, el("code", { text: s.secret_id }), s.created_at || "",
        el("button", {
          text: "Retire", attrs: { type: "button", class: "secondary write-action", "data-retire-secret": s.secret_id },
          on: { click: async () => {
            const r = await callApi("POST", `/v1/secrets/${enc(s.secret_id)}/retire`);
            if (r.ok) navigate("/collect/engines", { replace: true });
            else main.append(notice(`Retire failed: ${r.text}`, "failed"));
          } },
        }),
      ]), { id: "secrets-table" })
    : el("p", { text: "No secrets yet.", attrs: { class: "muted" } }));
  main.append(apiForm("secret-form", [
    ["name", "Secret name", text({ required: true, placeholder: "openai-production" })],
    ["value", "Key", el("input", { attrs: { type: "password", required: true, autocomplete: "off", spellcheck: "false" } }), "stored encrypted; never shown again, not even to you"],
  ], "Add secret", async (i) => {
    const body = { name: i.name.value.trim(), value: i.value.value.trim() };
    i.value.value = "";
    const r = await callApi("POST", "/v1/secrets", { body });
    if (r.ok) navigate("/collect/engines", { replace: true });
    return r;
  }));
}

// -- schedules -----------------------------------------------------------------------------

/** The planner's view of a schedule: a badge with the reason when it could not be planned. */
function planState(s) {
  if (!s.plan_error) return s.planned_through ? "on time" : "not planned yet";
  const times = s.plan_failures > 1 ? ` (${s.plan_failures} times in a row)` : "";
  return el("span", {
    attrs: { class: "plan-error", "data-plan-error": s.schedule_id },
    children: [
      el("strong", { text: `Not planned${times}` }), el("span", { text: `: ${s.plan_error}` }),
      el("span", { text: `. Tried again at ${s.next_due_at || "?"}; changing the schedule clears this.`, attrs: { class: "muted small" } }),
    ],
  });
}

export async function schedulesPage(main) {
  main.append(el("h1", { text: "Schedules" }), tabs("schedules"));
  const [reply, engines] = await Promise.all([callApi("GET", "/v1/schedules"), callApi("GET", "/v1/engines")]);
  if (!reply.ok) {
    main.append(notice(reply.text, "failed"));
    return;
  }
  const out = el("div", { attrs: { "aria-live": "polite", id: "run-now-result" } });
  const items = reply.data.items || [];
  main.append(out, items.length
    ? table("Schedules", ["Name", "Prompts", "Engines", "Cadence", "Samples", "Next due", "Planning", ""], items.map((s) => [
        s.name || s.schedule_id, [...(s.prompt_sets || []).map((p) => `set ${p}`), ...(s.prompt_tags || []).map((t) => `tag ${t}`)].join(", ") || "all",
        (s.engine_ids || []).join(", "), s.cron ? `cron ${s.cron}` : `every ${s.interval_s} s`, String(s.samples ?? ""), s.next_due_at || "", planState(s),
        el("button", {
          text: "Run now", attrs: { type: "button", class: "secondary write-action", "data-run-now": s.schedule_id },
          on: { click: async () => {
            const r = await callApi("POST", `/v1/schedules/${enc(s.schedule_id)}/run`, { idempotencyKey: newIdempotencyKey() });
            out.replaceChildren(r.ok ? notice(`Planned: ${JSON.stringify(r.data).slice(0, 300)}`, "ok") : notice(`Run now failed: ${r.text}`, "failed"));
          } },
        }),
      ]), { id: "schedules-table" })
    : el("p", { text: "No schedules yet.", attrs: { class: "muted" } }));
  const engineIds = engines.ok ? (engines.data.items || []).filter((e) => !e.retired_at).map((e) => e.engine_id) : [];
  main.append(el("h2", { text: "Add a schedule", attrs: { class: "write-action" } }), apiForm("schedule-form", [
    ["name", "Name", text({ required: true })],
    ["engine_ids", "Engines", el("select", { attrs: { multiple: true, size: String(Math.min(5, Math.max(2, engineIds.length))) }, children: engineIds.map((id) => el("option", { text: id, attrs: { value: id } })) })],
    ["prompt_sets", "Prompt sets (one per line; empty = all)", el("textarea", { attrs: { rows: "2" } })],
    ["interval_s", "Every (seconds)", el("input", { attrs: { type: "number", min: "60", value: "86400" } }), "or a cron expression below (then leave this empty)"],
    ["cron", "Cron (UTC)", text({ placeholder: "0 6 * * *" })],
    ["samples", "Samples per prompt and engine", el("input", { attrs: { type: "number", min: "1", value: "1" } })],
  ], "Add schedule", async (i) => {
    const body = { name: i.name.value.trim(), engine_ids: [...i.engine_ids.selectedOptions].map((o) => o.value), prompt_sets: splitList(i.prompt_sets.value), samples: Number(i.samples.value || 1) };
    if (i.cron.value.trim()) body.cron = i.cron.value.trim();
    else if (i.interval_s.value) body.interval_s = Number(i.interval_s.value);
    const r = await callApi("POST", "/v1/schedules", { body, idempotencyKey: newIdempotencyKey() });
    if (r.ok) navigate("/collect/schedules", { replace: true });
    return r;
  }));
}
