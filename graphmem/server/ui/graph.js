// The graph view: a small force layout on SVG, written for this page (see docs/ui.md#the-graph).
// Nodes start on rings around the centre (one ring per hop), then a fixed number of steps of
// repulsion, springs and a pull to the centre settle them: the same data lays out the same way.

import { svg } from "./dom.js";

export const MAX_NODES = 160; // a bigger drawing stops being readable: expand less, or open a node
const STEPS = 240;
const SPRING = 90;
const LABEL_CHARS = 26;
const MIN_VIEW = [640, 400];
const KINDS = new Set(["Memory", "MergeRequest", "Issue", "Epic", "File", "Symbol"]);

export class Graph {
  /** @param {SVGSVGElement} root  @param {{onSelect, onExpand, onOpen}} handlers */
  constructor(root, handlers) {
    this.root = root;
    this.handlers = handlers;
    this.nodes = new Map(); // key -> {key, kind, label, title, status, x, y, hop}
    this.edges = new Map(); // "source|relation|target" -> edge
    this.centre = null;
    this.selected = null;
    root.addEventListener("keydown", (event) => this.onKey(event));
  }

  get size() { return this.nodes.size; }

  /** Replace the drawing with a neighbourhood (``/ui/graph``'s answer). */
  show(found) {
    this.nodes.clear();
    this.edges.clear();
    this.centre = found.center.key;
    this.merge(found, 0);
  }

  /** Add a neighbourhood around a node already drawn; false when it would pass MAX_NODES. */
  merge(found, hop) {
    const fresh = [found.center, ...found.nodes].filter((n) => !this.nodes.has(n.key));
    if (this.nodes.size + fresh.length > MAX_NODES) return false;
    const origin = this.nodes.get(found.center.key);
    let turn = 0;
    for (const node of [found.center, ...found.nodes]) {
      if (this.nodes.has(node.key)) continue;
      const angle = (turn += 2.39996); // the golden angle: new nodes spread evenly, the same way each time
      const near = node.key === found.center.key;
      this.nodes.set(node.key, {
        ...node,
        hop: near ? hop : hop + 1,
        x: (origin ? origin.x : 0) + (near ? 0 : Math.cos(angle) * SPRING),
        y: (origin ? origin.y : 0) + (near ? 0 : Math.sin(angle) * SPRING),
      });
    }
    for (const edge of found.edges) this.edges.set(`${edge.source}|${edge.relation}|${edge.target}`, edge);
    this.layout(origin === undefined);
    this.draw();
    return true;
  }

  layout(fromRings) {
    const nodes = [...this.nodes.values()];
    if (fromRings) ringStart(nodes, this.centre);
    const index = new Map(nodes.map((n, i) => [n.key, i]));
    const links = [...this.edges.values()]
      .map((e) => [index.get(e.source), index.get(e.target)])
      .filter(([a, b]) => a !== undefined && b !== undefined);
    for (let step = 0; step < STEPS; step++) {
      const heat = 1 - step / STEPS;
      const force = nodes.map(() => [0, 0]);
      for (let i = 0; i < nodes.length; i++) {
        for (let j = i + 1; j < nodes.length; j++) {
          let dx = nodes[i].x - nodes[j].x, dy = nodes[i].y - nodes[j].y;
          let d2 = dx * dx + dy * dy;
          if (d2 < 1) { dx = (i - j) * 0.5; dy = 1; d2 = 1; }
          const push = 2600 / d2;
          force[i][0] += dx * push; force[i][1] += dy * push;
          force[j][0] -= dx * push; force[j][1] -= dy * push;
        }
      }
      for (const [a, b] of links) {
        const dx = nodes[b].x - nodes[a].x, dy = nodes[b].y - nodes[a].y;
        const d = Math.max(Math.hypot(dx, dy), 1);
        const pull = (d - SPRING) / d * 0.08;
        force[a][0] += dx * pull; force[a][1] += dy * pull;
        force[b][0] -= dx * pull; force[b][1] -= dy * pull;
      }
      nodes.forEach((n, i) => {
        if (n.key === this.centre) return;
        const fx = force[i][0] - n.x * 0.01, fy = force[i][1] - n.y * 0.01;
        const move = Math.min(Math.hypot(fx, fy), 30 * heat + 1);
        const scale = move / Math.max(Math.hypot(fx, fy), 1e-9);
        n.x += fx * scale; n.y += fy * scale;
      });
    }
  }

  draw() {
    const root = this.root;
    root.replaceChildren();
    const nodes = [...this.nodes.values()];
    if (!nodes.length) return;
    const xs = nodes.map((n) => n.x), ys = nodes.map((n) => n.y);
    const pad = 70;
    const [x0, x1, y0, y1] = [Math.min(...xs) - pad, Math.max(...xs) + pad, Math.min(...ys) - 30, Math.max(...ys) + 40];
    // A few nodes are not drawn huge: the box is at least MIN_VIEW wide and tall, centred on them.
    const width = Math.max(x1 - x0, MIN_VIEW[0]), height = Math.max(y1 - y0, MIN_VIEW[1]);
    const left = (x0 + x1 - width) / 2, top = (y0 + y1 - height) / 2;
    root.setAttribute("viewBox", `${left} ${top} ${width} ${height}`);
    const edges = svg("g", { class: "edges" });
    for (const edge of this.edges.values()) {
      const a = this.nodes.get(edge.source), b = this.nodes.get(edge.target);
      if (!a || !b) continue;
      edges.append(
        svg("line", { class: "edge", x1: a.x, y1: a.y, x2: b.x, y2: b.y }),
        svg("text", { class: "edge-label", x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 - 3, "text-anchor": "middle",
          text: edge.relation.toLowerCase() }),
      );
    }
    const group = svg("g", { class: "nodes" });
    for (const node of nodes) {
      const kind = KINDS.has(node.kind) ? node.kind : "other";
      const label = node.label.length > LABEL_CHARS ? `${node.label.slice(0, LABEL_CHARS - 1)}…` : node.label;
      const classes = ["gnode", node.key === this.centre ? "center" : "", node.key === this.selected ? "selected" : ""];
      const item = svg("g", {
        class: classes.join(" ").trim(), tabindex: 0, role: "button", "data-key": node.key,
        "aria-label": `${kindName(node.kind)}: ${node.label}`,
        transform: `translate(${node.x} ${node.y})`,
        onclick: () => this.select(node.key),
        ondblclick: () => this.handlers.onExpand(node.key),
        onfocus: () => this.select(node.key, false),
      },
      svg("title", { text: `${kindName(node.kind)}: ${node.label}${node.title ? ` (${node.title})` : ""}` }),
      svg("circle", { r: node.key === this.centre ? 13 : 9, class: `k-${kind}` }),
      svg("text", { y: 24, "text-anchor": "middle", text: label }));
      group.append(item);
    }
    root.append(edges, group);
  }

  select(key, focus = true) {
    this.selected = key;
    for (const item of this.root.querySelectorAll(".gnode")) {
      item.classList.toggle("selected", item.dataset.key === key);
      if (focus && item.dataset.key === key && document.activeElement !== item) item.focus();
    }
    this.handlers.onSelect(this.nodes.get(key));
  }

  /** Enter or + expands the focused node, O opens it, arrows move to the nearest node that way. */
  onKey(event) {
    const key = event.target?.dataset?.key;
    if (!key) return;
    if (event.key === "Enter" || event.key === "+") { event.preventDefault(); this.handlers.onExpand(key); }
    else if (event.key === "o" || event.key === "O") { event.preventDefault(); this.handlers.onOpen(this.nodes.get(key)); }
    else if (event.key.startsWith("Arrow")) { event.preventDefault(); this.moveFrom(key, event.key); }
  }

  moveFrom(key, arrow) {
    const from = this.nodes.get(key);
    const [dx, dy] = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] }[arrow];
    let best = null, bestScore = Infinity;
    for (const node of this.nodes.values()) {
      const vx = node.x - from.x, vy = node.y - from.y;
      const along = vx * dx + vy * dy;
      if (node.key === key || along <= 0) continue;
      const score = Math.hypot(vx, vy) + Math.abs(vx * dy - vy * dx);
      if (score < bestScore) { best = node; bestScore = score; }
    }
    if (best) this.select(best.key);
  }
}

function ringStart(nodes, centre) {
  const rings = new Map();
  for (const node of nodes) {
    if (node.key === centre) { node.x = 0; node.y = 0; continue; }
    if (!rings.has(node.hop)) rings.set(node.hop, []);
    rings.get(node.hop).push(node);
  }
  for (const [hop, ring] of rings) {
    ring.forEach((node, i) => {
      const angle = (2 * Math.PI * i) / ring.length + hop * 0.4;
      node.x = Math.cos(angle) * SPRING * Math.max(hop, 1) * 1.6;
      node.y = Math.sin(angle) * SPRING * Math.max(hop, 1) * 1.6;
    });
  }
}

export function kindName(kind) {
  return { MergeRequest: "merge request", Memory: "memory" }[kind] || kind.toLowerCase();
}
