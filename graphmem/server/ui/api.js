// The daemon's routes, called with the view's session (see docs/ui.md#security).

const SESSION = "graphmem.session";
const PROJECT = "graphmem.project";

export class ApiError extends Error {
  constructor(message, status, type) {
    super(message);
    this.status = status;
    this.type = type || "";
  }
}

/** Trade the one-time code of the URL graphmem ui opened for a session; whether one is open. */
export async function signIn() {
  const params = new URLSearchParams(location.hash.slice(1));
  const code = params.get("code");
  if (params.has("project")) localStorage.setItem(PROJECT, params.get("project"));
  if (code) {
    // The code leaves the address bar and the history at once: it is good only once anyway.
    history.replaceState(null, "", `${location.pathname}#/home`);
    const answer = await post("/ui/session", { code }, false);
    sessionStorage.setItem(SESSION, answer.session);
  }
  return sessionStorage.getItem(SESSION) !== null;
}

export const project = {
  get: () => localStorage.getItem(PROJECT) || "",
  set: (value) => localStorage.setItem(PROJECT, value),
};

async function post(path, body, withSession = true) {
  const headers = { "Content-Type": "application/json" };
  if (withSession) headers.Authorization = `Bearer ${sessionStorage.getItem(SESSION) || ""}`;
  const response = await fetch(path, {
    method: "POST", headers, body: JSON.stringify(body), credentials: "omit", cache: "no-store",
  });
  let data;
  try {
    data = await response.json();
  } catch {
    throw new ApiError(`The daemon answered HTTP ${response.status} without JSON.`, response.status);
  }
  if (response.status === 401 && withSession) {
    sessionStorage.removeItem(SESSION);
    document.dispatchEvent(new CustomEvent("signed-out"));
  }
  if (data.error) {
    const message = typeof data.error === "string" ? data.error : data.error.message;
    throw new ApiError(message, response.status, data.error.type);
  }
  return data;
}

/** The project argument: the field's value, or none (the daemon's own). */
function withProject(args, verb) {
  const own = project.get().trim();
  return own && !("project" in args) && PROJECT_VERBS.has(verb) ? { ...args, project: own } : args;
}
const PROJECT_VERBS = new Set(["recall", "get_context", "list", "edit", "remember", "review"]);

/** One service verb through /rpc, as the CLI calls it. */
export async function rpc(method, args = {}) {
  return (await post("/rpc", { method, arguments: withProject(args, method) })).result;
}

export async function graph(body) {
  const own = project.get().trim();
  return (await post("/ui/graph", own && body.target ? { ...body, project: own } : body)).result;
}

export async function context(target, maxTokens) {
  const own = project.get().trim();
  return (await post("/ui/context", { target, max_tokens: maxTokens, project: own || null })).result;
}

export async function status() {
  return (await post("/ui/status", { project: project.get().trim() || null })).result;
}

/** What needs a person in the project (``/ui/home``; it only reads). */
export async function home() {
  return (await post("/ui/home", { project: project.get().trim() || null })).result;
}
