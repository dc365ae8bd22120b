// The workspace's API keys (admin keys only; the gateway refuses the others with 403): the list
// with each key's role and last use, creating a key (its secret shown once, with a copy button
// and a warning), and revoking one after a confirmation.
// The new key is put into a read-only input of this page only: never into storage, a URL or
// the history; leaving the page drops it.

import { callApi } from "./api.js";
import { el, notice, table } from "./dom.js";
import { newIdempotencyKey } from "./model.js";

const enc = encodeURIComponent;
const ROLE_TEXT = {
  viewer: "viewer: reads and exports",
  editor: "editor: also brands, facts, prompts, engines, schedules, runs, review, alert rules",
  admin: "admin: everything, also keys and alert channels",
};

let navigate = () => {};

export function setKeysNavigate(fn) {
  navigate = fn;
}

function when(value, fallback) {
  return value ? value.replace("T", " ").replace(/\.\d+/, "").replace(/(Z|\+00:00)$/, " UTC") : fallback;
}

async function copyText(input, status) {
  try {
    await navigator.clipboard.writeText(input.value);
    status.textContent = "Copied.";
  } catch {
    // No clipboard API (plain http other than localhost): select it for Ctrl+C.
    input.focus();
    input.select();
    status.textContent = "Selected: press Ctrl+C (⌘C) to copy.";
  }
}

function shownOnce(data) {
  const input = el("input", {
    attrs: { id: "new-key", type: "text", readonly: true, value: data.key, spellcheck: "false", autocomplete: "off", "aria-describedby": "new-key-warning" },
  });
  const status = el("span", { attrs: { class: "muted small", "aria-live": "polite", id: "copy-status" } });
  const copy = el("button", { text: "Copy", attrs: { type: "button", id: "copy-key" }, on: { click: () => copyText(input, status) } });
  return el("section", {
    attrs: { class: "card secret-once", id: "key-secret", "aria-label": "the new key" },
    children: [
      el("h2", { text: `New ${data.role} key “${data.name}”` }),
      el("p", { text: data.warning || "This is the only time the key is shown: store it now.", attrs: { class: "notice status-failed", id: "new-key-warning", role: "alert" } }),
      el("label", { text: "The key (shown once)", attrs: { for: "new-key" } }),
      input, copy, status,
    ],
  });
}

function revokeButton(key, out) {
  return el("button", {
    text: "Revoke",
    attrs: { type: "button", class: "secondary admin-action", "data-revoke-key": key.key_id },
    on: {
      click: async () => {
        const sure = window.confirm(`Revoke the ${key.role} key “${key.name}” (${key.key_id})? Anything using it is refused (401) at once. This cannot be undone.`);
        if (!sure) return;
        const r = await callApi("DELETE", `/v1/keys/${enc(key.key_id)}`);
        if (r.ok) navigate("/keys", { replace: true });
        else out.replaceChildren(notice(`Revoke failed: ${r.text}`, "failed"));
      },
    },
  });
}

function keysTable(items, out) {
  return items.length
    ? table("Active keys of this workspace", ["Name", "Id", "Role", "Created", "Last used", ""], items.map((k) => [
        k.name, el("code", { text: k.key_id }), el("span", { text: k.role, attrs: { class: `role role-${k.role}`, title: ROLE_TEXT[k.role] || k.role } }),
        when(k.created_at, ""), when(k.last_used_at, "never"), revokeButton(k, out),
      ]), { id: "keys-table" })
    : el("p", { text: "No active keys.", attrs: { class: "muted" } });
}

export async function keysPage(main) {
  main.append(el("h1", { text: "API keys" }));
  const reply = await callApi("GET", "/v1/keys");
  if (!reply.ok) {
    main.append(notice(reply.status === 403 ? `Only an admin key can manage this workspace's keys. ${reply.text}` : reply.text, "failed"));
    return;
  }
  const created = el("div", { attrs: { id: "key-created" } });
  const out = el("div", { attrs: { "aria-live": "polite", id: "keys-result" } });
  const list = el("div", { attrs: { id: "keys-list" }, children: [keysTable(reply.data.items || [], out)] });
  main.append(el("p", {
    text: "Last use is recorded to the minute. A key's role is fixed when it is created: to change it, create a new key and revoke the old one.",
    attrs: { class: "muted small" },
  }), created, out, list);

  const name = el("input", { attrs: { id: "key-name", type: "text", required: true, maxlength: "200", placeholder: "e.g. agency reader" } });
  const role = el("select", {
    attrs: { id: "key-role" },
    children: Object.entries(ROLE_TEXT).map(([value, text]) => el("option", { text, attrs: { value } })),
  });
  const submit = el("button", { text: "Create key", attrs: { type: "submit" } });
  const form = el("form", {
    attrs: { class: "card admin-action", id: "key-form", autocomplete: "off" },
    children: [
      el("div", { attrs: { class: "field" }, children: [el("label", { text: "Name", attrs: { for: "key-name" } }), name] }),
      el("div", { attrs: { class: "field" }, children: [el("label", { text: "Role", attrs: { for: "key-role" } }), role] }),
      submit,
    ],
  });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!name.value.trim()) {
      out.replaceChildren(notice("Give the key a name first.", "failed"));
      return;
    }
    submit.disabled = true;
    const r = await callApi("POST", "/v1/keys", { body: { name: name.value.trim(), role: role.value }, idempotencyKey: newIdempotencyKey() });
    submit.disabled = false;
    if (!r.ok) {
      out.replaceChildren(notice(r.text, "failed"));
      return;
    }
    name.value = "";
    out.replaceChildren();
    created.replaceChildren(shownOnce(r.data));
    const fresh = await callApi("GET", "/v1/keys");
    if (fresh.ok) list.replaceChildren(keysTable(fresh.data.items || [], out));
  });
  main.append(el("h2", { text: "Create a key", attrs: { class: "admin-action" } }), form);
}
