// How a run was collected, for the run page (issue #25 item 4): the engine's declared collection
// method and the model build the endpoint reported. Rows for dom.rowsList; none when the run
// carries neither (runs recorded before the fields existed, or posted by hand).

/** The collection methods as the API names them (RunRecorded.collection_method, an engine's
 * collection_method) and as people read them. */
export const METHOD_LABELS = Object.freeze({
  api: "API",
  api_with_search: "API with web search",
  assistant: "our assistant",
});

/** A method's label; an unknown value is shown as it came. */
export function methodLabel(method) {
  return Object.hasOwn(METHOD_LABELS, method) ? METHOD_LABELS[method] : String(method ?? "");
}

/** [label, value] rows describing how `run` was collected. */
export function collectionRows(run) {
  const rows = [];
  if (run.collection_method) rows.push(["Collection method", methodLabel(run.collection_method)]);
  const build = run.model_build;
  if (build && (build.model || build.system_fingerprint)) {
    rows.push(["Model build", [build.model, build.system_fingerprint].filter(Boolean).join(" · ")]);
  }
  return rows;
}
