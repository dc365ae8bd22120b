// How a run was collected, for the run page (issue #25 item 4): the engine's declared collection
// method and the model build the endpoint reported. Rows for dom.rowsList; none when the run
// carries neither (runs recorded before the fields existed, or posted by hand).

/** [label, value] rows describing how `run` was collected. */
export function collectionRows(run) {
  const rows = [];
  if (run.collection_method) rows.push(["Collection method", run.collection_method]);
  const build = run.model_build;
  if (build && (build.model || build.system_fingerprint)) {
    rows.push(["Model build", [build.model, build.system_fingerprint].filter(Boolean).join(" · ")]);
  }
  return rows;
}
