// The run page's "how it was collected" rows (issue #25 item 4).
import assert from "node:assert/strict";
import test from "node:test";

import { collectionRows, methodLabel } from "./run_collection.js";

test("a collected run shows its method and the build the endpoint reported", () => {
  assert.deepEqual(collectionRows({ collection_method: "api_with_search",
    model_build: { model: "gpt-4o-2024-08-06", system_fingerprint: "fp_abc" } }), [
    ["Collection method", "API with web search"],
    ["Model build", "gpt-4o-2024-08-06 · fp_abc"],
  ]);
  assert.deepEqual(collectionRows({ collection_method: "api", model_build: { model: null, system_fingerprint: "fp_1" } }),
    [["Collection method", "API"], ["Model build", "fp_1"]]);
});

test("a run with neither field shows no rows, and an unknown method shows as it came", () => {
  assert.deepEqual(collectionRows({}), []);
  assert.deepEqual(collectionRows({ collection_method: null, model_build: null }), []);
  assert.deepEqual(collectionRows({ model_build: { model: null, system_fingerprint: null } }), []);
  assert.equal(methodLabel("constructor"), "constructor");
  assert.equal(methodLabel("assistant"), "our assistant");
});
