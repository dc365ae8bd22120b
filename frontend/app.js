// The Attesta SPA: the router, the chat page ("/") and the evidence check ("/verify"); the
// auditor's pages (signed in with an API key) are in pages.js.
// API data is only ever put into the page with textContent / setAttribute on nodes built here;
// never innerHTML. Links come only from safeHttpUrl (citations.js).

import { callApi, clearKey, getKey, setAuthFailureHandler } from "./api.js";
import { el, rowsList } from "./dom.js";
import { enginesPage, promptsPage, schedulesPage, setCollectionNavigate } from "./collection.js";
import { reviewItemPage, reviewQueuePage, setReviewNavigate } from "./review.js";
import { keysPage, setKeysNavigate } from "./keys.js";
import { alertsPage } from "./alerts.js";
import {
  brandEditPage, brandsPage, groundTruthPage, methodologyPage, overviewPage, runPage, runsPage,
  setNavigate, signinPage,
} from "./pages.js";
import {
  checkVerdict,
  citationItems,
  evidenceRows,
  placeMarkers,
  hybridPathLabel,
  parseVerifyInput,
  scoreMeaning,
  sha256HexOfText,
  statusNotice,
} from "./citations.js";

// -- chat ----------------------------------------------------------------------------------

let openPopover = null; // {button, panel}
let calibration = null; // the score chip's words (calibration.json), loaded with the chat page

async function loadCalibration() {
  try {
    const resp = await fetch("/calibration.json", { credentials: "omit" });
    if (resp.ok) calibration = await resp.json();
  } catch {
    calibration = null; // the chip then says where the table is
  }
}

function closePopover() {
  if (!openPopover) return;
  openPopover.button.setAttribute("aria-expanded", "false");
  openPopover.panel.hidden = true;
  openPopover = null;
}

function citationPanel(item, id) {
  const source = item.href
    ? el("a", {
        text: item.href,
        attrs: { href: item.href, rel: "noopener noreferrer nofollow", target: "_blank" },
      })
    : el("span", {
        text: item.urlText ? `${item.urlText} (not a safe web link; shown as text)` : "no source URL",
        attrs: { class: "muted" },
      });
  const rows = [
    ["Card", el("span", { children: [item.title ? el("span", { text: `${item.title} ` }) : null, el("code", { text: item.cardId })] })],
    ["Source", source],
    ["Licence", el("span", { text: item.licence ?? "not given", attrs: item.licence ? {} : { class: "muted" } })],
  ];
  const header = el("div", {
    attrs: { class: "popover-head" },
    children: [
      el("strong", { text: item.title ? `[${item.number}] ${item.title}` : `Citation ${item.number}` }),
      item.score !== null
        ? el("span", {
            text: item.score,
            attrs: { class: "score-chip", title: scoreMeaning(item.score, calibration), "aria-label": scoreMeaning(item.score, calibration) },
          })
        : null,
    ],
  });
  return el("div", {
    attrs: { class: "popover", id, role: "dialog", "aria-label": item.title ? `Citation ${item.number}: ${item.title}` : `Citation ${item.number}` },
    children: [
      header,
      item.span ? el("blockquote", { text: item.span }) : el("p", { text: "no quoted span", attrs: { class: "muted" } }),
      el("dl", {
        children: rows.flatMap(([label, value]) => [el("dt", { text: label }), el("dd", { children: [value] })]),
      }),
    ],
  });
}

function renderAnswer(target, answer) {
  target.replaceChildren();
  closePopover();
  const notice = statusNotice(answer.status, answer.error);
  if (notice) target.append(el("p", { text: notice, attrs: { class: `notice status-${answer.status}` } }));
  const items = citationItems(answer.citations);
  const buttons = new Map(); // number -> its marker button
  const panels = el("div", { attrs: { class: "panels" } });
  for (const item of items) {
    const id = `citation-${item.number}`;
    const panel = citationPanel(item, id);
    panel.hidden = true;
    const button = el("button", {
      text: `[${item.number}]`,
      attrs: { type: "button", class: "marker", "aria-expanded": "false", "aria-controls": id, title: item.title || item.cardId },
    });
    button.addEventListener("click", (event) => {
      event.stopPropagation();
      const wasOpen = openPopover && openPopover.panel === panel;
      closePopover();
      if (!wasOpen) {
        panel.hidden = false;
        button.setAttribute("aria-expanded", "true");
        openPopover = { button, panel };
      }
    });
    buttons.set(item.number, button);
    panels.append(panel);
  }
  const { segments, unplaced } = placeMarkers(typeof answer.answer === "string" ? answer.answer : "", items);
  if (typeof answer.answer === "string" && answer.answer) {
    // The answer as text nodes, each marker right after the sentence its citation quotes.
    const p = el("p", { attrs: { class: "answer-text", id: "answer-text" } });
    for (const seg of segments) {
      if (seg.text !== undefined) p.append(document.createTextNode(seg.text));
      else p.append(...seg.numbers.map((n) => buttons.get(n)));
    }
    target.append(p);
  }
  if (unplaced.length) {
    target.append(el("div", {
      attrs: { class: "markers", "aria-label": "citations not matched to a sentence of the answer" },
      children: [el("span", { text: "Also cited: ", attrs: { class: "muted small" } }), ...unplaced.map((n) => buttons.get(n))],
    }));
  }
  if (items.length) target.append(panels);
  target.append(el("p", { text: hybridPathLabel(answer.hybrid_path), attrs: { class: "path-label" } }));
}

function chatPage(main) {
  if (!calibration) loadCalibration();
  const question = el("textarea", {
    attrs: { id: "question", name: "question", rows: "3", maxlength: "2000", required: "", placeholder: "e.g. What is the dose of Velnorex?" },
  });
  const submit = el("button", { text: "Ask", attrs: { type: "submit" } });
  const form = el("form", {
    attrs: { class: "card" },
    children: [el("label", { text: "Your question", attrs: { for: "question" } }), question, submit],
  });
  const result = el("section", { attrs: { class: "card result", "aria-live": "polite" } });
  result.hidden = true;
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = question.value.trim();
    if (!text) return;
    submit.disabled = true;
    result.hidden = false;
    result.replaceChildren(el("p", { text: "Asking…", attrs: { class: "muted" } }));
    const reply = await callApi("POST", "/v1/chat", { body: { question: text }, auth: Boolean(getKey()) });
    submit.disabled = false;
    if (!reply.ok) {
      result.replaceChildren(el("p", { text: reply.text, attrs: { class: "notice status-failed" } }));
      return;
    }
    renderAnswer(result, reply.data || {});
  });
  main.append(el("h1", { text: "Ask the knowledge base" }), form, result);
}

// -- verify --------------------------------------------------------------------------------

async function verify(input, out) {
  const parsed = parseVerifyInput(input);
  if (parsed.kind === "empty") {
    out.replaceChildren(el("p", { text: "Paste the text or its SHA-256 first.", attrs: { class: "notice" } }));
    return;
  }
  let sha256 = parsed.sha256;
  if (parsed.kind === "text") {
    try {
      sha256 = await sha256HexOfText(parsed.content);
    } catch (err) {
      out.replaceChildren(el("p", {
        text: `${err.message}. Open this page over https (or on localhost), or paste the 64-hex SHA-256 instead.`,
        attrs: { class: "notice status-failed" },
      }));
      return;
    }
  }
  out.replaceChildren(
    el("p", { text: parsed.kind === "text" ? "SHA-256 of the text's UTF-8 bytes:" : "Looking up:" }),
    el("p", { children: [el("code", { text: sha256 })] }),
  );
  const evidence = await callApi("GET", `/v1/public/evidence/${sha256}`, { auth: false });
  if (!evidence.ok) {
    const text = evidence.status === 404 ? "Not recorded: there is no evidence with this SHA-256." : evidence.text;
    out.append(el("p", { text, attrs: { class: `notice ${evidence.status === 404 ? "status-no_context" : "status-failed"}` } }));
    return;
  }
  out.append(el("p", { text: "Recorded.", attrs: { class: "notice status-ok" } }), rowsList(evidenceRows(evidence.data)));
  if (parsed.kind !== "text") return;
  const check = await callApi("POST", `/v1/public/evidence/${sha256}/check`, { body: { content: parsed.content }, auth: false });
  if (!check.ok) {
    out.append(el("p", { text: `Byte-for-byte check failed: ${check.text}`, attrs: { class: "notice status-failed" } }));
    return;
  }
  const matched = check.data && check.data.match === true;
  out.append(el("p", { text: checkVerdict(check.data), attrs: { class: `notice ${matched ? "status-ok" : "status-failed"}` } }));
}

function verifyPage(main, query) {
  const input = el("textarea", {
    attrs: { id: "evidence", name: "evidence", rows: "8", placeholder: "Paste the exact text, or a 64-hex SHA-256" },
  });
  const submit = el("button", { text: "Verify", attrs: { type: "submit" } });
  const out = el("section", { attrs: { class: "card result", "aria-live": "polite" } });
  out.hidden = true;
  const form = el("form", {
    attrs: { class: "card" },
    children: [
      el("label", { text: "Text or SHA-256", attrs: { for: "evidence" } }),
      input,
      el("p", {
        text: "Text is hashed in your browser (SHA-256 of its exact UTF-8 bytes; line breaks as typed in a text box are LF). A bare 64-hex value is looked up as a hash.",
        attrs: { class: "muted small" },
      }),
      submit,
    ],
  });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    submit.disabled = true;
    out.hidden = false;
    try {
      await verify(input.value, out);
    } finally {
      submit.disabled = false;
    }
  });
  main.append(el("h1", { text: "Verify evidence" }), form, out);
  // Deep link from a run's page: /verify?sha256=<64 hex> looks the hash up at once.
  const linked = parseVerifyInput(query.get("sha256") || "");
  if (linked.kind === "hash") {
    input.value = linked.sha256;
    form.requestSubmit();
  }
}

// -- router --------------------------------------------------------------------------------

const ROUTES = [
  [/^\/$/, (main) => chatPage(main), false],
  [/^\/verify$/, (main, q) => verifyPage(main, q), false],
  [/^\/signin$/, (main, q, m, state) => signinPage(main, state || {}), false],
  [/^\/methodology$/, (main) => methodologyPage(main), false],
  [/^\/brands$/, (main) => brandsPage(main), true],
  [/^\/brands\/([^/]+)$/, (main, q, m) => overviewPage(main, decodeURIComponent(m[1]), q), true],
  [/^\/brands\/([^/]+)\/edit$/, (main, q, m) => brandEditPage(main, decodeURIComponent(m[1])), true],
  [/^\/brands\/([^/]+)\/ground-truth$/, (main, q, m) => groundTruthPage(main, decodeURIComponent(m[1]), q), true],
  [/^\/runs$/, (main, q) => runsPage(main, q), true],
  [/^\/runs\/([^/]+)$/, (main, q, m) => runPage(main, decodeURIComponent(m[1]), q), true],
  [/^\/collect$/, (main, q) => promptsPage(main, q), true],
  [/^\/collect\/prompts$/, (main, q) => promptsPage(main, q), true],
  [/^\/collect\/engines$/, (main) => enginesPage(main), true],
  [/^\/collect\/schedules$/, (main) => schedulesPage(main), true],
  [/^\/review$/, (main, q) => reviewQueuePage(main, q), true],
  [/^\/review\/([^/]+)\/([^/]+)$/, (main, q, m) => reviewItemPage(main, decodeURIComponent(m[1]), decodeURIComponent(m[2]), q), true],
  [/^\/alerts$/, (main) => alertsPage(main), true],
  [/^\/keys$/, (main) => keysPage(main), true],
];

// -- the key's role ---------------------------------------------------------------------------
// The signed-in key's role, asked once per key (GET /v1/keys/me), is put on <body data-role>;
// styles.css hides `.write-action` from viewers and `.admin-action` from all but admins. Only
// a convenience: the gateway refuses what a role may not do (403) whatever the page shows.
let identity = null; // {key, key_id, name, role, workspace_id} of the key in this tab

async function learnRole() {
  const key = getKey();
  if (!key) {
    identity = null;
    delete document.body.dataset.role;
    return;
  }
  if (identity && identity.key === key) return;
  const me = await callApi("GET", "/v1/keys/me");
  if (getKey() !== key) return; // signed out (or refused) meanwhile
  identity = me.ok && me.data ? { key, ...me.data } : null;
  // Unknown (e.g. an older gateway): nothing is hidden; the gateway still decides.
  document.body.dataset.role = identity ? identity.role : "unknown";
}

let renderToken = 0;

function updateHeader(path) {
  const signedIn = Boolean(getKey());
  for (const link of document.querySelectorAll("header nav a")) {
    const href = link.getAttribute("href");
    const current = href === "/" ? path === "/" : path === href || path.startsWith(`${href}/`);
    if (current) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
    if (link.hasAttribute("data-needs-key")) link.hidden = !signedIn;
  }
  document.getElementById("signin-link").hidden = signedIn;
  document.getElementById("signout").hidden = !signedIn;
}

async function render() {
  const token = ++renderToken;
  closePopover();
  const main = document.getElementById("app");
  const path = window.location.pathname.replace(/\/+$/, "") || "/";
  const query = new URLSearchParams(window.location.search);
  updateHeader(path);
  main.replaceChildren();
  main.removeAttribute("data-render-ms");
  main.removeAttribute("data-api-ms");
  main.setAttribute("aria-busy", "true");
  await learnRole(); // busy meanwhile: nothing of the previous page is left to be mistaken for this one
  if (token !== renderToken) return; // a newer navigation is drawing
  for (const [pattern, page, needsKey] of ROUTES) {
    const match = pattern.exec(path);
    if (!match) continue;
    if (needsKey && !getKey()) {
      navigate("/signin", { replace: true, state: { reason: "Sign in with an API key to see this page.", next: path + window.location.search } });
      return;
    }
    try {
      await page(main, query, match, window.history.state);
    } finally {
      if (token === renderToken) {
        main.setAttribute("aria-busy", "false");
        const h1 = main.querySelector("h1");
        if (h1) document.title = `${h1.textContent} · Attesta`;
      }
    }
    return;
  }
  main.append(el("h1", { text: "Not found" }), el("p", { text: "There is no page at this address." }));
  main.setAttribute("aria-busy", "false");
}

/** Goes to an in-app path: a history entry (or a replaced one), then the page is drawn. */
function navigate(path, { replace = false, state = null } = {}) {
  if (replace) window.history.replaceState(state, "", path);
  else window.history.pushState(state, "", path);
  render();
}

function start() {
  setNavigate(navigate);
  setCollectionNavigate(navigate);
  setReviewNavigate(navigate);
  setKeysNavigate(navigate);
  setAuthFailureHandler((reason) => {
    const here = window.location.pathname + window.location.search;
    navigate("/signin", { replace: here.startsWith("/signin"), state: { reason, next: here.startsWith("/signin") ? "/brands" : here } });
  });
  document.addEventListener("click", (event) => {
    if (openPopover && !openPopover.panel.contains(event.target)) closePopover();
    const link = event.target.closest && event.target.closest("a[href]");
    if (!link || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    const href = link.getAttribute("href");
    if (!href.startsWith("/") || href.startsWith("//") || link.target || link.hasAttribute("download")) return;
    event.preventDefault();
    navigate(href);
  });
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && openPopover) {
      const { button } = openPopover;
      closePopover();
      button.focus();
    }
  });
  document.getElementById("signout").addEventListener("click", () => {
    clearKey();
    identity = null;
    navigate("/signin", { state: { reason: "Signed out: the key was removed from this tab." } });
  });
  window.addEventListener("popstate", render);
  render();
}

start();
