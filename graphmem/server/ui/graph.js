// The graph view, drawn with cytoscape.js (vendored: cytoscape.js is cytoscape 3.35.0's
// dist/cytoscape.esm.min.mjs, MIT, cytoscape-LICENSE.txt; see docs/ui.md#the-graph).
// Each kind of node has its colour and shape (KINDS, and the legend beside the drawing); an
// edge names its kind on hover and around the selected node. A node's neighbours come a few
// per kind of edge; "+N more" asks for more, Expand adds a node's own, Collapse takes them back.

import cytoscape from "./cytoscape.js";
import { el, svg } from "./dom.js";

export const MAX_NODES = 160; // a bigger drawing stops being readable: collapse, or centre on a node
export const FIRST_LIMIT = 8; // neighbours per kind of edge drawn at first (the rest: "+N more")
const MORE_STEP = 16; // each "+N more" asks for this many more per kind of edge
const MAX_LIMIT = 100; // what /ui/graph gives at most per kind of edge
const LABEL_CHARS = 34;
const MIN_ZOOM = 0.8; // labels stay readable: a bigger graph is panned, not shrunk below this
const MORE = "more";
const FORCE_MAX = 80; // nodes laid out by force; past this, in rings (see layout())

/** Each kind's name, shape (cytoscape's) and colour (a CSS variable, so both themes apply). */
export const KINDS = {
  Memory: { name: "memory", shape: "round-rectangle", colour: "--node-memory" },
  MergeRequest: { name: "merge request", shape: "diamond", colour: "--node-mr" },
  Issue: { name: "issue", shape: "triangle", colour: "--node-issue" },
  Epic: { name: "epic", shape: "star", colour: "--node-epic" },
  File: { name: "file", shape: "rectangle", colour: "--node-file" },
  Symbol: { name: "symbol", shape: "ellipse", colour: "--node-symbol" },
  other: { name: "other (project, module…)", shape: "hexagon", colour: "--node-other" },
  [MORE]: { name: "more not drawn yet", shape: "tag", colour: "--muted" },
};
const kindOf = (kind) => (kind in KINDS ? kind : "other");

export class Graph {
  /** @param {HTMLElement} root  @param {{onSelect, onExpand, onMore, onOpen}} handlers */
  constructor(root, handlers, { legend = null, list = null } = {}) {
    this.root = root;
    this.handlers = handlers;
    this.legend = legend;
    this.list = list;
    this.centre = null;
    this.selected = null;
    this.lastDrawMs = 0;
    this.maxNodes = MAX_NODES;
    this.cy = cytoscape({
      container: root, style: this.style(), minZoom: 0.2, maxZoom: 3, wheelSensitivity: 0.3,
      boxSelectionEnabled: false, autoungrabify: false,
    });
    root.graph = this; // the browser tests read positions through it
    this.cy.on("tap", "node", (event) => this.tapped(event.target.id()));
    this.cy.on("dbltap", "node", (event) => this.handlers.onOpen(this.node(event.target.id())));
    this.cy.on("mouseover", "edge", (event) => this.hover(event.target, true));
    this.cy.on("mouseout", "edge", (event) => this.hover(event.target, false));
    root.addEventListener("keydown", (event) => this.onKey(event));
    root.addEventListener("focus", () => { if (!this.selected && this.centre) this.select(this.centre); });
  }

  /** Every node drawn (not the "+N more" ones), as {key, kind, label, title, status}. */
  get nodes() {
    return new Map(this.cy.nodes().filter((n) => n.data("kind") !== MORE).map((n) => [n.id(), this.node(n.id())]));
  }

  get size() { return this.cy.nodes().filter((n) => n.data("kind") !== MORE).length; }

  node(key) {
    const n = this.cy.getElementById(key);
    return n.nonempty() ? { key: n.id(), ...n.data() } : undefined;
  }

  /** Replace the drawing with a neighbourhood (``/ui/graph``'s answer). */
  show(found, limit = FIRST_LIMIT) {
    this.cy.elements().remove();
    this.centre = found.center.key;
    this.selected = null;
    this.merge(found, limit);
  }

  /** Add a neighbourhood around a node drawn already; false when it would pass MAX_NODES. */
  merge(found, limit = FIRST_LIMIT) {
    const key = found.center.key;
    const fresh = [found.center, ...found.nodes].filter((n) => this.cy.getElementById(n.key).empty());
    if (this.size + fresh.length > this.maxNodes) return false;
    const started = performance.now();
    const origin = this.cy.getElementById(key);
    const at = origin.nonempty() ? origin.position() : { x: 0, y: 0 };
    const added = [];
    fresh.forEach((node, i) => {
      const angle = i * 2.39996; // the golden angle: new nodes spread evenly, the same way each time
      const near = node.key === key;
      added.push({ group: "nodes", data: {
        id: node.key, kind: node.kind, label: node.label, title: node.title || "", status: node.status || "",
        short: short(node.label), shape: kindOf(node.kind), by: near ? null : key,
      }, position: near ? { ...at } : { x: at.x + Math.cos(angle) * 140, y: at.y + Math.sin(angle) * 140 } });
    });
    for (const edge of found.edges) {
      const id = `${edge.source}|${edge.relation}|${edge.target}`;
      if (this.cy.getElementById(id).empty()) {
        added.push({ group: "edges", data: { id, source: edge.source, target: edge.target,
          relation: edge.relation.toLowerCase().replaceAll("_", " ") } });
      }
    }
    this.cy.getElementById(`${MORE}:${key}`).remove();
    if (found.more > 0) {
      added.push({ group: "nodes", data: { id: `${MORE}:${key}`, kind: MORE, shape: MORE, of: key,
        label: `+${found.more} more`, short: `+${found.more} more`, title: "", status: "", by: key } },
      { group: "edges", data: { id: `${MORE}|${key}`, source: key, target: `${MORE}:${key}`, relation: "more" },
        classes: MORE });
    }
    this.cy.add(added);
    this.cy.getElementById(key).data({ expanded: true, limit });
    this.layout();
    this.lastDrawMs = performance.now() - started;
    this.root.dataset.nodes = String(this.size);
    this.describe();
    return true;
  }

  /** Take back what expanding ``key`` added (and what expanding those added), never the centre. */
  collapse(key) {
    const gone = new Set();
    for (let grew = true; grew;) {
      grew = false;
      this.cy.nodes().forEach((n) => {
        const by = n.data("by");
        if (!gone.has(n.id()) && n.id() !== this.centre && (by === key || gone.has(by))) { gone.add(n.id()); grew = true; }
      });
    }
    this.cy.remove(this.cy.collection([...gone].map((id) => this.cy.getElementById(id))));
    this.cy.getElementById(key).data({ expanded: false });
    this.root.dataset.nodes = String(this.size);
    this.describe();
    this.select(key);
    return gone.size;
  }

  layout() {
    this.cy.resize();
    const centre = this.cy.getElementById(this.centre);
    // A force layout reads best for a neighbourhood; its cost grows with the square of the
    // nodes, so a big drawing is laid out in rings by how many expansions away a node is.
    const options = this.cy.nodes().length <= FORCE_MAX
      ? { name: "cose", idealEdgeLength: () => 70, nodeRepulsion: () => 5000, nodeOverlap: 12, gravity: 1,
        numIter: 400, componentSpacing: 60, randomize: false, nodeDimensionsIncludeLabels: true }
      : { name: "concentric", concentric: (n) => -this.depth(n.id()), levelWidth: () => 1, minNodeSpacing: 18,
        spacingFactor: 1, avoidOverlap: true };
    this.cy.layout({ ...options, animate: false, fit: false }).run();
    this.cy.fit(undefined, 30);
    if (this.cy.zoom() < MIN_ZOOM) {
      this.cy.zoom(MIN_ZOOM);
      this.cy.center(this.selected ? this.cy.getElementById(this.selected) : centre);
    }
    if (this.cy.zoom() > 1.4) { this.cy.zoom(1.4); this.cy.center(); }
    this.cy.nodes().removeClass("centre");
    centre.addClass("centre");
  }

  zoomBy(factor) {
    const box = this.root.getBoundingClientRect();
    this.cy.zoom({ level: this.cy.zoom() * factor, renderedPosition: { x: box.width / 2, y: box.height / 2 } });
  }

  fit() { this.cy.fit(undefined, 30); }

  /** How many expansions away from the centre a node was drawn. */
  depth(key) {
    let depth = 0;
    for (let n = this.cy.getElementById(key); n.nonempty() && n.data("by"); n = this.cy.getElementById(n.data("by"))) depth++;
    return depth;
  }

  tapped(key) {
    const node = this.node(key);
    if (!node) return;
    this.select(key, false);
    if (node.kind === MORE) this.handlers.onMore(node.of, this.moreLimit(node.of));
    else if (!node.expanded) this.handlers.onExpand(key);
  }

  moreLimit(key) {
    return Math.min((this.cy.getElementById(key).data("limit") || FIRST_LIMIT) + MORE_STEP, MAX_LIMIT);
  }

  select(key, focus = true) {
    const n = this.cy.getElementById(key);
    if (n.empty()) return;
    this.selected = key;
    this.cy.elements().removeClass("selected named");
    n.addClass("selected");
    if (key !== this.centre) n.connectedEdges().addClass("named"); // its edges say their kind
    const box = this.cy.extent(), p = n.position();
    if (p.x < box.x1 || p.x > box.x2 || p.y < box.y1 || p.y > box.y2) this.cy.center(n);
    if (focus && document.activeElement !== this.root) this.root.focus();
    this.handlers.onSelect(this.node(key));
  }

  /** An edge under the pointer says its kind (and keeps saying it while its node is selected). */
  hover(edge, over) {
    const selected = edge.source().hasClass("selected") || edge.target().hasClass("selected");
    if (over) edge.addClass("named");
    else if (!selected) edge.removeClass("named");
    this.root.title = over ? `${edge.source().data("short")} —${edge.data("relation")}→ ${edge.target().data("short")}` : "";
  }

  /** Enter or + expands (or draws more), - collapses, O opens, arrows move to the nearest node that way. */
  onKey(event) {
    const key = this.selected;
    if (!key) return;
    const node = this.node(key);
    if (event.key === "Enter" || event.key === "+") {
      event.preventDefault();
      if (node.kind === MORE) this.handlers.onMore(node.of, this.moreLimit(node.of));
      else this.handlers.onExpand(key);
    } else if (event.key === "-") { event.preventDefault(); this.collapse(key); }
    else if (event.key === "o" || event.key === "O") { event.preventDefault(); if (node.kind !== MORE) this.handlers.onOpen(node); }
    else if (event.key.startsWith("Arrow")) { event.preventDefault(); this.moveFrom(key, event.key); }
  }

  moveFrom(key, arrow) {
    const from = this.cy.getElementById(key).position();
    const [dx, dy] = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] }[arrow];
    let best = null, bestScore = Infinity;
    this.cy.nodes().forEach((n) => {
      const p = n.position(), vx = p.x - from.x, vy = p.y - from.y;
      const along = vx * dx + vy * dy;
      if (n.id() === key || along <= 0) return;
      const score = Math.hypot(vx, vy) + 2 * Math.abs(vx * dy - vy * dx);
      if (score < bestScore) { best = n.id(); bestScore = score; }
    });
    if (best) this.select(best);
  }

  /** The legend (the kinds drawn, with their shape and count) and the nodes as a list of links. */
  describe() {
    const counts = {};
    this.cy.nodes().forEach((n) => { const k = n.data("shape"); counts[k] = (counts[k] || 0) + 1; });
    if (this.legend) {
      this.legend.replaceChildren(...Object.entries(KINDS).filter(([k]) => counts[k]).map(([k, kind]) =>
        el("li", { "data-kind": k }, swatch(k), ` ${kind.name}`, el("span", { class: "meta", text: ` ${counts[k]}` }))),
      el("li", { class: "meta", text: "Hover an edge (or select a node) to see what links them." }));
    }
    if (this.list) {
      this.list.replaceChildren(...[...this.nodes.values()].map((n) => el("li", { "data-key": n.key, "data-kind": n.kind },
        el("a", { href: `#/graph/${encodeURIComponent(n.key)}`, text: n.label }), ` ${kindName(n.kind)}`)));
    }
  }

  /** Colours follow the theme: read the page's CSS variables again. */
  restyle() { this.cy.style(this.style()); }

  style() {
    // style.css writes each colour as light-dark(light, dark), which only an element's computed
    // colour resolves (the variable's own value is that text): a probe element's, for the theme.
    const probe = document.body.appendChild(document.createElement("span"));
    const v = (name) => { probe.style.color = `var(${name}, #888)`; return getComputedStyle(probe).color; };
    const shapes = Object.entries(KINDS).map(([k, kind]) => ({
      selector: `node[shape = "${k}"]`, style: { shape: kind.shape, "background-color": v(kind.colour) } }));
    const style = [
      { selector: "node", style: {
        label: "data(short)", width: 26, height: 26, "font-size": 13, color: v("--fg"), "text-valign": "bottom",
        "text-margin-y": 5, "text-wrap": "ellipsis", "text-max-width": 180, "min-zoomed-font-size": 8,
        "text-background-color": v("--bg"), "text-background-opacity": 0.85, "text-background-padding": 2,
        "text-background-shape": "round-rectangle", "border-width": 2, "border-color": v("--bg"),
        "font-family": "system-ui, sans-serif" } },
      ...shapes,
      { selector: 'node[shape = "Memory"]', style: { width: 34, height: 22 } },
      { selector: `node[shape = "${MORE}"]`, style: { width: 22, height: 16, color: v("--muted"), "font-style": "italic" } },
      { selector: "node.centre", style: { width: 40, height: 40, "border-color": v("--fg"), "border-width": 3, "font-weight": "bold" } },
      { selector: 'node.centre[shape = "Memory"]', style: { width: 50, height: 32 } },
      { selector: "node.selected", style: { "border-color": v("--focus"), "border-width": 5 } },
      { selector: "edge", style: { width: 1.5, "line-color": v("--edge"), "target-arrow-color": v("--edge"),
        "target-arrow-shape": "triangle", "arrow-scale": 0.8, "curve-style": "bezier", "font-size": 11,
        color: v("--fg"), "text-background-color": v("--bg"), "text-background-opacity": 0.9,
        "text-background-padding": 2, "text-rotation": "autorotate" } },
      { selector: "edge.named", style: { label: "data(relation)", width: 2.5, "line-color": v("--accent"),
        "target-arrow-color": v("--accent") } },
      { selector: `edge.${MORE}`, style: { "line-style": "dashed", "target-arrow-shape": "none" } },
    ];
    probe.remove();
    return style;
  }
}

/** A small drawing of a kind's shape, for the legend (filled by the same CSS variable). */
export function swatch(kind) {
  const shapes = {
    "round-rectangle": svg("rect", { x: 1, y: 4, width: 16, height: 10, rx: 3 }),
    diamond: svg("polygon", { points: "9,1 17,9 9,17 1,9" }),
    triangle: svg("polygon", { points: "9,1 17,16 1,16" }),
    star: svg("polygon", { points: "9,1 11,7 17,7 12,11 14,17 9,13 4,17 6,11 1,7 7,7" }),
    rectangle: svg("rect", { x: 2, y: 2, width: 14, height: 14 }),
    ellipse: svg("circle", { cx: 9, cy: 9, r: 8 }),
    hexagon: svg("polygon", { points: "5,2 13,2 17,9 13,16 5,16 1,9" }),
    tag: svg("polygon", { points: "1,4 12,4 17,9 12,14 1,14" }),
  };
  return svg("svg", { class: `swatch k-${kind}`, width: 18, height: 18, viewBox: "0 0 18 18", "aria-hidden": "true" },
    shapes[KINDS[kind].shape]);
}

function short(label) {
  const text = String(label || "");
  return text.length > LABEL_CHARS ? `${text.slice(0, LABEL_CHARS - 1)}…` : text;
}

export function kindName(kind) {
  return { MergeRequest: "merge request", Memory: "memory" }[kind] || String(kind).toLowerCase();
}
