// The review queue (issue #28): the pairs the judge did not decide, which a person decides, and
// a blind sample of the pairs it did decide, which a person labels to measure the judge. Every
// figure (counts, waiting times, mention spans) comes from the API; the page only draws it.
// API data goes into text nodes and attributes only; links come only from safeHttpUrl.

import { callApi } from "./api.js";
import { safeHttpUrl } from "./citations.js";
import { appLink, el, notice, rowsList, table } from "./dom.js";
import { CLASSES, durationText, newIdempotencyKey, pendingText, queryString, sampleText } from "./model.js";

let navigate = () => {};

/** The router's navigate(path, {replace, state}) for the review pages. */
export function setReviewNavigate(fn) {
  navigate = fn;
}

const enc = encodeURIComponent;
const QUEUE_PAGE = 25;

const KIND_TEXT = {
  pending: "pending: the judge did not decide it",
  sample: "blind sample: the judge decided it (its label is hidden)",
};

const CLASS_TEXT = {
  STRONG: "cites a URL on the brand's own domain",
  DESCRIPTIVE: "describes the brand correctly (checked against the facts below), without a link",
  ECHO: "only repeats the brand's name, states nothing about it",
  CONFABULATED: "states something about the brand that contradicts the facts or is absent from them",
  ABSENT: "does not mention the brand",
};

const JUDGE_STATE_TEXT = {
  waiting: "not judged yet (parked for the judge)",
  abstained: "the judge looked and abstained",
  unavailable: "the judge could not answer (it is retried with backoff)",
};

/** The queue's filters kept from page to page (and from an item to the next). */
function queueFilters(query) {
  return { brand_id: query.get("brand_id") || "", kind: query.get("kind") || "" };
}

function itemPath(entry, filters) {
  return `/review/${enc(entry.run_id)}/${enc(entry.brand_id)}${queryString(filters)}`;
}

function sourceLink(url) {
  const href = safeHttpUrl(url);
  if (href) return el("a", { text: href, attrs: { href, rel: "noopener noreferrer nofollow", target: "_blank" } });
  return el("span", { text: url ? `${url} (not a safe web link; shown as text)` : "no source URL", attrs: { class: "muted" } });
}

// -- the queue -----------------------------------------------------------------------------

export async function reviewQueuePage(main, query) {
  const filters = queueFilters(query);
  const cursor = query.get("cursor") || "";
  main.append(el("h1", { text: "Review queue" }));
  const [brandsReply, reply] = await Promise.all([
    callApi("GET", "/v1/brands"),
    callApi("GET", `/v1/review/queue${queryString({ ...filters, limit: QUEUE_PAGE, cursor })}`),
  ]);
  if (!brandsReply.ok || !reply.ok) {
    main.append(notice((brandsReply.ok ? reply : brandsReply).text, "failed"));
    return;
  }
  const q = reply.data;
  main.append(el("section", {
    attrs: { class: "card", id: "queue-summary" },
    children: [el("p", { text: pendingText(q), attrs: { id: "queue-pending" } }), el("p", { text: sampleText(q), attrs: { id: "queue-sample" } }),
      el("p", { text: "A pending pair's class from a person becomes its label (decided by human, appended to the history). A sample pair keeps the judge's label: the person's class only measures the judge (see the methodology).", attrs: { class: "muted small" } })],
  }));
  const brandSel = el("select", {
    attrs: { id: "q-brand" },
    children: [el("option", { text: "any", attrs: { value: "" } }),
      ...(brandsReply.data.items || []).map((b) => el("option", { text: b.name, attrs: { value: b.brand_id, selected: b.brand_id === filters.brand_id } }))],
  });
  const kindSel = el("select", {
    attrs: { id: "q-kind" },
    children: [el("option", { text: "both", attrs: { value: "" } }),
      ...Object.entries(KIND_TEXT).map(([k, t]) => el("option", { text: t, attrs: { value: k, selected: k === filters.kind } }))],
  });
  const form = el("form", {
    attrs: { class: "card controls", id: "queue-filters" },
    children: [el("label", { text: "Brand", attrs: { for: "q-brand" } }), brandSel, el("label", { text: "Kind", attrs: { for: "q-kind" } }), kindSel,
      el("button", { text: "Filter", attrs: { type: "submit" } })],
  });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    navigate(`/review${queryString({ brand_id: brandSel.value, kind: kindSel.value })}`);
  });
  main.append(form);
  const items = q.items || [];
  if (!items.length) {
    main.append(el("p", { text: cursor ? "No more pairs." : "Nothing to review with these filters.", attrs: { class: "muted", id: "queue-empty" } }));
    return;
  }
  main.append(el("p", { children: [appLink(itemPath(items[0], filters), "Start with the first pair", { id: "queue-start" })] }));
  main.append(table("Pairs to review, pending first (oldest first), then the blind sample", ["Pair", "Why it is here", "Brand", "Engine", "Waiting", "Judge's reason"],
    items.map((i) => [
      appLink(itemPath(i, filters), `run ${i.run_id.slice(0, 13)}`),
      KIND_TEXT[i.kind] || i.kind, i.brand_name, i.engine, durationText(i.age_s),
      i.kind === "sample" ? el("span", { text: "hidden (blind review)", attrs: { class: "muted" } }) : i.reason || "",
    ]), { id: "queue-table" }));
  const pager = el("nav", { attrs: { class: "pager", "aria-label": "pages" } });
  if (cursor) pager.append(el("button", { text: "← Back", attrs: { type: "button", class: "secondary" }, on: { click: () => window.history.back() } }));
  if (q.next_cursor) pager.append(appLink(`/review${queryString({ ...filters, cursor: q.next_cursor })}`, "Next page →", { id: "queue-next-page" }));
  main.append(pager);
}

// -- one pair ------------------------------------------------------------------------------

function answerWithMentions(segments) {
  const p = el("p", { attrs: { class: "answer-text", id: "review-answer" } });
  for (const s of segments || []) {
    if (s.mention) {
      p.append(el("mark", {
        text: s.text,
        attrs: { class: s.mention === "domain" ? "link" : "mention", "data-mention": s.mention, title: s.mention === "domain" ? "one of the brand's domains" : "the brand's name or an alias" },
      }));
    } else p.append(document.createTextNode(s.text));
  }
  return p;
}

function judgeSection(judge) {
  const section = el("section", { attrs: { class: "card", id: "review-judge", "aria-labelledby": "review-judge-title" } });
  section.append(el("h2", { text: "What the judge said", attrs: { id: "review-judge-title" } }), rowsList([
    ["State", JUDGE_STATE_TEXT[judge.state] || judge.state],
    ["Reason", judge.reason || "none given"],
    ["Attempts", String(judge.attempts)],
    ...(judge.judge_model ? [["Judge model", judge.judge_model]] : []),
  ]));
  section.append((judge.claims || []).length
    ? table("Each claim about the brand, with the judge's verdict", ["Claim", "Verdict", "Why", "Facts"], judge.claims.map((c) => [
        c.claim, c.verdict || "none", c.reason || "", c.fact_ids.length ? el("code", { text: c.fact_ids.join(", ") }) : el("span", { text: "none", attrs: { class: "muted" } }),
      ]), { id: "review-claims" })
    : el("p", { text: "The judge left no per-claim verdicts for this pair.", attrs: { class: "muted small" } }));
  return section;
}

function decisionForm(item, filters) {
  const radios = CLASSES.map((c) => {
    const id = `review-class-${c.toLowerCase()}`;
    return el("div", {
      attrs: { class: "choice" },
      children: [el("input", { attrs: { type: "radio", name: "citation_class", id, value: c, required: true } }),
        el("label", { attrs: { for: id }, children: [el("strong", { text: c }), document.createTextNode(`: ${CLASS_TEXT[c]}`)] })],
    });
  });
  const note = el("textarea", { attrs: { id: "review-note", rows: "2", maxlength: "2000" } });
  const submit = el("button", { text: "Record my class", attrs: { type: "submit" } });
  const out = el("div", { attrs: { "aria-live": "polite", id: "review-result" } });
  const form = el("form", {
    attrs: { class: "card write-action", id: "review-form" }, // hidden from viewer keys
    children: [
      el("fieldset", { children: [el("legend", { text: "Your class for this pair" }), ...radios] }),
      el("div", { attrs: { class: "field" }, children: [el("label", { text: "Note (optional)", attrs: { for: "review-note" } }), note] }),
      submit, out,
    ],
  });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const chosen = form.querySelector("input[name=citation_class]:checked");
    if (!chosen) {
      out.replaceChildren(notice("Choose a class first.", "failed"));
      return;
    }
    const body = { citation_class: chosen.value, ground_truth_hash: item.ground_truth_hash };
    if (note.value.trim()) body.note = note.value.trim();
    if (item.classification_id) body.classification_id = item.classification_id;
    submit.disabled = true;
    out.replaceChildren(notice("Recording…"));
    const r = await callApi("POST", `/v1/review/queue/${enc(item.run_id)}/${enc(item.brand_id)}/decision`, { body, idempotencyKey: newIdempotencyKey() });
    if (!r.ok) {
      submit.disabled = false;
      out.replaceChildren(notice(r.text, "failed"));
      return;
    }
    for (const input of form.querySelectorAll("input, textarea")) input.disabled = true;
    const d = r.data;
    const what = d.kind === "pending"
      ? `Recorded ${d.citation_class} by ${d.reviewer}: it is now this pair's label, appended to the run's history as decided by a person.`
      : `Recorded ${d.citation_class} by ${d.reviewer} as a blind review: the judge's label stays; your class counts toward the published agreement.`;
    out.replaceChildren(notice(what, "ok"), el("p", { children: [appLink(`/runs/${enc(item.run_id)}`, "Open the run and its history", { id: "review-run-link" })] }));
    const next = await callApi("GET", `/v1/review/queue${queryString({ ...filters, limit: 1 })}`);
    const first = next.ok && (next.data.items || [])[0];
    out.append(first
      ? el("p", { children: [appLink(itemPath(first, filters), "Next pair in the queue →", { id: "review-next" })] })
      : el("p", { text: "The queue is empty.", attrs: { class: "muted", id: "review-done" } }));
  });
  return form;
}

export async function reviewItemPage(main, runId, brandId, query) {
  const filters = queueFilters(query);
  main.append(el("h1", { text: "Review a pair" }));
  const back = el("p", { children: [appLink(`/review${queryString(filters)}`, "← The queue", { id: "review-back" })] });
  const reply = await callApi("GET", `/v1/review/queue/${enc(runId)}/${enc(brandId)}`);
  if (!reply.ok) {
    main.append(notice(reply.text, "failed"), back);
    return;
  }
  const item = reply.data;
  main.append(back, el("p", { text: `Why it is here: ${KIND_TEXT[item.kind] || item.kind}.`, attrs: { class: "notice", id: "review-kind" } }));
  main.append(el("section", {
    attrs: { class: "card" },
    children: [
      rowsList([
        ["Brand", `${item.brand_name} (${item.brand_id})`],
        ["Names and domains matched", [item.brand_name, ...(item.aliases || []), ...(item.domains || [])].join(", ")],
        ["Run", appLink(`/runs/${enc(item.run_id)}`, item.run_id)],
        ["Engine / model", `${item.engine} / ${item.model}`],
        ["Answered at", item.answered_at || "not given"],
        ["Evidence (answer SHA-256)", el("code", { text: item.answer_sha256 })],
      ]),
      el("h2", { text: "Prompt" }), el("p", { text: item.prompt, attrs: { class: "answer-text" } }),
      el("h2", { text: "Answer" }), answerWithMentions(item.answer_segments),
      el("p", { text: "Highlighted: where the answer names the brand (its name, aliases and domains), found by the classifier's own matcher.", attrs: { class: "muted small" } }),
    ],
  }));
  main.append(el("section", {
    attrs: { class: "card", "aria-labelledby": "review-facts-title" },
    children: [
      el("h2", { text: "The facts to judge against", attrs: { id: "review-facts-title" } }),
      rowsList([["Ground-truth hash", el("code", { text: item.ground_truth_hash, attrs: { id: "review-gt-hash" } })]]),
      item.facts.length
        ? table("Active facts (your class is recorded against this hash)", ["Fact id", "Type", "Fact", "Source", "SHA-256"], item.facts.map((f) => [
            el("code", { text: f.fact_id }), f.type, f.text, sourceLink(f.source_url), el("code", { text: f.content_sha256 }),
          ]), { id: "review-facts" })
        : notice("The brand has no active ground truth: nothing can be decided until it has facts.", "failed"),
    ],
  }));
  if (item.judge) main.append(judgeSection(item.judge));
  else main.append(el("p", { text: "Blind review: the judge's label and reasoning are hidden, so your class does not lean on it.", attrs: { class: "muted", id: "review-blind" } }));
  main.append(decisionForm(item, filters));
}
