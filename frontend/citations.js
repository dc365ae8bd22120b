// Pure helpers of the SPA: no DOM, no network, importable by node (`node --test frontend/`).
// Everything the page shows from API data goes through these functions first.

// Browsers strip these from both ends of a URL before parsing it (WHATWG URL: "C0 control or
// space"); a check that did not would pass " javascript:..." as if it were relative text.
const C0_OR_SPACE_AT_ENDS = /^[\u0000-\u0020]+|[\u0000-\u0020]+$/g;
// ...and drop ASCII tab and newlines anywhere, so "java\tscript:" IS "javascript:" to a browser.
const TAB_OR_NEWLINE = /[\t\n\r]/g;
const HTTP_SCHEME_WITH_AUTHORITY = /^https?:\/\//i;
const MAX_URL_CHARS = 2048;

/**
 * The href to render for a citation's `source_url`, or null when it must be shown as text.
 *
 * Only an absolute http:/https: URL with a host, parsed by the WHATWG URL parser, is a link.
 * Refused: non-strings, javascript:/data:/vbscript:/mailto: and every other scheme, relative
 * and protocol-relative URLs, URLs with user-info ("https://bank.example@evil.example" reads
 * as the bank), anything the parser rejects, and over-long URLs.
 * The returned href is the parser's serialisation (what the browser would navigate to).
 */
export function safeHttpUrl(raw, UrlClass = globalThis.URL) {
  if (typeof raw !== "string" || raw.length > MAX_URL_CHARS) return null;
  const cleaned = raw.replace(C0_OR_SPACE_AT_ENDS, "").replace(TAB_OR_NEWLINE, "");
  // Checked on the text as well as after parsing: "http:example.com" (no "//") is accepted by
  // the parser for special schemes, but it is not what the KB ever sends; refuse the oddity.
  if (!HTTP_SCHEME_WITH_AUTHORITY.test(cleaned)) return null;
  let url;
  try {
    url = new UrlClass(cleaned); // no base: a relative URL throws
  } catch {
    return null;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return null;
  if (!url.hostname || url.username || url.password) return null;
  return url.href;
}

/**
 * The text of a citation's score chip, or null for no chip.
 * `retrieved_score` is present only on the reranked ("full") path (ADR-0024 (B)); absent, null
 * or not a finite number in 0..100 means NO chip (never a made-up 0).
 */
export function scoreChipText(citation) {
  if (citation === null || typeof citation !== "object") return null;
  if (!Object.prototype.hasOwnProperty.call(citation, "retrieved_score")) return null;
  const score = citation.retrieved_score;
  if (typeof score !== "number" || !Number.isFinite(score) || score < 0 || score > 100) {
    return null;
  }
  return String(Math.round(score));
}

/** A licence to show, or null (only a non-empty string, trimmed, at most 200 chars). */
export function licenceText(citation) {
  const value = citation && citation.source_license;
  if (typeof value !== "string") return null;
  const trimmed = value.trim();
  return trimmed ? trimmed.slice(0, 200) : null;
}

const HYBRID_PATH_LABELS = {
  full: "Retrieval: hybrid + reranker (full)",
  rrf_only: "Retrieval: hybrid, no reranker (rrf_only)",
  dense_only: "Retrieval: dense only (dense_only)",
};

/** The label of the retrieval path that produced the context. */
export function hybridPathLabel(path) {
  if (path === null || path === undefined) return "Retrieval: none ran";
  if (typeof path === "string" && Object.prototype.hasOwnProperty.call(HYBRID_PATH_LABELS, path)) {
    return HYBRID_PATH_LABELS[path];
  }
  return `Retrieval: unknown path (${String(path).slice(0, 40)})`;
}

/**
 * What to say about an answer's status, or null when it is a normal answer.
 * `error` is the server's reason for a failed answer (shown as text).
 */
export function statusNotice(status, error) {
  if (status === undefined || status === null || status === "answered") return null;
  if (status === "no_context") {
    return "No answer: the knowledge base has nothing on this question.";
  }
  if (status === "failed") {
    const reason = typeof error === "string" && error.trim() ? `: ${error.trim()}` : ".";
    return `The answer failed${reason}`;
  }
  return `Unexpected answer status: ${String(status).slice(0, 40)}`;
}

/** Citations as the numbered items the page shows: [{number, cardId, span, href, urlText,
 * licence, score}]. Items without a card id are dropped (the contract requires one). */
export function citationItems(citations) {
  if (!Array.isArray(citations)) return [];
  const items = [];
  for (const c of citations) {
    if (!c || typeof c !== "object" || typeof c.card_id !== "string" || !c.card_id) continue;
    const rawUrl = typeof c.source_url === "string" ? c.source_url : null;
    items.push({
      number: items.length + 1,
      cardId: c.card_id,
      span: typeof c.span === "string" ? c.span : "",
      href: safeHttpUrl(rawUrl),
      urlText: rawUrl, // shown as plain text when it is not a safe link
      licence: licenceText(c),
      score: scoreChipText(c),
    });
  }
  return items;
}

/** The error shape of the API (`{"error": {"code", "reason"}}`) as one line of text. */
export function apiErrorText(httpStatus, body) {
  const error = body && typeof body === "object" ? body.error : null;
  if (error && typeof error === "object") {
    const code = typeof error.code === "string" ? error.code : "error";
    const reason = typeof error.reason === "string" ? error.reason : "";
    return `HTTP ${httpStatus} ${code}${reason ? `: ${reason}` : ""}`;
  }
  return `HTTP ${httpStatus}`;
}

// -- /verify -------------------------------------------------------------------------------

const SHA256_HEX = /^[0-9a-fA-F]{64}$/;

/**
 * What the verify form holds: a bare 64-hex SHA-256 (surrounding whitespace ignored) is a hash
 * to look up; anything else is text whose exact UTF-8 bytes are hashed and checked.
 */
export function parseVerifyInput(input) {
  const text = typeof input === "string" ? input : "";
  const trimmed = text.trim();
  if (SHA256_HEX.test(trimmed)) return { kind: "hash", sha256: trimmed.toLowerCase() };
  if (text.length === 0) return { kind: "empty" };
  return { kind: "text", content: text };
}

/** Lower-case hex of the bytes of an ArrayBuffer or typed array. */
export function hexOf(buffer) {
  const bytes = buffer instanceof Uint8Array ? buffer : new Uint8Array(buffer);
  let out = "";
  for (const b of bytes) out += b.toString(16).padStart(2, "0");
  return out;
}

/** SHA-256 of the exact UTF-8 bytes of `text` as lower-case hex. `subtle` is Web Crypto's
 * SubtleCrypto; it is missing on plain http (not a secure context): then this throws. */
export async function sha256HexOfText(text, subtle = globalThis.crypto && globalThis.crypto.subtle) {
  if (!subtle || typeof subtle.digest !== "function") {
    throw new Error("Web Crypto is unavailable here (it needs https or localhost)");
  }
  const bytes = new TextEncoder().encode(text);
  return hexOf(await subtle.digest("SHA-256", bytes));
}

/** The number of bytes, readable ("1,234 bytes (1.2 KiB)"). */
export function formatBytes(n) {
  if (typeof n !== "number" || !Number.isFinite(n) || n < 0) return "unknown";
  const exact = `${Math.trunc(n).toLocaleString("en-US")} byte${n === 1 ? "" : "s"}`;
  if (n < 1024) return exact;
  const units = ["KiB", "MiB", "GiB"];
  let value = n / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${exact} (${value.toFixed(1)} ${units[unit]})`;
}

/** The rows shown for a public evidence record (`EvidenceView`): [[label, value], ...]. */
export function evidenceRows(view) {
  if (!view || typeof view !== "object") return [];
  const text = (v) => (v === undefined || v === null ? "unknown" : String(v));
  const rows = [
    ["SHA-256", text(view.sha256)],
    ["Media type", text(view.media_type)],
    ["Size", formatBytes(view.size_bytes)],
    ["First recorded", text(view.first_recorded_at)],
  ];
  const inclusion = view.inclusion;
  if (inclusion && typeof inclusion === "object") {
    rows.push(["Leaf index", text(inclusion.leaf_index)]);
    rows.push(["Tree size", text(inclusion.tree_size)]);
  } else {
    rows.push(["Inclusion proof", "not yet signed into a tree head (retry in a second)"]);
  }
  return rows;
}

/** The sentence for a byte-for-byte check result (`EvidenceCheckResult`). */
export function checkVerdict(result) {
  if (!result || typeof result !== "object") return "No check result.";
  if (result.match === true) {
    return "Match: these exact bytes are the recorded evidence.";
  }
  return "No match: these bytes differ from the recorded evidence.";
}
