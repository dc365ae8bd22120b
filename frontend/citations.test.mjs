// node --test frontend/   (node's built-in runner; no packages)
import assert from "node:assert/strict";
import { createHash, webcrypto } from "node:crypto";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import {
  apiErrorText,
  checkVerdict,
  citationItems,
  placeMarkers,
  evidenceRows,
  formatBytes,
  hexOf,
  hybridPathLabel,
  licenceText,
  parseVerifyInput,
  safeHttpUrl,
  scoreChipText,
  scoreMeaning,
  sha256HexOfText,
  statusNotice,
} from "./citations.js";

// The cases are shared with the answer service's Python check (one rule, one list).
const SHARED = JSON.parse(readFileSync(new URL("../tests/data/url_safety_cases.json", import.meta.url), "utf8"));

test("safeHttpUrl follows the shared URL-safety cases (same as the Python check)", () => {
  assert.ok(SHARED.cases.length >= 50);
  assert.ok(SHARED.cases.some((c) => c.href === null) && SHARED.cases.some((c) => c.href !== null));
  for (const { input, href } of SHARED.cases) {
    assert.equal(safeHttpUrl(input), href, `input ${JSON.stringify(input)}`);
  }
});

test("safeHttpUrl refuses non-strings", () => {
  for (const raw of [undefined, null, 0, 42, {}, [], ["https://ok.example/"], { href: "https://ok.example/" }]) {
    assert.equal(safeHttpUrl(raw), null, `not a string: ${JSON.stringify(raw)}`);
  }
});

test("score chip: absent -> no chip, 0 -> '0', 84 -> '84'", () => {
  assert.equal(scoreChipText({ card_id: "c" }), null);
  assert.equal(scoreChipText({ card_id: "c", retrieved_score: undefined }), null);
  assert.equal(scoreChipText({ card_id: "c", retrieved_score: null }), null);
  assert.equal(scoreChipText({ card_id: "c", retrieved_score: 0 }), "0");
  assert.equal(scoreChipText({ card_id: "c", retrieved_score: 84 }), "84");
  assert.equal(scoreChipText({ card_id: "c", retrieved_score: 100 }), "100");
  assert.equal(scoreChipText({ card_id: "c", retrieved_score: 83.6 }), "84");
});

test("score chip: nonsense scores show no chip rather than a made-up number", () => {
  for (const bad of ["84", NaN, Infinity, -1, 100.5, true, {}, []]) {
    assert.equal(scoreChipText({ card_id: "c", retrieved_score: bad }), null, `score ${String(bad)}`);
  }
  assert.equal(scoreChipText(null), null);
  assert.equal(scoreChipText("x"), null);
});

test("citationItems numbers citations, keeps unsafe URLs as text only, drops items without card id", () => {
  const items = citationItems([
    { card_id: "velnorex-dose", span: "take 10 mg", source_url: "https://kb.example/velnorex", source_license: "CC-BY-4.0", retrieved_score: 84 },
    { span: "no id" },
    { card_id: "evil", source_url: "javascript:alert(1)" },
    { card_id: "plain" },
    null,
    "string",
  ]);
  assert.deepEqual(items, [
    { number: 1, cardId: "velnorex-dose", span: "take 10 mg", href: "https://kb.example/velnorex", urlText: "https://kb.example/velnorex", licence: "CC-BY-4.0", score: "84", title: null },
    { number: 2, cardId: "evil", span: "", href: null, urlText: "javascript:alert(1)", licence: null, score: null, title: null },
    { number: 3, cardId: "plain", span: "", href: null, urlText: null, licence: null, score: null, title: null },
  ]);
  assert.deepEqual(citationItems(undefined), []);
  assert.deepEqual(citationItems({ card_id: "x" }), []);
});

test("licenceText trims and caps, refuses empty and non-strings", () => {
  assert.equal(licenceText({ source_license: "  CC0-1.0 " }), "CC0-1.0");
  assert.equal(licenceText({ source_license: "   " }), null);
  assert.equal(licenceText({ source_license: 3 }), null);
  assert.equal(licenceText({}), null);
  assert.equal(licenceText({ source_license: "x".repeat(500) }).length, 200);
});

test("hybridPathLabel names every path, and says so when none ran", () => {
  assert.match(hybridPathLabel("full"), /full/);
  assert.match(hybridPathLabel("rrf_only"), /rrf_only/);
  assert.match(hybridPathLabel("dense_only"), /dense_only/);
  assert.equal(hybridPathLabel(null), "Retrieval: none ran");
  assert.equal(hybridPathLabel(undefined), "Retrieval: none ran");
  assert.match(hybridPathLabel("__proto__"), /unknown path/);
  assert.match(hybridPathLabel("weird"), /unknown path \(weird\)/);
});

test("statusNotice: answered is silent, no_context and failed are said plainly", () => {
  assert.equal(statusNotice("answered"), null);
  assert.equal(statusNotice(undefined), null);
  assert.match(statusNotice("no_context"), /nothing on this question/);
  assert.equal(statusNotice("failed", "generator timed out"), "The answer failed: generator timed out");
  assert.equal(statusNotice("failed", null), "The answer failed.");
  assert.match(statusNotice("odd"), /Unexpected answer status: odd/);
});

test("apiErrorText reads the shared error shape", () => {
  assert.equal(apiErrorText(429, { error: { code: "rate_limited", reason: "slow down" } }), "HTTP 429 rate_limited: slow down");
  assert.equal(apiErrorText(502, null), "HTTP 502");
  assert.equal(apiErrorText(500, { detail: "x" }), "HTTP 500");
});

test("parseVerifyInput: a bare 64-hex value is a hash, anything else is text kept byte for byte", () => {
  const hash = "A".repeat(64);
  assert.deepEqual(parseVerifyInput(`  ${hash}\n`), { kind: "hash", sha256: "a".repeat(64) });
  assert.deepEqual(parseVerifyInput(" some text \n"), { kind: "text", content: " some text \n" });
  assert.deepEqual(parseVerifyInput("a".repeat(63)), { kind: "text", content: "a".repeat(63) });
  assert.deepEqual(parseVerifyInput(""), { kind: "empty" });
  assert.deepEqual(parseVerifyInput(undefined), { kind: "empty" });
});

test("sha256HexOfText hashes the exact UTF-8 bytes (checked against node:crypto)", async () => {
  for (const text of ["", "abc", "é — ünïcødé 💊", " trailing space \n", "line1\r\nline2"]) {
    const expected = createHash("sha256").update(Buffer.from(text, "utf8")).digest("hex");
    // Web Crypto passed explicitly: node 18 (Debian's) has no global `crypto`.
    assert.equal(await sha256HexOfText(text, webcrypto.subtle), expected, JSON.stringify(text));
  }
  assert.equal(await sha256HexOfText("abc", webcrypto.subtle), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
});

test("sha256HexOfText says why when Web Crypto is missing (plain http)", async () => {
  await assert.rejects(() => sha256HexOfText("abc", null), /Web Crypto is unavailable/);
  await assert.rejects(() => sha256HexOfText("abc", {}), /Web Crypto is unavailable/);
});

test("hexOf and formatBytes", () => {
  assert.equal(hexOf(new Uint8Array([0, 15, 16, 255])), "000f10ff");
  assert.equal(hexOf(new Uint8Array([1, 2]).buffer), "0102");
  assert.equal(formatBytes(0), "0 bytes");
  assert.equal(formatBytes(1), "1 byte");
  assert.equal(formatBytes(1023), "1,023 bytes");
  assert.equal(formatBytes(1536), "1,536 bytes (1.5 KiB)");
  assert.equal(formatBytes(5 * 1024 * 1024), "5,242,880 bytes (5.0 MiB)");
  assert.equal(formatBytes(undefined), "unknown");
  assert.equal(formatBytes(-3), "unknown");
});

test("evidenceRows shows media type, size, first recorded, leaf index and tree size", () => {
  const sha = "ab".repeat(32);
  const rows = evidenceRows({
    sha256: sha, media_type: "text/plain; charset=utf-8", size_bytes: 12,
    first_recorded_at: "2026-12-03T10:00:00Z", references: [],
    inclusion: { leaf_index: 7, tree_size: 9, leaf_hash: sha, audit_path: [] },
  });
  assert.deepEqual(rows, [
    ["SHA-256", sha],
    ["Media type", "text/plain; charset=utf-8"],
    ["Size", "12 bytes"],
    ["First recorded", "2026-12-03T10:00:00Z"],
    ["Leaf index", "7"],
    ["Tree size", "9"],
  ]);
  const pending = evidenceRows({ sha256: sha, media_type: "text/plain", size_bytes: 1, first_recorded_at: "t" });
  assert.match(pending.at(-1)[1], /not yet signed/);
  assert.deepEqual(evidenceRows(null), []);
});

test("checkVerdict", () => {
  assert.match(checkVerdict({ match: true }), /^Match/);
  assert.match(checkVerdict({ match: false }), /^No match/);
  assert.match(checkVerdict({ match: "true" }), /^No match/);
  assert.equal(checkVerdict(null), "No check result.");
});

test("score chip tooltip: the calibration table's words for the score's bin", () => {
  const calibration = JSON.parse(readFileSync(new URL("./calibration.json", import.meta.url), "utf8"));
  const words = scoreMeaning("84", calibration);
  const bin = calibration.rows.find((r) => r.low === 80);
  assert.match(words, /score of 80–89/);
  assert.ok(words.includes(`${Math.round(bin.share_relevant * 100)}% were relevant`), words);
  assert.ok(words.includes(`${Math.round(bin.share_answers * 100)}% answered it`), words);
  assert.match(scoreMeaning("100", calibration), /90–100/);
  assert.match(scoreMeaning("0", calibration), /0–9/);
  assert.match(scoreMeaning(null, calibration), /docs\/retrieval-quality\.md/);
  assert.match(scoreMeaning("50", null), /docs\/retrieval-quality\.md/);
});

test("placeMarkers: each marker after the sentence holding its span; the rest after the answer", () => {
  const answer = "Velnorex is taken once daily.  The usual dose is 10 mg!\nAsk a pharmacist. Other text";
  const items = [
    { number: 1, span: "the usual   DOSE is 10 mg" },
    { number: 2, span: "Velnorex is taken once daily." },
    { number: 3, span: "not in the answer at all" },
    { number: 4, span: "taken once" },
    { number: 5, span: "" },
  ];
  const { segments, unplaced } = placeMarkers(answer, items);
  assert.deepEqual(segments, [
    { text: "Velnorex is taken once daily." }, { numbers: [2, 4] },
    { text: "  The usual dose is 10 mg!" }, { numbers: [1] },
    { text: "\nAsk a pharmacist. Other text" },
  ]);
  assert.deepEqual(unplaced, [3, 5]);
  assert.equal(segments.filter((s) => s.text).map((s) => s.text).join(""), answer); // nothing lost
  const tail = placeMarkers("No full stop here", [{ number: 1, span: "full stop" }]);
  assert.deepEqual(tail.segments, [{ text: "No full stop here" }, { numbers: [1] }]);
});

test("citationItems: the card's title when given, never made up", () => {
  const [a, b] = citationItems([{ card_id: "c1", card_title: " Velnorex dosing " }, { card_id: "c2", card_title: 7 }]);
  assert.equal(a.title, "Velnorex dosing");
  assert.equal(b.title, null);
});
