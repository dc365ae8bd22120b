// Alerts (issue #25): rules that fire only on a statistically real change between two closed
// weeks, the channels alerts go to, a test alert, and each alert's delivery log. Every figure
// comes from the API; the page only draws it. API data goes into text nodes and attributes only.
// Forms that write carry class "write-action" (hidden from viewer keys); channel forms and buttons
// "admin-action" (admins only: a webhook URL is a credential).

import { callApi } from "./api.js";
import { el, notice, rowsList, table } from "./dom.js";
import { newIdempotencyKey } from "./model.js";

const enc = encodeURIComponent;

// Every figure of the metrics rows a rule may watch (docs/alerts.md). Shares are tested as a
// change of a proportion, the score and the mean position as a change of a mean.
const METRIC_TEXT = {
  citation_rate: "citation rate",
  confabulation_rate: "confabulation rate",
  share_of_voice: "share of voice",
  source_share_owned: "source share: owned",
  source_share_competitor: "source share: competitor",
  source_share_third_party: "source share: third party",
  position_first: "share named first",
  position_mean: "mean position (1 = first; up = further down the list)",
  position_weighted_visibility: "position-weighted visibility (0–1; 1st 1, 2nd 0.9, …)",
  score: "score (0–1)",
};
// The means are shown as numbers, every other metric as a percentage.
const MEANS = new Set(["position_mean", "position_weighted_visibility", "score"]);
const DIRECTION_TEXT = { either: "either way", up: "up", down: "down" };
const KIND_TEXT = { webhook: "signed webhook", slack: "Slack incoming webhook", email: "e-mail" };

function pct(v) {
  return v === null || v === undefined ? "n/a" : `${(v * 100).toFixed(1)}%`;
}

function figure(metric, v) {
  if (!MEANS.has(metric)) return pct(v);
  return v === null || v === undefined ? "n/a" : v.toFixed(2);
}

// A period's 95% interval: Wilson's, or for the mean position (not a proportion) the bootstrap
// over prompts, its only interval.
function interval(metric, p) {
  const [low, high] = p.ci95_low === null && p.ci95_high === null ? [p.by_prompt_ci95_low, p.by_prompt_ci95_high] : [p.ci95_low, p.ci95_high];
  return `${figure(metric, low)}–${figure(metric, high)}`;
}

function pText(p) {
  return p === null || p === undefined ? "not tested (underpowered)" : p.toPrecision(2);
}

function segmentText(s) {
  const parts = [];
  if (s.engine) parts.push(`engine ${s.engine}`);
  if (s.tag) parts.push(`tag ${s.tag}`);
  if (s.collection_method) parts.push(`collected by ${s.collection_method}`);
  if (s.branded !== null && s.branded !== undefined) parts.push(s.branded ? "branded prompts" : "unbranded prompts");
  return parts.join(", ") || "all answers";
}

function field(label, id, input) {
  input.setAttribute("id", id);
  return el("div", { attrs: { class: "field" }, children: [el("label", { text: label, attrs: { for: id } }), input] });
}

function select(options, value) {
  return el("select", { children: Object.entries(options).map(([v, t]) => el("option", { text: t, attrs: { value: v, selected: v === value } })) });
}

function button(text, onClick, attrs = {}) {
  return el("button", { text, attrs: { type: "button", class: "secondary", ...attrs }, on: { click: onClick } });
}

// -- rules -----------------------------------------------------------------------------------

function ruleForm(brands, reload) {
  const brand = select(Object.fromEntries(brands.map((b) => [b.brand_id, b.name])), "");
  const metric = select(METRIC_TEXT, "citation_rate");
  const direction = select(DIRECTION_TEXT, "either");
  const engine = el("input", { attrs: { maxlength: "200", placeholder: "any" } });
  const tag = el("input", { attrs: { maxlength: "200", placeholder: "any" } });
  const branded = select({ "": "any", true: "branded prompts only", false: "unbranded prompts only" }, "");
  const method = select({ "": "every method together", api: "plain API", api_with_search: "API with web search", assistant: "our assistant" }, "");
  const minN = el("input", { attrs: { type: "number", min: "1", value: "30" } });
  const minPrompts = el("input", { attrs: { type: "number", min: "2", value: "5" } });
  const out = el("div", { attrs: { "aria-live": "polite", id: "rule-result" } });
  const form = el("form", {
    attrs: { class: "card write-action", id: "rule-form" },
    children: [el("h2", { text: "New rule" }), field("Brand", "rule-brand", brand), field("Metric", "rule-metric", metric),
      field("Direction", "rule-direction", direction), field("Engine", "rule-engine", engine), field("Tag", "rule-tag", tag),
      field("Prompts", "rule-branded", branded), field("Collected by", "rule-method", method), field("Minimum answers per week", "rule-min-n", minN),
      field("Minimum distinct prompts per week", "rule-min-prompts", minPrompts),
      el("p", { text: "A rule fires only when the change is statistically real (prompt-level test, corrected over your rules), never on a cell below these minimums: the last closed week against the one before, and after each schedule slot the current week so far against the last closed one; at most once per rule and week. The looks at one week share the rule's significance level (alpha spending): the slots of a week still open spend at most a fifth of it, mostly late in the week, and the week's close the rest, so looking after every slot does not make noise fire more often.", attrs: { class: "muted small", id: "rule-explainer" } }),
      el("button", { text: "Create rule", attrs: { type: "submit" } }), out],
  });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const segment = {};
    if (engine.value.trim()) segment.engine = engine.value.trim();
    if (tag.value.trim()) segment.tag = tag.value.trim();
    if (branded.value) segment.branded = branded.value === "true";
    if (method.value) segment.collection_method = method.value;
    const r = await callApi("POST", "/v1/alerts/rules", {
      body: { brand_id: brand.value, metric: metric.value, direction: direction.value, segment, min_n: Number(minN.value), min_prompts: Number(minPrompts.value) },
      idempotencyKey: newIdempotencyKey(),
    });
    if (!r.ok) out.replaceChildren(notice(r.text, "failed"));
    else reload();
  });
  return form;
}

function rulesTable(rules, brands, reload, status) {
  const names = Object.fromEntries(brands.map((b) => [b.brand_id, b.name]));
  if (!rules.length) return el("p", { text: "No rules yet.", attrs: { class: "muted", id: "rules-empty" } });
  return table("Alert rules", ["Brand", "Metric", "Segment", "Direction", "Minimum", "State", ""], rules.map((r) => [
    names[r.brand_id] || r.brand_id, METRIC_TEXT[r.metric] || r.metric, segmentText(r.segment), DIRECTION_TEXT[r.direction] || r.direction,
    `${r.min_n} answers, ${r.min_prompts} prompts`, r.muted ? "muted" : "active",
    el("span", {
      attrs: { class: "write-action" },
      children: [
        button(r.muted ? "Unmute" : "Mute", async () => {
          const x = await callApi("PATCH", `/v1/alerts/rules/${enc(r.rule_id)}`, { body: { muted: !r.muted } });
          if (!x.ok) status.replaceChildren(notice(x.text, "failed"));
          else reload();
        }, { "data-rule": r.rule_id, class: "secondary mute-rule" }),
        button("Send a test alert", async () => {
          const x = await callApi("POST", `/v1/alerts/rules/${enc(r.rule_id)}/test`);
          if (!x.ok) status.replaceChildren(notice(x.text, "failed"));
          else {
            await reload();
            // reload() rebuilt the page: the answer goes into the new status line, not the old one.
            (document.getElementById("alerts-status") || status).replaceChildren(
              notice(`Test alert sent to ${x.data.deliveries} channel(s); its delivery log is below.`, "ok"));
          }
        }, { "data-rule": r.rule_id, class: "secondary test-rule" }),
      ],
    }),
  ]), { id: "rules-table" });
}

// -- channels --------------------------------------------------------------------------------

function channelForm(reload) {
  const kind = select(KIND_TEXT, "webhook");
  const target = el("input", { attrs: { required: true, maxlength: "2000", placeholder: "https://… or name@example.com" } });
  const name = el("input", { attrs: { maxlength: "200" } });
  const out = el("div", { attrs: { "aria-live": "polite", id: "channel-result" } });
  const form = el("form", {
    attrs: { class: "card admin-action", id: "channel-form" },
    children: [el("h2", { text: "New channel (admin)" }), field("Kind", "channel-kind", kind), field("URL or address", "channel-target", target),
      field("Name (optional)", "channel-name", name), el("button", { text: "Add channel", attrs: { type: "submit" } }), out],
  });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = { kind: kind.value, target: target.value.trim() };
    if (name.value.trim()) body.name = name.value.trim();
    const r = await callApi("POST", "/v1/alerts/channels", { body });
    if (!r.ok) {
      out.replaceChildren(notice(r.text, "failed"));
      return;
    }
    await reload();
    // reload() rebuilt the page; the secret goes into the new form's result, shown this once.
    const fresh = document.getElementById("channel-result");
    (fresh || out).replaceChildren(notice("Channel added. Its webhook signing secret is shown this once: copy it now.", "ok"),
      el("p", { children: [el("code", { text: r.data.secret, attrs: { id: "channel-secret" } })] }));
  });
  return form;
}

function channelsTable(channels, reload, status) {
  if (!channels.length) return el("p", { text: "No channels yet: alerts are stored but not sent.", attrs: { class: "muted", id: "channels-empty" } });
  return table("Channels", ["Kind", "Target", "Name", ""], channels.map((c) => [
    KIND_TEXT[c.kind] || c.kind, c.target, c.name || "",
    el("span", { attrs: { class: "admin-action" }, children: [button("Delete", async () => {
      const x = await callApi("DELETE", `/v1/alerts/channels/${enc(c.channel_id)}`);
      if (!x.ok) status.replaceChildren(notice(x.text, "failed"));
      else reload();
    })] }),
  ]), { id: "channels-table" });
}

// -- alerts and their delivery log -----------------------------------------------------------

async function deliveryLog(alertId, box) {
  const r = await callApi("GET", `/v1/alerts/${enc(alertId)}`);
  if (!r.ok) {
    box.replaceChildren(notice(r.text, "failed"));
    return;
  }
  const a = r.data;
  box.replaceChildren(
    el("h3", { text: `${a.test ? "Test alert" : "Alert"} ${a.alert_id}` }),
    rowsList([
      ["Metric", METRIC_TEXT[a.metric] || a.metric],
      ["Before", `${figure(a.metric, a.before.value)} (n ${a.before.n}, ${a.before.prompts} prompts, 95% ${interval(a.metric, a.before)})`],
      ["After", `${figure(a.metric, a.after.value)} (n ${a.after.n}, ${a.after.prompts} prompts, 95% ${interval(a.metric, a.after)})`],
      ["p-value", `${pText(a.p_value)} (adjusted over ${a.family_size} rule(s): ${pText(a.p_adjusted)})`],
      ["Runs", `${a.runs.after.length} of the week, ${a.runs.before.length} of the week before`],
    ]),
    (a.deliveries || []).length
      ? table("Delivery log", ["Channel", "Status", "Attempts", "Last error", "Delivered"], a.deliveries.map((d) => [
          KIND_TEXT[d.kind] || d.kind, d.status, String(d.attempts), d.last_error || "", d.delivered_at || "",
        ]), { id: "delivery-log" })
      : el("p", { text: "No channel: nothing to deliver.", attrs: { class: "muted" } }),
  );
}

function alertsTable(alerts, rules, log) {
  const ruleOf = Object.fromEntries(rules.map((r) => [r.rule_id, r]));
  if (!alerts.length) return el("p", { text: "No alert yet.", attrs: { class: "muted", id: "alerts-empty" } });
  return table("Alerts, newest first", ["Raised", "Kind", "Brand", "Metric", "Change", "Adjusted p", ""], alerts.map((a) => [
    a.raised_at, a.test ? "test" : "fired", a.brand_id, METRIC_TEXT[a.metric] || a.metric,
    `${figure(a.metric, a.before.value)} → ${figure(a.metric, a.after.value)}`, pText(a.p_adjusted),
    button("Delivery log", () => deliveryLog(a.alert_id, log), { "data-alert": a.alert_id, title: ruleOf[a.rule_id] ? "" : "rule deleted" }),
  ]), { id: "alerts-table" });
}

export async function alertsPage(main) {
  const reload = async () => {
    main.replaceChildren();
    await alertsPage(main);
  };
  main.append(el("h1", { text: "Alerts" }));
  const [brands, rules, channels, alerts] = await Promise.all([
    callApi("GET", "/v1/brands"), callApi("GET", "/v1/alerts/rules"), callApi("GET", "/v1/alerts/channels"), callApi("GET", "/v1/alerts?limit=50"),
  ]);
  for (const r of [brands, rules, alerts]) {
    if (!r.ok) {
      main.append(notice(r.text, "failed"));
      return;
    }
  }
  const status = el("div", { attrs: { "aria-live": "polite", id: "alerts-status" } });
  const log = el("section", { attrs: { class: "card", id: "alert-detail" } });
  const brandItems = brands.data.items || [];
  const ruleItems = rules.data.items || [];
  main.append(status, el("section", { attrs: { class: "card" }, children: [el("h2", { text: "Rules" }), rulesTable(ruleItems, brandItems, reload, status)] }));
  if (brandItems.length) main.append(ruleForm(brandItems, reload));
  // Channels are an admin's: another key gets 403 and sees why, not the list.
  main.append(el("section", {
    attrs: { class: "card" },
    children: [el("h2", { text: "Channels" }), channels.ok ? channelsTable(channels.data.items || [], reload, status) : notice(channels.text, "failed")],
  }));
  if (channels.ok) main.append(channelForm(reload));
  main.append(el("section", { attrs: { class: "card" }, children: [el("h2", { text: "Alerts" }), alertsTable(alerts.data.items || [], ruleItems, log)] }), log);
}
