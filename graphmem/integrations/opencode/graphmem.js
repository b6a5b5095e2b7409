// graphmem plugin for OpenCode (graphmem-plugin 1). Installed by `graphmem install opencode`,
// removed by `graphmem uninstall opencode`; `install` updates it (edits here are overwritten).
//
// It keeps the model provider's prompt cache: the boot context (conventions, open blockers, recent
// decisions) goes into the system prompt once per session and stays byte for byte until compaction;
// what recall finds for a turn goes into that turn's user message only, as a marked <memory> part,
// and every later request re-applies the same bytes to that message. What it put where is kept in a
// journal in graphmem's data dir (plugin-journal/<session>.json, written atomically, bounded), so
// every later request, in this OpenCode process or the next (`opencode run -c`), replays it without
// asking the daemon: a slow or restarted daemon can only leave the newest turn without its recall. OpenCode's hidden title,
// compaction and summary agents get nothing. It keeps conventions, decisions and open blockers
// through compaction, and asks graphmem to learn from a session when it goes idle or is compacted. It talks only to
// the local graphmem daemon (found through daemon.json in graphmem's data dir), sends it nothing secret before
// the daemon has proved it holds the token (a program squatting on a crashed daemon's port gets nothing), never waits
// longer than its timeouts, and never throws into OpenCode: with no daemon it adds nothing.
// GRAPHMEM_PLUGIN=off in OpenCode's environment turns it off.

import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

// Set by `graphmem --data-dir DIR install opencode`; GRAPHMEM_DATA_DIR wins over it.
const INSTALLED_DATA_DIR = null;

// The most a model call waits for recall (answers take ~10-40 ms); GRAPHMEM_PLUGIN_TIMEOUT_MS
// (50-10000) in OpenCode's environment changes it, e.g. on a slow or busy machine.
const TURN_TIMEOUT_MS = timeoutFromEnv(300);
const BOOT_TIMEOUT_MS = timeoutFromEnv(1000); // the boot context: asked once per session
const COMPACTION_TIMEOUT_MS = 2000; // compaction itself takes seconds
const INGEST_TIMEOUT_MS = 2000; // the daemon only queues the session
const BACKOFF_MS = 30000; // after a slow or failing daemon, skip injection this long
const MAX_TEXT_CHARS = 100000;
const MAX_SYSTEM_CHARS = 400000;
const MAX_FILES = 20;
const MAX_SESSIONS = 200; // per-session state kept (oldest dropped first)
const MAX_CACHED_BLOCKS = 500; // user messages per session whose block is kept
const MAX_MESSAGES = 200; // user messages one request to the daemon names (the newest)
const MAX_BLOCK_CHARS = 40000;
const JOURNAL_VERSION = 1;
const MAX_JOURNAL_SESSIONS = 200; // session files kept in the journal (the least recently written go first)
const MAX_JOURNAL_BYTES = 2000000; // one session's file at most (its oldest messages' blocks go first)
const SESSION_ID = /^[A-Za-z0-9_-]{1,128}$/;
const BLOCK_OPEN = '<memory source="graphmem">';
const HIDDEN_AGENTS = ["title", "compaction", "summary"];
const INGEST_DEDUP_MS = 2000; // session.status idle and session.idle arrive together
// The prompts of OpenCode's hidden agents, which get no block: title (names the session),
// compaction (gets what must survive through experimental.session.compacting) and summary.
const HIDDEN_AGENT_MARKERS = [
  "You are a title generator",
  "You are a context summarization agent",
  "Summarize what was done in this conversation",
];
const FILE_ARGS = ["filePath", "path", "file"];

function timeoutFromEnv(fallback) {
  const asked = Number.parseInt(process.env.GRAPHMEM_PLUGIN_TIMEOUT_MS ?? "", 10);
  return Number.isFinite(asked) && asked >= 50 && asked <= 10000 ? asked : fallback;
}

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

// The daemon daemon.json names: its url and pid.
function daemonInfo() {
  let info;
  try {
    info = JSON.parse(readFileSync(join(dataDir(), "daemon.json"), "utf8"));
  } catch {
    throw new NoDaemon("no graphmem daemon is running");
  }
  if (typeof info?.url !== "string" || !Number.isInteger(info?.pid)) throw new NoDaemon("graphmem's daemon.json has no url or pid");
  return info;
}

// Before the token or a prompt goes out, the program at the daemon's address proves it is the daemon
// daemon.json names (after a crash any program may hold the port): it answers a fresh nonce with
// HMAC-SHA256(token, "graphmem-identity-1\n" nonce "\n" pid "\n" port), which needs the token.
async function provenDaemonUrl(secret, signal) {
  const info = daemonInfo();
  const nonce = randomBytes(16).toString("hex");
  const response = await fetch(info.url + "/identity", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ nonce }),
    signal,
  });
  const reply = await response.json().catch(() => ({}));
  const port = new URL(info.url).port || "80";
  const expected = Buffer.from(
    createHmac("sha256", secret).update(`graphmem-identity-1\n${nonce}\n${info.pid}\n${port}`).digest("hex"),
  );
  const proven = [reply?.proof, reply?.key_proof].some(
    (proof) => typeof proof === "string" && proof.length === expected.length && timingSafeEqual(Buffer.from(proof), expected),
  );
  if (reply?.pid !== info.pid || !proven) {
    throw new Error(`sent nothing to ${info.url}: the program there is not the graphmem daemon (pid ${info.pid}) that daemon.json names`);
  }
  return info.url;
}

// The daemon's local secret (daemon.token, readable only by this user), else GRAPHMEM_API_KEY.
function daemonToken() {
  try {
    const token = readFileSync(join(dataDir(), "daemon.token"), "utf8").trim();
    if (token) return token;
  } catch {}
  return (process.env.GRAPHMEM_API_KEY ?? "").trim();
}

// POST a JSON body to the daemon, once it proved itself; the answer's JSON. The identity request is
// on its way before the first await.
async function post(path, body, timeoutMs) {
  const secret = daemonToken();
  if (!secret) throw new NoDaemon("no daemon.token in graphmem's data dir and no GRAPHMEM_API_KEY");
  const signal = AbortSignal.timeout(timeoutMs);
  const url = await provenDaemonUrl(secret, signal);
  const response = await fetch(url + path, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${secret}` },
    body: JSON.stringify(body),
    signal,
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

// A user message's own text, hashed: its block is kept per id and text, so an edited message gets a new one.
function hashOf(parts) {
  return createHash("sha256").update(textOf(parts)).digest("hex").slice(0, 32);
}

function blockOf(value) {
  return typeof value === "string" && value.length <= MAX_BLOCK_CHARS && value.startsWith(BLOCK_OPEN) ? value : "";
}

// What the plugin put into a session's requests: the boot block of its system prompt (null: not
// decided yet) and the block of each user message ("" when it went out bare), kept in one file per
// session so that every OpenCode process replays the same bytes without a network wait. Only the
// newest user message, not in the journal yet, ever waits for the daemon.
class Journal {
  constructor() {
    this.sessions = new Map(); // sessionID -> { boot, blocks: Map("messageID|hash" -> block), owed: Set }
  }

  static folder() {
    return join(dataDir(), "plugin-journal");
  }

  static file(sessionID) {
    return SESSION_ID.test(sessionID) ? join(Journal.folder(), `${sessionID}.json`) : undefined;
  }

  static read(sessionID) {
    const entry = { boot: null, blocks: new Map(), owed: new Set() };
    const file = Journal.file(sessionID);
    if (!file) return entry;
    try {
      const saved = JSON.parse(readFileSync(file, "utf8"));
      if (saved?.v !== JOURNAL_VERSION) return entry;
      if (typeof saved.boot === "string") entry.boot = blockOf(saved.boot);
      for (const [key, block] of Object.entries(saved.blocks ?? {})) {
        if (typeof block === "string") entry.blocks.set(key, blockOf(block));
      }
      for (const key of Array.isArray(saved.owed) ? saved.owed : []) if (typeof key === "string") entry.owed.add(key);
    } catch {}
    return entry;
  }

  load(sessionID) {
    let entry = this.sessions.get(sessionID);
    if (!entry) entry = Journal.read(sessionID);
    remember(this.sessions, sessionID, entry, MAX_SESSIONS);
    return entry;
  }

  // Written to a private temporary file, then renamed over the old one: a reader sees the old
  // file or the new one, never half of it. What another process wrote meanwhile is kept.
  save(sessionID) {
    const entry = this.load(sessionID);
    const file = Journal.file(sessionID);
    if (!file) return;
    try {
      const folder = Journal.folder();
      const fresh = !existsSync(file);
      const disk = fresh ? undefined : Journal.read(sessionID);
      for (const [key, block] of disk?.blocks ?? []) if (!entry.blocks.has(key)) entry.blocks.set(key, block);
      if (entry.boot === null && disk?.boot != null && !entry.rechoose) entry.boot = disk.boot;
      while (entry.blocks.size > MAX_CACHED_BLOCKS) entry.blocks.delete(entry.blocks.keys().next().value);
      let text = this.serialize(entry);
      while (text.length > MAX_JOURNAL_BYTES && entry.blocks.size) {
        entry.blocks.delete(entry.blocks.keys().next().value);
        text = this.serialize(entry);
      }
      mkdirSync(folder, { recursive: true, mode: 0o700 });
      const partial = join(folder, `.${sessionID}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
      writeFileSync(partial, text, { mode: 0o600 });
      renameSync(partial, file);
      if (fresh) Journal.prune(folder);
    } catch {}
  }

  serialize(entry) {
    return JSON.stringify({ v: JOURNAL_VERSION, boot: entry.boot, blocks: Object.fromEntries(entry.blocks), owed: [...entry.owed] });
  }

  // At most MAX_JOURNAL_SESSIONS session files: the least recently written go.
  static prune(folder) {
    const names = readdirSync(folder).filter((name) => name.endsWith(".json"));
    if (names.length <= MAX_JOURNAL_SESSIONS) return;
    const dated = names.map((name) => {
      try {
        return [statSync(join(folder, name)).mtimeMs, name];
      } catch {
        return [0, name];
      }
    });
    dated.sort((a, b) => a[0] - b[0]);
    for (const [, name] of dated.slice(0, names.length - MAX_JOURNAL_SESSIONS)) {
      try {
        unlinkSync(join(folder, name));
      } catch {}
    }
  }
}

export const GraphmemPlugin = async ({ client, directory }) => {
  const off = ["off", "0", "false", "no"].includes(String(process.env.GRAPHMEM_PLUGIN ?? "").toLowerCase());
  if (off) return {};

  const users = new Map(); // sessionID -> { id, text, agent } of the latest user message
  const files = new Map(); // sessionID -> [paths in play], most recent last
  // Per session: its boot block, each user message's block, and the messages sent bare that the
  // daemon has not heard of yet; kept across OpenCode processes.
  const journal = new Journal();
  const systems = new Map(); // sessionID -> its system prompt as last seen (graphmem's block left out)
  const compacting = new Map(); // sessionID -> until when the next messages transform is compaction's
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

  // Compaction replaces the conversation: the boot context is picked again, as it now is.
  function compacted(sessionID) {
    const entry = journal.load(sessionID);
    if (entry.boot === null) return;
    entry.boot = null;
    entry.rechoose = true; // not the pre-compaction boot block another process may still have written
    journal.save(sessionID);
  }

  // The blocks of the request's user messages: those in the journal as they are, with no network
  // wait; for any not in it (the newest; or, in a session older than the journal, earlier ones the
  // daemon may still know) one call to the daemon. Whatever goes out is journaled before it does.
  async function blocksFor(sessionID, wanted, newest) {
    const entry = journal.load(sessionID);
    const kept = entry.blocks;
    const missing = wanted.filter((w) => !kept.has(w.key));
    if (!missing.length) return kept;
    try {
      if (Date.now() < quietUntil) throw new NoDaemon("graphmem's daemon failed a moment ago");
      const answer = await post(
        "/plugin/turn",
        {
          session_id: sessionID,
          directory,
          agent: typeof newest.info.agent === "string" ? newest.info.agent : "",
          messages: wanted.map((w) => ({ id: w.id, hash: w.hash, bare: entry.owed.has(w.key) })),
          text: textOf(newest.parts),
          system: systems.get(sessionID) ?? "",
          files: files.get(sessionID) ?? [],
        },
        TURN_TIMEOUT_MS,
      );
      succeeded();
      const blocks = answer?.blocks !== null && typeof answer?.blocks === "object" ? answer.blocks : {};
      for (const w of missing) kept.set(w.key, blockOf(blocks[w.id]));
      entry.owed.clear();
    } catch (error) {
      failed(error);
      // They go out bare now, so they stay bare: the daemon hears so on the next call.
      for (const w of missing) {
        kept.set(w.key, "");
        entry.owed.add(w.key);
      }
    }
    journal.save(sessionID);
    return kept;
  }

  return {
    "chat.message": async (input, output) => {
      try {
        noteUser(input?.sessionID ?? output?.message?.sessionID, output?.message, output?.parts);
        for (const part of output?.parts ?? []) if (part?.type === "file") noteFile(input?.sessionID, part.filename);
      } catch {}
    },

    // Recall for this turn goes into the newest user message, as a marked text part; every earlier
    // user message gets back, byte for byte, the block it was first sent with (OpenCode rebuilds the
    // messages from its database for every request, without it). The prefix stays cacheable.
    "experimental.chat.messages.transform": async (_input, output) => {
      try {
        const messages = output?.messages;
        if (!Array.isArray(messages)) return;
        const userMessages = messages.filter(
          (m) => m?.info?.role === "user" && typeof m.info.id === "string" && Array.isArray(m.parts),
        );
        const newest = userMessages.at(-1);
        const sessionID = newest?.info?.sessionID;
        if (typeof sessionID !== "string" || !sessionID) return;
        noteUser(sessionID, newest.info, newest.parts);
        const until = compacting.get(sessionID);
        compacting.delete(sessionID);
        if (until !== undefined && Date.now() < until) return; // the compaction agent's call
        if (HIDDEN_AGENTS.includes(newest.info.agent)) return;
        const wanted = userMessages.slice(-MAX_MESSAGES).map((message) => {
          const hash = hashOf(message.parts);
          return { message, id: message.info.id, hash, key: `${message.info.id}|${hash}` };
        });
        const kept = await blocksFor(sessionID, wanted, newest);
        for (const w of wanted) {
          const block = kept.get(w.key);
          const id = `prt_graphmem_${w.id}`;
          if (!block || w.message.parts.some((part) => part?.id === id)) continue;
          w.message.parts.push({ id, sessionID, messageID: w.id, type: "text", text: block, synthetic: true });
        }
      } catch (error) {
        failed(error);
      }
    },

    "tool.execute.before": async (input, output) => {
      try {
        for (const name of FILE_ARGS) noteFile(input?.sessionID, output?.args?.[name]);
      } catch {}
    },

    // The boot context goes into the system prompt once per session, the same bytes on every call.
    "experimental.chat.system.transform": async (input, output) => {
      try {
        const sessionID = input?.sessionID;
        const system = output?.system;
        if (!sessionID || !Array.isArray(system)) return;
        // A hidden agent's prompt opens the system prompt (an AGENTS.md quoting it does not count).
        const opening = String(system[0] ?? "").slice(0, 200);
        if (HIDDEN_AGENT_MARKERS.some((marker) => opening.includes(marker))) return;
        const text = system.filter((s) => typeof s === "string").join("\n");
        if (text.includes(BLOCK_OPEN)) return; // already there
        remember(systems, sessionID, text.slice(-MAX_SYSTEM_CHARS), MAX_SESSIONS);
        // Decided once per session (until compaction) and journaled: a boot context the daemon was
        // too slow to give is left out for the session, never added later (that would change
        // the system prompt, which every cached prefix starts with).
        const entry = journal.load(sessionID);
        let block = entry.boot;
        if (block === null) {
          block = "";
          try {
            if (Date.now() >= quietUntil) {
              const answer = await post(
                "/plugin/boot",
                { session_id: sessionID, directory, agent: users.get(sessionID)?.agent ?? "", system: systems.get(sessionID) },
                BOOT_TIMEOUT_MS,
              );
              succeeded();
              block = blockOf(answer?.block);
            }
          } catch (error) {
            failed(error);
          }
          entry.boot = block;
          entry.rechoose = false;
          journal.save(sessionID);
        }
        if (block) system.push(block);
      } catch (error) {
        failed(error);
      }
    },

    "experimental.session.compacting": async (input, output) => {
      try {
        if (!input?.sessionID) return;
        remember(compacting, input.sessionID, Date.now() + COMPACTION_TIMEOUT_MS + 5000, MAX_SESSIONS);
        compacted(input.sessionID);
        if (!Array.isArray(output?.context)) return;
        const answer = await post(
          "/plugin/compaction",
          { session_id: input.sessionID, directory },
          COMPACTION_TIMEOUT_MS,
        );
        succeeded();
        const context = Array.isArray(answer?.context) ? answer.context : [];
        for (const text of context) if (typeof text === "string" && text) output.context.push(text);
      } catch (error) {
        failed(error);
      }
    },

    event: async ({ event }) => {
      try {
        const type = event?.type;
        const sessionID = event?.properties?.sessionID;
        if (type === "session.compacted" && sessionID) compacted(sessionID);
        if (type === "session.idle" || type === "session.compacted") ingest(sessionID);
        else if (type === "session.status" && event.properties?.status?.type === "idle") ingest(sessionID);
      } catch (error) {
        failed(error);
      }
    },
  };
};
