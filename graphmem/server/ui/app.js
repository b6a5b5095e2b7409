// graphmem ui: sign in, then one view at a time, picked by the address's fragment (#/search...).

import * as api from "./api.js";
import { $, age, confirmDialog, el, toast } from "./dom.js";
import { FIRST_LIMIT, Graph, kindName, MAX_NODES } from "./graph.js";
import { CATEGORIES, hitCard, LINK_KINDS, memoryCard, STATUSES, tags } from "./views.js";

const VIEWS = ["home", "search", "browse", "memory", "graph", "context", "status"];
const PAGE = 50;
let graph, contextGraph, browseOffset = 0;

function showView(name) {
  for (const view of VIEWS) $(`view-${view}`).hidden = view !== name;
  for (const link of document.querySelectorAll("#nav a")) {
    if (link.dataset.view === name) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}

async function route() {
  const hash = location.hash.startsWith("#/") ? location.hash.slice(2) : "home";
  const [path, query = ""] = hash.split("?");
  const [name, ...rest] = path.split("/");
  const arg = decodeURIComponent(rest.join("/"));
  const params = new URLSearchParams(query);
  if (!VIEWS.includes(name)) return;
  showView(name);
  try {
    if (name === "home") await showHome();
    else if (name === "search") await search(params.get("q") || "");
    else if (name === "browse") { browseFilters(params); await browse(true); }
    else if (name === "memory") await openMemory(arg);
    else if (name === "graph") await openGraph(arg);
    else if (name === "context") await openContext(params.get("target") || "");
    else if (name === "status") await showStatus();
  } catch (error) {
    toast(error.message, true);
  }
}

// -- home: what needs a person ------------------------------------------------------------

async function showHome() {
  $("home-meta").textContent = "Loading…";
  const home = await api.home();
  const where = home.project ? `In ${home.project}` : "Global memories only (name a project above)";
  const c = home.counts;
  $("home-meta").textContent = `${where}: ${c.total} memor${c.total === 1 ? "y" : "ies"} here, ${c.store_total} in the store.`;
  const memoryLink = (m, text = m.text) => el("a", { class: "item-text", href: `#/memory/${encodeURIComponent(m.id)}`, text });
  const button = (label, handler, cls = "ghost") => el("button", { type: "button", class: cls, text: label, onclick: handler });
  const steer = (verb, args, done) => run(async () => { await api.rpc(verb, args); toast(done); await showHome(); });
  const more = (shown, total, href, what) => (total > shown
    ? el("p", { class: "meta" }, el("a", { href, text: `and ${total - shown} more ${what}` })) : null);
  const panel = (id, title, total, items, empty, after = null) => el("section", { class: "panel", id, "aria-labelledby": `${id}-h` },
    el("h3", { id: `${id}-h` }, title, el("span", { class: "count", text: String(total) })),
    items.length ? el("ul", { class: "items" }, items) : el("p", { class: "meta", text: empty }), after);

  const proposed = home.proposed.items.map(({ memory: m }) => el("li", { "data-id": m.id }, memoryLink(m),
    el("div", { class: "meta", text: `${m.category}, proposed by ${m.provenance.replace(/, proposed, unconfirmed$/, "")}` }),
    el("div", { class: "actions" },
      button("Confirm as yours", () => steer("confirm", { memory_id: m.id }, "Confirmed: it is yours now."), ""),
      button("Reject", () => steer("reject", { memory_id: m.id }, "Rejected.")))));
  const stale = home.stale.items.map(({ memory: m, why }) => el("li", { "data-id": m.id }, memoryLink(m),
    el("div", { class: "meta stale-why", text: why }),
    el("div", { class: "actions" }, button("Still true", () => steer("confirm", { memory_id: m.id }, "Confirmed as still true.")))));
  const blockers = home.blockers.items.map(({ memory: m }) => el("li", { "data-id": m.id }, memoryLink(m),
    el("div", { class: "meta", text: `${age(m.created_at)}, from ${m.provenance}` })));
  const forge = home.forge.items.map(({ event, memory: m }) => el("li", { "data-id": m.id }, memoryLink(m),
    el("div", { class: "meta", text: `${event.change || event.kind}: ${event.reason} (${event.rule}, ${age(event.at)})` }),
    event.undone_by ? el("span", { class: "tag", text: "undone" })
      : el("div", { class: "actions" }, button("Undo", () => steer("undo", { event_id: event.id }, "Undone.")))));
  const learned = home.learned.map((s) => el("li", {},
    el("div", { class: "meta", text: `session ${s.session}: ${s.total} memor${s.total === 1 ? "y" : "ies"}` }),
    el("ul", { class: "items inner" }, s.memories.map((m) => el("li", { "data-id": m.id }, memoryLink(m),
      el("span", { class: "meta", text: ` ${m.category}, ${age(m.created_at)}` }))))));
  const counts = el("div", { class: "figures small" }, figure(c.total, "memories here"), figure(c.store_total, "in the whole store"),
    Object.entries(c.by_category).map(([k, n]) => el("a", { class: "figure", href: `#/browse?category=${k}` },
      el("div", { class: "n", text: n }), el("div", { class: "what", text: k }))));
  $("home").replaceChildren(
    panel("home-proposed", "Waiting for your confirmation", home.proposed.total, proposed,
      "Nothing proposed: no agent or import wants a rule of yours.",
      more(proposed.length, home.proposed.total, "#/browse?status=proposed", "proposed")),
    panel("home-stale", "Possibly stale: the code changed", home.stale.total, stale,
      "No memory is about code that changed since."),
    panel("home-blockers", "Open blockers", home.blockers.total, blockers, "No open blocker.",
      more(blockers.length, home.blockers.total, "#/browse?category=blocker&status=active", "blockers")),
    panel("home-forge", "Resolved by the forge lately", home.forge.total, forge,
      "The forge's rules changed nothing (an MR merged or an issue closed resolves what waited for it)."),
    panel("home-learned", "Learned in the last sessions", home.learned.reduce((a, s) => a + s.total, 0), learned,
      "Nothing learned from agent sessions yet."),
    panel("home-counts", "This project", c.total, [], "", counts));
}

function figure(n, what) {
  return el("div", { class: "figure" }, el("div", { class: "n", text: n }), el("div", { class: "what", text: what }));
}

// -- search -------------------------------------------------------------------------------

async function search(query) {
  $("query").value = query;
  const hits = $("hits");
  if (!query.trim()) { hits.replaceChildren(); $("search-meta").textContent = ""; return; }
  $("search-meta").textContent = "Searching…";
  const result = await api.rpc("recall", { query, history: $("with-history").checked });
  const best = Math.max(...result.hits.map((h) => h.score), 1e-9);
  hits.replaceChildren(...result.hits.map((hit) => hitCard(hit, best)));
  const channels = Object.entries(result.channels).map(([c, n]) => `${c} ${n}`).join(", ");
  $("search-meta").textContent = `${result.hits.length} hit${result.hits.length === 1 ? "" : "s"} for “${result.query}” ` +
    `(plan ${result.plan}; candidates: ${channels || "none"}${result.semantic_ready ? "" : "; meaning not ready yet, words only"}).`;
}

function submitSearch() {
  location.hash = `#/search?q=${encodeURIComponent($("query").value)}`;
}

// -- browse -------------------------------------------------------------------------------

function browseFilters(params) {
  if (params.has("category")) $("f-category").value = params.get("category");
  if (params.has("status")) $("f-status").value = params.get("status");
}

async function browse(fresh) {
  if (fresh) browseOffset = 0;
  const category = $("f-category").value, status = $("f-status").value, scope = $("f-scope").value;
  const days = Number($("f-age").value);
  const args = { limit: PAGE, offset: browseOffset };
  if (category) args.categories = [category];
  if (status) args.statuses = [status];
  if (days) args.since = new Date(Date.now() - days * 86400000).toISOString();
  const [found, stats] = await Promise.all([api.rpc("list", args), fresh ? api.rpc("stats") : null]);
  const shown = scope ? found.filter((m) => m.scope === scope) : found;
  const list = $("memories");
  if (fresh) list.replaceChildren();
  list.append(...shown.map((memory) => memoryCard(memory)));
  browseOffset += found.length;
  $("browse-more").hidden = found.length < PAGE;
  $("browse-meta").textContent = `${list.children.length} memor${list.children.length === 1 ? "y" : "ies"} shown.`;
  if (stats) showCounts(stats);
}

function showCounts(stats) {
  const group = (title, counts) => el("dl", { "aria-label": title }, el("dt", { text: `${title}:` }),
    Object.entries(counts).flatMap(([k, n]) => [el("dt", { text: k }), el("dd", { text: n })]));
  $("counts").replaceChildren(el("p", { text: `${stats.total} memories` }), group("category", stats.by_category),
    group("status", stats.by_status), group("scope", stats.by_scope));
}

// -- one memory ---------------------------------------------------------------------------

async function openMemory(id) {
  const box = $("memory");
  box.replaceChildren(el("p", { class: "meta", text: "Loading…" }));
  const [detail, events] = await Promise.all([api.rpc("show", { memory_id: id }), api.rpc("history", { memory_id: id })]);
  const m = detail.memory;
  const facts = [["id", m.id], ["category", m.category], ["status", m.status], ["scope", m.scope],
    ["project", m.project || "—"], ["written by", m.provenance || m.source], ["source", m.source], ["session", m.session || "—"], ["origin", m.origin || "—"],
    ["trust", m.trust], ["created", `${m.created_at} (${age(m.created_at)})`], ["updated", m.updated_at],
    ["valid", `${m.valid_from} → ${m.valid_to || "now"}`], ["expires", m.expires_at || "never"],
    ["reinforced", m.reinforced], ["embedded", m.embedded ? "yes" : "not yet"], ["stale", m.stale || "no"]];
  const provenance = el("dl", { "aria-label": "Provenance" }, facts.flatMap(([k, v]) => [el("dt", { text: k }), el("dd", { text: v })]));
  const about = el("ul", { "aria-label": "About" }, detail.entities.map((e) =>
    el("li", {}, el("a", { href: `#/graph/${encodeURIComponent(e.key)}`, text: e.name }),
      ` ${kindName(e.kind)}${e.title ? ` — ${e.title}` : ""}`)));
  const links = el("ul", { "aria-label": "Links" }, detail.links.map((l) => {
    const other = l.source === m.id ? l.target : l.source;
    const said = l.source === m.id ? `${l.kind} →` : `← ${l.kind} by`;
    return el("li", {}, `${said} `, el("a", { href: `#/memory/${encodeURIComponent(other)}`, class: "mono", text: other }));
  }));
  const history = el("ol", { class: "history", "aria-label": "History" }, events.map((event) => el("li", {},
    el("div", {}, el("strong", { text: event.kind }), ` by ${event.actor}${event.rule ? ` (${event.rule})` : ""} `,
      el("span", { class: "meta", text: age(event.at), title: event.at }),
      event.undone_by ? el("span", { class: "tag", text: "undone" }) : null),
    event.reason ? el("div", { text: event.reason }) : null,
    changes(event).map((line) => el("div", { class: "quote", text: line })),
    event.undone_by ? null : el("button", { type: "button", class: "ghost", text: "Undo",
      onclick: () => act(m.id, "undo", { event_id: event.id }, "Undone.", false) }))));
  box.replaceChildren(el("div", { class: "detail" },
    el("div", {},
      el("p", { class: "memory-text", id: "memory-text", text: m.text }), tags(m), actions(m),
      el("h3", { text: "History" }), events.length ? history : el("p", { class: "meta", text: "No changes since it was written." })),
    el("div", {}, el("h3", { text: "Provenance" }), provenance,
      el("h3", { text: "About" }), detail.entities.length ? about : el("p", { class: "meta", text: "Nothing." }),
      el("h3", { text: "Links" }), detail.links.length ? links : el("p", { class: "meta", text: "None." }))));
}

/** What an event changed, a line each: "status active → resolved", "was: <the old text>", links. */
function changes(event) {
  const { before, after } = event;
  const lines = [];
  const short = (v) => (v === undefined || v === null ? "none" : /^\d{4}-\d\d-\d\dT/.test(String(v)) ? String(v).slice(0, 10) : String(v));
  for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) {
    if (key === "about") continue;
    if (key === "text") {
      if (before.text !== undefined) lines.push(`was: ${before.text}`);
    } else if (key === "links") {
      const said = (links) => new Set((links || []).map((l) => `${l[0]} ${l[2]} ${l[1]}`));
      const was = said(before.links), now = said(after.links);
      for (const link of now) if (!was.has(link)) lines.push(`link added: ${link}`);
      for (const link of was) if (!now.has(link)) lines.push(`link removed: ${link}`);
    } else {
      lines.push(`${key}: ${short(before[key])} → ${short(after[key])}`);
    }
  }
  return lines;
}

function actions(m) {
  const bar = el("div", { class: "actions", role: "group", "aria-label": "Actions" });
  const button = (label, handler, cls = "ghost") => el("button", { type: "button", class: cls, text: label, onclick: handler });
  const editor = el("div", { class: "editor", hidden: true });
  bar.append(button("Edit", () => openEditor(editor, "edit", m)));
  if (m.status === "archived" || m.status === "superseded") bar.append(button("Restore", () => act(m.id, "restore", {}, "Restored.")));
  else bar.append(button("Archive", () => act(m.id, "archive", {}, "Archived.")));
  if (m.status === "resolved") bar.append(button("Unresolve", () => act(m.id, "unresolve", {}, "Blocking again.")));
  else if (m.category === "blocker" && m.status === "active") bar.append(button("Resolve", () => act(m.id, "resolve", {}, "Resolved.")));
  if (m.status === "proposed") {
    bar.append(button("Confirm as yours", () => act(m.id, "confirm", {}, "Confirmed: it is yours now."), ""),
      button("Reject", () => act(m.id, "reject", {}, "Rejected.")));
  } else if (m.stale) bar.append(button("Confirm", () => act(m.id, "confirm", {}, "Confirmed as still true.")));
  bar.append(button("Supersede", () => openEditor(editor, "supersede", m)),
    button("Link", () => openEditor(editor, "link", m)),
    button("Graph", () => { location.hash = `#/graph/${encodeURIComponent(m.id)}`; }),
    button("Delete", async () => {
      const sure = await confirmDialog("Delete this memory for good?",
        "It is removed with its links and cannot be restored (Archive hides it instead).", m.text);
      if (sure) {
        await run(async () => { await api.rpc("delete", { memory_id: m.id }); toast("Deleted."); location.hash = "#/browse"; });
      }
    }, "danger"));
  return el("div", {}, bar, editor);
}

function openEditor(box, mode, m) {
  box.hidden = false;
  const field = (label, input) => el("label", {}, `${label} `, input);
  const select = (values, chosen) => el("select", {}, values.map((v) => el("option", { value: v, text: v, selected: v === chosen })));
  if (mode === "link") {
    const target = el("input", { type: "text", placeholder: "mem_…", "aria-label": "Target memory id" });
    const kind = select(LINK_KINDS, "related");
    box.replaceChildren(el("strong", { text: "Link this memory to another" }), field("Kind", kind), field("Target", target),
      el("div", { class: "actions" }, el("button", { type: "button", text: "Link",
        onclick: () => act(m.id, "link", { source: m.id, target: target.value.trim(), kind: kind.value }, "Linked.", false) })));
    target.focus();
    return;
  }
  const text = el("textarea", { "aria-label": mode === "edit" ? "New text" : "The text that replaces it" });
  text.value = mode === "edit" ? m.text : "";
  const category = select(CATEGORIES, m.category);
  const save = mode === "edit"
    ? () => act(m.id, "edit", { memory_id: m.id, text: text.value !== m.text ? text.value : null,
      category: category.value !== m.category ? category.value : null }, "Saved.", false)
    : () => run(async () => {
      const made = await api.rpc("remember", { text: text.value, category: category.value, supersedes: m.id });
      toast(made.created ? "Written; the old memory is superseded." : "That text is stored already: reinforced it.");
      location.hash = `#/memory/${encodeURIComponent(made.memory.id)}`;
    });
  box.replaceChildren(el("strong", { text: mode === "edit" ? "Edit" : "Supersede with a new memory" }), text,
    field("Category", category), el("div", { class: "actions" },
      el("button", { type: "button", text: mode === "edit" ? "Save" : "Write and supersede", onclick: save }),
      el("button", { type: "button", class: "ghost", text: "Cancel", onclick: () => { box.hidden = true; } })));
  text.focus();
}

async function act(id, verb, args, done, withId = true) {
  await run(async () => {
    await api.rpc(verb, withId ? { memory_id: id, ...args } : args);
    toast(done);
    await openMemory(id);
  });
}

async function run(job) {
  try { await job(); } catch (error) { toast(error.message, true); }
}

// -- the graph ----------------------------------------------------------------------------

async function openGraph(key) {
  $("graph-target").value = key;
  if (!key) { $("graph-meta").textContent = "Name a memory, an MR, an issue or a file, or open one from a hit."; return; }
  $("graph-meta").textContent = "Loading…";
  const asked = key.includes(":") || key.startsWith("mem_") ? { key } : { target: key };
  const found = await api.graph({ ...asked, limit: FIRST_LIMIT });
  graph.show(found);
  describeGraph(found, true);
  graph.select(found.center.key, false);
}

async function expand(key, limit = FIRST_LIMIT) {
  await run(async () => {
    const found = await api.graph({ key, limit });
    if (!graph.merge(found, limit)) {
      toast(`Not drawn: the drawing would pass ${MAX_NODES} nodes. Collapse a node, or centre on this one.`, true);
      return;
    }
    describeGraph(found, false);
    graph.select(key);
  });
}

function describeGraph(found, fresh) {
  const more = found.more ? ` ${found.more} more not drawn yet: select “+${found.more} more” and press Enter.` : "";
  $("graph-meta").textContent = `${fresh ? "Around" : "Expanded"} ${found.center.label}: ${graph.size} nodes ` +
    `(drawn in ${Math.round(graph.lastDrawMs)} ms).${more} Click a node or press Enter to expand it, minus to collapse, O to open.`;
}

function selectNode(node) {
  if (!node) return;
  if (node.kind === "more") {
    $("graph-side").replaceChildren(el("h3", { text: node.label }), el("p", { class: "meta",
      text: "Neighbours not drawn yet. Enter (or a click) draws more of them." }));
    return;
  }
  $("graph-side").replaceChildren(el("div", {},
    el("h3", { text: kindName(node.kind) }),
    el("p", { class: node.kind === "Memory" ? "memory-text" : "", text: node.label }),
    node.title ? el("p", { class: "meta", text: node.title }) : null,
    node.status ? el("p", { class: "meta", text: node.status }) : null,
    el("p", { class: "mono meta", text: node.key }),
    el("div", { class: "actions" },
      node.expanded && node.key !== graph.centre
        ? el("button", { type: "button", text: "Collapse", onclick: () => graph.collapse(node.key) })
        : el("button", { type: "button", text: "Expand", onclick: () => expand(node.key) }),
      el("button", { type: "button", class: "ghost", text: "Centre here",
        onclick: () => { location.hash = `#/graph/${encodeURIComponent(node.key)}`; } }),
      node.kind === "Memory" ? el("button", { type: "button", class: "ghost", text: "Open",
        onclick: () => openNode(node) }) : null)));
}

function openNode(node) {
  location.hash = node.kind === "Memory" ? `#/memory/${encodeURIComponent(node.key)}` : `#/graph/${encodeURIComponent(node.key)}`;
}

// -- context ------------------------------------------------------------------------------

async function openContext(target) {
  $("context-target").value = target;
  if (!target) return;
  const bundle = await api.context(target, Number($("context-budget").value) || 1500);
  $("context-markdown").textContent = bundle.markdown;
  $("context-meta").textContent = `${bundle.tokens} of ${bundle.max_tokens} tokens` +
    `${bundle.omitted ? `; ${bundle.omitted} left out for the budget` : ""}${bundle.found === false ? "; the graph holds nothing linked to it" : ""}.`;
  const centre = bundle.entity || { key: `target:${target}`, kind: "Target", name: target, title: "" };
  const nodes = [], edges = [];
  for (const [category, items] of Object.entries(bundle.groups)) {
    for (const item of items) {
      nodes.push({ key: item.id, kind: "Memory", label: item.text, title: category, status: item.status });
      edges.push({ source: item.id, relation: "ABOUT", target: centre.key });
    }
  }
  for (const item of bundle.related_memories) {
    nodes.push({ key: item.id, kind: "Memory", label: item.text, title: item.category, status: item.status });
    edges.push({ source: item.id, relation: "MENTIONS RELATED WORDS", target: centre.key });
  }
  for (const entity of bundle.related_entities) {
    nodes.push({ key: entity.key, kind: entity.kind, label: entity.name, title: entity.title || "", status: "" });
    edges.push({ source: centre.key, relation: "RELATED", target: entity.key });
  }
  contextGraph.show({ center: { key: centre.key, kind: centre.kind, label: centre.name, title: centre.title || "", status: "" },
    nodes: nodes.slice(0, MAX_NODES - 1), edges, more: 0 });
  contextGraph.select(centre.key, false);
}

// -- status -------------------------------------------------------------------------------

async function showStatus() {
  const { health, stats, project } = await api.status();
  const here = project.name ? "in this project" : "global";
  const both = (table, mine) => el("div", { class: "figures" }, Object.entries(table).map(([k, n]) =>
    el("div", { class: "figure" }, el("div", { class: "n" }, String(mine[k] || 0), el("span", { class: "of", text: ` of ${n}` })),
      el("div", { class: "what", text: `${k} (${here} of the store's)` }))));
  const ingest = stats.ingest || {};
  const gitlab = stats.gitlab;
  $("status").replaceChildren(
    el("p", {}, el("strong", { class: health.status, text: health.status }),
      health.reasons.length ? `: ${health.reasons.join("; ")}` : "", ` — graphmem ${health.version}, up ${Math.round(health.uptime_s)} s`),
    el("p", { class: "meta", text: project.name ? `Figures of ${project.name}, each beside the whole store's.`
      : "Figures of the global memories (name a project above), each beside the whole store's." }),
    el("div", { class: "figures" },
      el("div", { class: "figure" }, el("div", { class: "n" }, String(project.total), el("span", { class: "of", text: ` of ${stats.memories}` })),
        el("div", { class: "what", text: `memories ${here} (of the store's)` })),
      figure(stats.embedding_backlog, "waiting for a vector"),
      figure(health.model_loaded ? "loaded" : "loading", `model ${stats.model}`),
      figure(`${Math.round((stats.stale_share || 0) * 100)}%`, `possibly stale (${stats.stale_memories})`),
      figure(stats.active_sessions, "agent sessions"),
      figure(Object.values(stats.entities).reduce((a, b) => a + b, 0), "entities"),
      figure(ingest.enabled ? `${ingest.runs} runs` : "off", `ingest${ingest.last_error ? `: ${ingest.last_error}` : ""}`),
      figure(gitlab ? (gitlab.token || "—") : "off", `GitLab enrichment${gitlab ? `, ${gitlab.pending} waiting` : ""}`),
      figure(`${(stats.store_bytes / 1e6).toFixed(1)} MB`, `store in ${stats.data_dir}`)),
    el("h3", { text: "By category" }), both(stats.by_category, project.by_category),
    el("h3", { text: "By status" }), both(stats.by_status, project.by_status),
    el("h3", { text: "Entities" }), counts(stats.entities));
}

function counts(table) {
  return el("div", { class: "figures" }, Object.entries(table).map(([k, n]) =>
    el("div", { class: "figure" }, el("div", { class: "n", text: n }), el("div", { class: "what", text: k }))));
}

// -- start --------------------------------------------------------------------------------

function theme() {
  const saved = localStorage.getItem("graphmem.theme");
  if (saved) document.documentElement.dataset.theme = saved;
  $("theme").addEventListener("click", () => {
    const dark = document.documentElement.dataset.theme
      ? document.documentElement.dataset.theme === "dark" : matchMedia("(prefers-color-scheme: dark)").matches;
    document.documentElement.dataset.theme = dark ? "light" : "dark";
    localStorage.setItem("graphmem.theme", document.documentElement.dataset.theme);
    restyle();
  });
  matchMedia("(prefers-color-scheme: dark)").addEventListener("change", restyle);
}

function restyle() {
  graph?.restyle();
  contextGraph?.restyle();
}

function wire() {
  for (const c of CATEGORIES) $("f-category").append(el("option", { value: c, text: c }));
  for (const s of STATUSES) $("f-status").append(el("option", { value: s, text: s }));
  $("project").value = api.project.get();
  $("project").addEventListener("change", () => { api.project.set($("project").value.trim()); route(); });
  $("search-go").addEventListener("click", submitSearch);
  $("query").addEventListener("keydown", (e) => { if (e.key === "Enter") submitSearch(); });
  $("browse-go").addEventListener("click", () => run(() => browse(true)));
  $("browse-more").addEventListener("click", () => run(() => browse(false)));
  const goGraph = () => { location.hash = `#/graph/${encodeURIComponent($("graph-target").value.trim())}`; };
  $("graph-go").addEventListener("click", goGraph);
  $("graph-target").addEventListener("keydown", (e) => { if (e.key === "Enter") goGraph(); });
  const goContext = () => { location.hash = `#/context?target=${encodeURIComponent($("context-target").value.trim())}`; };
  $("context-go").addEventListener("click", goContext);
  $("context-target").addEventListener("keydown", (e) => { if (e.key === "Enter") goContext(); });
  $("skip").addEventListener("click", (e) => { e.preventDefault(); $("main").focus(); });
  document.addEventListener("keydown", (e) => {
    const typing = ["INPUT", "TEXTAREA", "SELECT"].includes(document.activeElement?.tagName);
    if (e.key === "/" && !typing) {
      e.preventDefault();
      if (!location.hash.startsWith("#/search")) location.hash = "#/search";
      showView("search"); // at once, so that the field can take the focus
      $("query").focus();
    }
  });
  graph = new Graph($("graph"), { onSelect: selectNode, onExpand: (key) => expand(key), onMore: expand, onOpen: openNode },
    { legend: $("graph-legend"), list: $("graph-list") });
  contextGraph = new Graph($("context-graph"), { onSelect: () => {}, onExpand: () => {}, onMore: () => {}, onOpen: openNode });
  $("zoom-in").addEventListener("click", () => graph.zoomBy(1.25));
  $("zoom-out").addEventListener("click", () => graph.zoomBy(0.8));
  $("zoom-fit").addEventListener("click", () => graph.fit());
  window.addEventListener("hashchange", route);
  document.addEventListener("signed-out", () => { $("signed-out").hidden = false; });
}

async function start() {
  theme();
  wire();
  let signedIn = false;
  try {
    signedIn = await api.signIn();
  } catch (error) {
    toast(error.message, true);
  }
  $("project").value = api.project.get(); // the sign-in link may name the project to start in
  $("signed-out").hidden = signedIn;
  document.body.dataset.ready = signedIn ? "signed-in" : "signed-out";
  if (signedIn) await route();
}

start();
