// Building the page from data: text always goes in as text (textContent), never as HTML.

const SVG_NS = "http://www.w3.org/2000/svg";

/** An element with properties ("text" sets textContent, "on<event>" adds a listener) and children. */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  setProps(node, props);
  append(node, children);
  return node;
}

/** An SVG element, built the same way. */
export function svg(tag, props = {}, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  setProps(node, props);
  append(node, children);
  return node;
}

function setProps(node, props) {
  for (const [name, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "text") node.textContent = String(value);
    else if (name === "class") node.setAttribute("class", value);
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
}

/** Append children: nodes as they are, anything else as a text node. */
export function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export const $ = (id) => document.getElementById(id);

/** "3 days ago" from an ISO time. */
export function age(iso) {
  if (!iso) return "";
  const seconds = (Date.now() - new Date(iso).getTime()) / 1000;
  const units = [["year", 31536000], ["month", 2592000], ["day", 86400], ["hour", 3600], ["minute", 60]];
  for (const [unit, size] of units) {
    const n = Math.floor(seconds / size);
    if (n >= 1) return `${n} ${unit}${n > 1 ? "s" : ""} ago`;
  }
  return "just now";
}

let toastTimer = 0;
/** A short message at the bottom of the page (errors stay until the next one). */
export function toast(message, isError = false) {
  const box = $("toast");
  box.className = isError ? "error" : "";
  box.textContent = message;
  clearTimeout(toastTimer);
  if (!isError) toastTimer = setTimeout(() => { box.textContent = ""; }, 4000);
}

/** Ask before doing something that cannot be undone; resolves true only on the confirm button. */
export function confirmDialog(title, text, quote, yes = "Delete") {
  const dialog = $("confirm");
  $("confirm-title").textContent = title;
  $("confirm-text").textContent = text;
  $("confirm-quote").textContent = quote || "";
  $("confirm-yes").textContent = yes;
  return new Promise((resolve) => {
    const done = (answer) => {
      $("confirm-yes").removeEventListener("click", onYes);
      $("confirm-no").removeEventListener("click", onNo);
      dialog.removeEventListener("cancel", onNo);
      dialog.close();
      resolve(answer);
    };
    const onYes = () => done(true);
    const onNo = (event) => { event.preventDefault(); done(false); };
    $("confirm-yes").addEventListener("click", onYes);
    $("confirm-no").addEventListener("click", onNo);
    dialog.addEventListener("cancel", onNo);
    dialog.showModal();
    $("confirm-no").focus();
  });
}
