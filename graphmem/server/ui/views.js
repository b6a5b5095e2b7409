// How memories, hits and their explanations are drawn: shared by search, browse and the detail.

import { age, el } from "./dom.js";

export const CATEGORIES = ["decision", "blocker", "procedure", "fact", "preference", "directive", "event", "plan",
  "idea", "conversation"];
export const STATUSES = ["active", "proposed", "resolved", "superseded", "archived", "not_merged"];
export const LINK_KINDS = ["supersedes", "contradicts", "extends", "related"];

/** The tags under a memory: category, status, scope, age, stale. */
export function tags(memory) {
  return el("div", { class: "tags" },
    el("span", { class: "tag", text: memory.category }),
    memory.status !== "active" ? el("span", { class: `tag ${memory.status}`, text: memory.status }) : null,
    el("span", { class: "tag", text: memory.scope }),
    el("span", { text: age(memory.created_at), title: memory.created_at }),
    memory.stale ? el("span", { class: "tag stale", text: `possibly stale: ${memory.stale}` }) : null,
    el("span", { class: "mono", text: memory.id }));
}

/** A memory as a card that opens its detail. */
export function memoryCard(memory, extra = []) {
  return el("li", { class: "card", "data-id": memory.id },
    el("button", { type: "button", class: "open", "aria-label": `Open memory ${memory.id}`,
      onclick: () => { location.hash = `#/memory/${encodeURIComponent(memory.id)}`; } },
    el("p", { class: "text", text: memory.text })),
    tags(memory), extra);
}

/** A recall hit: its memory, its fused score, each channel's rank and score as bars, and the path. */
export function hitCard(hit, best) {
  const channels = el("div", { class: "channels", "aria-label": "Why it was found" });
  const top = Math.max(...hit.channels.map((c) => c.score), 1e-9);
  for (const channel of hit.channels) {
    channels.append(
      el("span", { text: `${channel.channel} #${channel.rank}` }),
      el("span", { class: "track" }, bar(channel.score / top)),
      el("span", { class: "mono", text: channel.score.toFixed(3) }),
    );
  }
  const score = el("div", { class: "score" }, el("span", { text: `score ${hit.score.toFixed(3)}` }),
    el("span", { class: "track wide" }, bar(hit.score / (best || 1))));
  const words = hit.why || hit.reason;  // why it is there, in words (core/views.py why())
  return memoryCard(hit.memory, [score, channels, words ? el("p", { class: "meta why", text: `why: ${words}` }) : null, pathOf(hit)]);
}

/** A bar filled to ``share`` (0 to 1) of its track: a width set through the CSSOM, which the
 * page's Content-Security-Policy allows (it refuses style attributes). */
function bar(share) {
  const fill = el("span", { class: "barline" });
  fill.style.width = `${Math.max(3, Math.round(Math.min(share, 1) * 100))}%`;
  return fill;
}

/** The walk that reached a hit, drawn as a chain: !12 —changes→ src/x.py —about→ this memory. */
export function pathOf(hit) {
  const steps = hit.channels.flatMap((c) => c.steps || []);
  if (!steps.length) return null;
  const chain = el("div", { class: "path", "aria-label": "Path through the graph" });
  steps.forEach((step, i) => {
    if (i === 0 || steps[i - 1].end !== step.start) {
      if (i > 0) chain.append(el("span", { class: "rel", text: "·" }));
      chain.append(nodeChip(step.start, step.start_name, hit.memory.id));
    }
    const arrow = step.forward ? `—${step.relation.toLowerCase()}→` : `←${step.relation.toLowerCase()}—`;
    chain.append(el("span", { class: "rel", text: arrow }), nodeChip(step.end, step.end_name, hit.memory.id));
  });
  return chain;
}

function nodeChip(key, name, own) {
  const shown = key === name || !name ? key : name;
  const memory = key === own ? "this memory" : "a memory";  // a memory's id reads as nothing
  return el("a", { class: "node", href: `#/graph/${encodeURIComponent(key)}`, title: key,
    text: shown.startsWith("mem_") ? memory : shown });
}
