// DOM building for every page: API data only ever goes into text nodes and attributes.

/** A new element with attributes, text and children. Text is always set as textContent. */
export function el(tag, { text, attrs, children, on } = {}) {
  const node = document.createElement(tag);
  if (attrs) {
    for (const [name, value] of Object.entries(attrs)) {
      if (value !== undefined && value !== null && value !== false) node.setAttribute(name, value === true ? "" : String(value));
    }
  }
  if (text !== undefined && text !== null) node.textContent = text;
  if (children) for (const child of children) if (child !== null && child !== undefined && child !== false) node.append(child);
  if (on) for (const [name, handler] of Object.entries(on)) node.addEventListener(name, handler);
  return node;
}

/** A definition list of [label, value] rows; a value is text or a node. */
export function rowsList(rows) {
  return el("dl", {
    children: rows.flatMap(([label, value]) => [
      el("dt", { text: label }),
      typeof value === "object" && value !== null ? el("dd", { children: [value] }) : el("dd", { text: value ?? "" }),
    ]),
  });
}

/** A table with a caption, header cells and rows of text or nodes. */
export function table(caption, head, rows, attrs = {}) {
  const cell = (tag, value) => (typeof value === "object" && value !== null
    ? el(tag, { children: [value] })
    : el(tag, { text: value ?? "", attrs: tag === "th" ? { scope: "col" } : undefined }));
  return el("table", {
    attrs,
    children: [
      caption ? el("caption", { text: caption }) : null,
      el("thead", { children: [el("tr", { children: head.map((h) => cell("th", h)) })] }),
      el("tbody", { children: rows.map((r) => el("tr", { children: r.map((v) => cell("td", v)) })) }),
    ],
  });
}

/** A notice paragraph (role=status for screen readers). kind: ok | failed | no_context | "". */
export function notice(text, kind = "") {
  return el("p", { text, attrs: { class: `notice${kind ? ` status-${kind}` : ""}`, role: kind === "failed" ? "alert" : "status" } });
}

/** An in-app link: navigation goes through the router (history.pushState), not a page load. */
export function appLink(path, text, attrs = {}) {
  return el("a", { text, attrs: { href: path, "data-app-link": "", ...attrs } });
}
