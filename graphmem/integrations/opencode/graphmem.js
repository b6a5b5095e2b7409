// graphmem plugin for OpenCode (graphmem-plugin 1). Installed by `graphmem install opencode`,
// removed by `graphmem uninstall opencode`; `install` updates it (edits here are overwritten).
//
// Before each model call it adds a <memory> block to the system prompt (boot context once per
// session, then what recall finds for the current message), skipping OpenCode's hidden title,
// compaction and summary agents; it keeps conventions, decisions and open blockers through compaction; and it asks
// graphmem to learn from a session when the session goes idle or is compacted. It talks only to
// the local graphmem daemon (found through daemon.json in graphmem's data dir), never waits
// longer than its timeouts, and never throws into OpenCode: with no daemon it adds nothing.
// GRAPHMEM_PLUGIN=off in OpenCode's environment turns it off.

import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

// Set by `graphmem --data-dir DIR install opencode`; GRAPHMEM_DATA_DIR wins over it.
const INSTALLED_DATA_DIR = null;

const INJECT_TIMEOUT_MS = 300; // the most a model call waits for memory (answers take ~10-40 ms)
const COMPACTION_TIMEOUT_MS = 2000; // compaction itself takes seconds
const INGEST_TIMEOUT_MS = 2000; // the daemon only queues the session
const BACKOFF_MS = 30000; // after a slow or failing daemon, skip injection this long
const MAX_TEXT_CHARS = 100000;
const MAX_SYSTEM_CHARS = 400000;
const MAX_FILES = 20;
const MAX_SESSIONS = 200; // per-session state kept (oldest dropped first)
const MAX_CACHED_BLOCKS = 500;
const INGEST_DEDUP_MS = 2000; // session.status idle and session.idle arrive together
// The prompts of OpenCode's hidden agents, which get no block: title (names the session),
// compaction (gets what must survive through experimental.session.compacting) and summary.
const HIDDEN_AGENT_MARKERS = [
  "You are a title generator",
  "You are a context summarization agent",
  "Summarize what was done in this conversation",
];
const FILE_ARGS = ["filePath", "path", "file"];

function dataDir() {
  const env = process.env;
  if (env.GRAPHMEM_DATA_DIR) return env.GRAPHMEM_DATA_DIR;
  if (INSTALLED_DATA_DIR) return INSTALLED_DATA_DIR;
  if (process.platform === "darwin") return join(homedir(), "Library", "Application Support", "graphmem");
  return join(env.XDG_DATA_HOME || join(homedir(), ".local", "share"), "graphmem");
}

function openCodeDb() {
  const env = process.env;
  const path = env.OPENCODE_DB || join(env.XDG_DATA_HOME || join(homedir(), ".local", "share"), "opencode", "opencode.db");
  return existsSync(path) ? path : undefined;
}

class NoDaemon extends Error {}

function daemonUrl() {
  let info;
  try {
    info = JSON.parse(readFileSync(join(dataDir(), "daemon.json"), "utf8"));
  } catch {
    throw new NoDaemon("no graphmem daemon is running");
  }
  if (typeof info?.url !== "string") throw new NoDaemon("graphmem's daemon.json has no url");
  return info.url;
}

// POST a JSON body to the daemon; the answer's JSON. The request is on its way before the
// first await, so an event handler that cannot wait (opencode run exits) still sends it.
async function post(path, body, timeoutMs) {
  const headers = { "content-type": "application/json", "x-graphmem-client": `opencode-plugin/${process.pid}` };
  if (process.env.GRAPHMEM_API_KEY) headers.authorization = `Bearer ${process.env.GRAPHMEM_API_KEY}`;
  const response = await fetch(daemonUrl() + path, {
    method: "POST",
    headers,
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const answer = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(`${path} answered ${response.status}: ${answer.error ?? "no message"}`);
  return answer;
}

function remember(map, key, value, limit) {
  map.delete(key);
  map.set(key, value);
  while (map.size > limit) map.delete(map.keys().next().value);
}

function textOf(parts) {
  return (parts ?? [])
    .filter((part) => part?.type === "text" && typeof part.text === "string" && !part.synthetic && !part.ignored)
    .map((part) => part.text)
    .join("\n")
    .slice(0, MAX_TEXT_CHARS);
}

export const GraphmemPlugin = async ({ client, directory }) => {
  const off = ["off", "0", "false", "no"].includes(String(process.env.GRAPHMEM_PLUGIN ?? "").toLowerCase());
  if (off) return {};

  const users = new Map(); // sessionID -> { id, text, agent } of the latest user message
  const files = new Map(); // sessionID -> [paths in play], most recent last
  const blocks = new Map(); // sessionID|messageID|files -> block ("" when nothing to add)
  const ingested = new Map(); // sessionID -> when ingest was last asked
  let quietUntil = 0;
  let failing = false;

  // At most one log line per failure streak, in OpenCode's own log (never on the terminal).
  function failed(error) {
    if (!(error instanceof NoDaemon)) quietUntil = Date.now() + BACKOFF_MS;
    if (failing) return;
    failing = true;
    try {
      client?.app
        ?.log?.({ body: { service: "graphmem", level: "warn", message: `graphmem plugin: ${error?.message ?? error}` } })
        ?.catch?.(() => {});
    } catch {}
  }

  function succeeded() {
    failing = false;
  }

  function noteUser(sessionID, message, parts) {
    if (!sessionID || !message?.id || message.role !== "user") return;
    const known = users.get(sessionID);
    if (known?.id === message.id && known.text) return;
    remember(users, sessionID, { id: message.id, text: textOf(parts), agent: message.agent ?? "" }, MAX_SESSIONS);
  }

  function noteFile(sessionID, path) {
    if (!sessionID || typeof path !== "string" || !path || path.length > 4096) return;
    const list = (files.get(sessionID) ?? []).filter((known) => known !== path);
    list.push(path);
    remember(files, sessionID, list.slice(-MAX_FILES), MAX_SESSIONS);
  }

  function ingest(sessionID) {
    if (!sessionID) return;
    const now = Date.now();
    if (now - (ingested.get(sessionID) ?? 0) < INGEST_DEDUP_MS) return;
    remember(ingested, sessionID, now, MAX_SESSIONS);
    post("/plugin/ingest", { session_id: sessionID, directory, db_path: openCodeDb() }, INGEST_TIMEOUT_MS)
      .then(succeeded, failed);
  }

  return {
    "chat.message": async (input, output) => {
      try {
        noteUser(input?.sessionID ?? output?.message?.sessionID, output?.message, output?.parts);
        for (const part of output?.parts ?? []) if (part?.type === "file") noteFile(input?.sessionID, part.filename);
      } catch {}
    },

    "experimental.chat.messages.transform": async (_input, output) => {
      try {
        const last = (output?.messages ?? []).findLast((m) => m?.info?.role === "user");
        if (last) noteUser(last.info.sessionID, last.info, last.parts);
      } catch {}
    },

    "tool.execute.before": async (input, output) => {
      try {
        for (const name of FILE_ARGS) noteFile(input?.sessionID, output?.args?.[name]);
      } catch {}
    },

    "experimental.chat.system.transform": async (input, output) => {
      try {
        const sessionID = input?.sessionID;
        const system = output?.system;
        if (!sessionID || !Array.isArray(system)) return;
        // A hidden agent's prompt opens the system prompt (an AGENTS.md quoting it does not count).
        const opening = String(system[0] ?? "").slice(0, 200);
        if (HIDDEN_AGENT_MARKERS.some((marker) => opening.includes(marker))) return;
        const user = users.get(sessionID);
        if (!user) return;
        const inPlay = files.get(sessionID) ?? [];
        const key = `${sessionID}|${user.id}|${inPlay.join("\n")}`;
        let block = blocks.get(key);
        if (block === undefined) {
          if (Date.now() < quietUntil) return;
          const answer = await post(
            "/plugin/inject",
            {
              session_id: sessionID,
              message_id: user.id,
              directory,
              agent: user.agent,
              text: user.text,
              system: system.join("\n").slice(-MAX_SYSTEM_CHARS),
              files: inPlay,
            },
            INJECT_TIMEOUT_MS,
          );
          succeeded();
          block = typeof answer.block === "string" ? answer.block : "";
          remember(blocks, key, block, MAX_CACHED_BLOCKS);
        }
        if (block) system.push(block);
      } catch (error) {
        failed(error);
      }
    },

    "experimental.session.compacting": async (input, output) => {
      try {
        if (!input?.sessionID || !Array.isArray(output?.context)) return;
        const answer = await post(
          "/plugin/compaction",
          { session_id: input.sessionID, directory },
          COMPACTION_TIMEOUT_MS,
        );
        succeeded();
        for (const text of answer.context ?? []) if (typeof text === "string" && text) output.context.push(text);
      } catch (error) {
        failed(error);
      }
    },

    event: async ({ event }) => {
      try {
        const type = event?.type;
        const sessionID = event?.properties?.sessionID;
        if (type === "session.idle" || type === "session.compacted") ingest(sessionID);
        else if (type === "session.status" && event.properties?.status?.type === "idle") ingest(sessionID);
      } catch (error) {
        failed(error);
      }
    },
  };
};
