// graphmem plugin for OpenCode (graphmem-plugin 2). Installed by `graphmem install opencode`,
// removed by `graphmem uninstall opencode`; `install` updates it (edits here are overwritten).
// One file for OpenCode 1 and 2: its default export carries the id both need, OpenCode 1's `server`
// and OpenCode 2's `setup`; each loads it from the plugins directory it reads by itself.
//
// It keeps the model provider's prompt cache: the boot context (conventions, open blockers, recent
// decisions) goes into the system prompt once per session and stays byte for byte until compaction;
// what recall finds for a turn goes into that turn's user message only, as a marked <memory> part,
// and every later request re-applies the same bytes to that message. What it put where is kept in a
// journal in graphmem's data dir (plugin-journal/<session>.json, written atomically, bounded), so
// every later request, in this OpenCode process or the next (`opencode run -c`), replays it without
// asking the daemon: a slow or restarted daemon can only leave the newest turn without its recall.
// The journal also keeps which memories each block showed (the daemon's answers name them), and each
// turn sends those of the blocks still in the conversation: a restarted daemon, which forgot them,
// does not show them again.
// OpenCode's hidden title, compaction and summary agents and OpenCode 2's subagent sessions get nothing.
// It keeps conventions, decisions and open blockers through compaction, and asks graphmem to learn
// from a session when it goes idle or is compacted; OpenCode closing waits for those requests (at
// most their timeout), since `opencode run` exits right after the session goes idle. It talks only to the local graphmem daemon (found
// through daemon.json in graphmem's data dir), sends it nothing secret before the daemon has proved it
// holds the token (a program squatting on a crashed daemon's port gets nothing), never waits longer
// than its timeouts, and never throws into OpenCode: with no daemon it adds nothing.
// GRAPHMEM_PLUGIN=off in OpenCode's environment turns it off.

import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

// Set by `graphmem --data-dir DIR install opencode`; GRAPHMEM_DATA_DIR wins over it.
const INSTALLED_DATA_DIR = null;

// The most a model call waits for recall (answers take ~10-40 ms); GRAPHMEM_PLUGIN_TIMEOUT_MS
// (50-10000) in OpenCode's environment changes it, e.g. on a slow or busy machine.
const TURN_TIMEOUT_MS = timeoutFromEnv(300);
const BOOT_TIMEOUT_MS = timeoutFromEnv(1000); // the boot context: asked once per session
const COMPACTION_TIMEOUT_MS = 2000; // compaction itself takes seconds
// The daemon only queues the session; OpenCode closing waits this long at most for the answer.
const INGEST_TIMEOUT_MS = Math.max(2000, timeoutFromEnv(2000));
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
// A memory as the daemon's answers name it in `shown` (its id and the start of its text's hash): the
// daemon refuses a turn that names anything else, or more than MAX_SHOWN (graphmem/core/keys.py's
// SHOWN_KEY and MAX_SHOWN_KEYS, which a test compares with these).
const SHOWN_KEY = /^[A-Za-z0-9_-]{1,64}:[0-9a-f]{12}$/;
const MAX_SHOWN = 2000;
const MAX_SHOWN_PER_BLOCK = 50; // a turn's block shows a few memories, the boot block a few dozen
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

// At most `most` UTF-16 units of `text`, its first (`head`) or its last (`tail`), cut between
// characters and with no lone surrogate: half of an emoji's pair is no text, and the daemon
// refuses a body that holds one (400), which would cost the turn its memory.
function wellFormed(text) {
  return typeof text.toWellFormed === "function" ? text.toWellFormed() : text;
}

function isHigh(code) {
  return code >= 0xd800 && code <= 0xdbff;
}

function head(text, most) {
  const whole = wellFormed(text);
  if (whole.length <= most) return whole;
  return whole.slice(0, isHigh(whole.charCodeAt(most - 1)) ? most - 1 : most);
}

function tail(text, most) {
  const whole = wellFormed(text);
  if (whole.length <= most) return whole;
  const start = whole.length - most;
  return whole.slice(isHigh(whole.charCodeAt(start - 1)) ? start + 1 : start);
}

function remember(map, key, value, limit) {
  map.delete(key);
  map.set(key, value);
  while (map.size > limit) map.delete(map.keys().next().value);
}

function textOf(parts) {
  const joined = (parts ?? [])
    .filter((part) => part?.type === "text" && typeof part.text === "string" && !part.synthetic && !part.ignored)
    .map((part) => part.text)
    .join("\n");
  return head(joined, MAX_TEXT_CHARS);
}

function blockOf(value) {
  return typeof value === "string" && value.length <= MAX_BLOCK_CHARS && value.startsWith(BLOCK_OPEN) ? value : "";
}

// The memory keys in `value` (a daemon's answer, a journal's list), anything else dropped: what the
// journal holds only ever leaves memories out, and never makes the daemon refuse the turn.
function keysOf(value) {
  if (!Array.isArray(value)) return [];
  return [...new Set(value.filter((key) => typeof key === "string" && SHOWN_KEY.test(key)))].slice(0, MAX_SHOWN_PER_BLOCK);
}

// What the plugin put into a session's requests: the boot block of its system prompt (null: not
// decided yet) and the block of each user message ("" when it went out bare), kept in one file per
// session so that every OpenCode process replays the same bytes without a network wait. Only the
// newest user message, not in the journal yet, ever waits for the daemon. Beside them, the memories
// each block showed (`shown`, as the daemon named them), which every turn tells the daemon: it keeps
// them in its memory only, and a daemon restarted since would show them again. A new OpenCode process
// resuming the session (`opencode run -c`, `--session`, a restarted TUI) reads them from the same file.
class Journal {
  constructor() {
    // sessionID -> { boot, bootShown: [keys], blocks: Map("messageID|hash" -> block),
    //                shown: Map("messageID|hash" -> [keys]), owed: Set }
    this.sessions = new Map();
  }

  static folder() {
    return join(dataDir(), "plugin-journal");
  }

  static file(sessionID) {
    return typeof sessionID === "string" && SESSION_ID.test(sessionID) ? join(Journal.folder(), `${sessionID}.json`) : undefined;
  }

  static read(sessionID) {
    const entry = { boot: null, bootShown: [], blocks: new Map(), shown: new Map(), owed: new Set() };
    const file = Journal.file(sessionID);
    if (!file) return entry;
    try {
      const saved = JSON.parse(readFileSync(file, "utf8"));
      if (saved?.v !== JOURNAL_VERSION) return entry;
      if (typeof saved.boot === "string") entry.boot = blockOf(saved.boot);
      if (entry.boot) entry.bootShown = keysOf(saved.boot_shown);
      for (const [key, block] of Object.entries(saved.blocks ?? {})) {
        if (typeof block === "string") entry.blocks.set(key, blockOf(block));
      }
      const shown = saved.shown !== null && typeof saved.shown === "object" ? saved.shown : {};
      for (const [key, keys] of Object.entries(shown)) {
        if (entry.blocks.get(key)) entry.shown.set(key, keysOf(keys));
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
      for (const [key, block] of disk?.blocks ?? []) {
        if (entry.blocks.has(key)) continue;
        entry.blocks.set(key, block);
        if (disk.shown.has(key)) entry.shown.set(key, disk.shown.get(key));
      }
      if (entry.boot === null && disk?.boot != null && !entry.rechoose) {
        entry.boot = disk.boot;
        entry.bootShown = disk.bootShown;
      }
      while (entry.blocks.size > MAX_CACHED_BLOCKS) entry.blocks.delete(entry.blocks.keys().next().value);
      let text = this.serialize(entry);
      while (text.length > MAX_JOURNAL_BYTES && entry.blocks.size) {
        entry.blocks.delete(entry.blocks.keys().next().value);
        text = this.serialize(entry);
      }
      for (const key of entry.shown.keys()) if (!entry.blocks.has(key)) entry.shown.delete(key);
      mkdirSync(folder, { recursive: true, mode: 0o700 });
      const partial = join(folder, `.${sessionID}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
      writeFileSync(partial, text, { mode: 0o600 });
      renameSync(partial, file);
      if (fresh) Journal.prune(folder);
    } catch {}
  }

  // `boot_shown` and `shown` are new beside the blocks; a journal without them (an older plugin's)
  // reads as one whose blocks showed nothing the daemon must hear of.
  serialize(entry) {
    const shown = Object.fromEntries([...entry.shown].filter(([key, keys]) => keys.length && entry.blocks.has(key)));
    return JSON.stringify({
      v: JOURNAL_VERSION,
      boot: entry.boot,
      boot_shown: entry.boot ? entry.bootShown : [],
      blocks: Object.fromEntries(entry.blocks),
      shown,
      owed: [...entry.owed],
    });
  }

  // What the session's requests showed so far, as a turn tells the daemon: the boot block's memories,
  // then those of the blocks of `keys` (the user messages of this request, oldest first: a message
  // reverted or compacted away no longer counts), at most MAX_SHOWN, the newest kept.
  static shownIn(entry, keys) {
    const boot = entry.boot ? entry.bootShown : [];
    const turns = [...new Set(keys.flatMap((key) => (entry.blocks.get(key) ? (entry.shown.get(key) ?? []) : [])))];
    const all = [...new Set([...boot, ...turns.slice(Math.max(turns.length - (MAX_SHOWN - boot.length), 0))])];
    return all.slice(0, MAX_SHOWN);
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

// What the plugin knows and does, whichever OpenCode hosts it: the hooks of OpenCode 1 (`server`) and
// of OpenCode 2 (`setup`) below only translate their host's shapes into these calls.
class Memory {
  constructor(directory, log) {
    this.directory = directory;
    this.log = log; // one line in the host's log; never the terminal
    this.users = new Map(); // sessionID -> { id, text, agent } of the latest user message
    this.files = new Map(); // sessionID -> [paths in play], most recent last
    // Per session: its boot block, each user message's block, and the messages sent bare that the
    // daemon has not heard of yet; kept across OpenCode processes.
    this.journal = new Journal();
    this.systems = new Map(); // sessionID -> its system prompt as last seen (graphmem's block left out)
    this.ingested = new Map(); // sessionID -> when ingest was last asked
    this.ingesting = new Set(); // the ingest requests not answered yet
    this.quietUntil = 0;
    this.failing = false;
  }

  // At most one log line per failure streak.
  failed(error) {
    if (!(error instanceof NoDaemon)) this.quietUntil = Date.now() + BACKOFF_MS;
    if (this.failing) return;
    this.failing = true;
    try {
      this.log(`graphmem plugin: ${error?.message ?? error}`);
    } catch {}
  }

  succeeded() {
    this.failing = false;
  }

  noteUser(sessionID, id, text, agent) {
    if (!sessionID || typeof id !== "string" || !id) return;
    const known = this.users.get(sessionID);
    if (known?.id === id && known.text) return;
    const entry = { id, text: head(String(text ?? ""), MAX_TEXT_CHARS), agent: typeof agent === "string" ? agent : "" };
    remember(this.users, sessionID, entry, MAX_SESSIONS);
  }

  noteFile(sessionID, path) {
    if (!sessionID || typeof path !== "string" || !path || path.length > 4096) return;
    const list = (this.files.get(sessionID) ?? []).filter((known) => known !== path);
    list.push(path);
    remember(this.files, sessionID, list.slice(-MAX_FILES), MAX_SESSIONS);
  }

  ingest(sessionID) {
    if (typeof sessionID !== "string" || !sessionID) return;
    const now = Date.now();
    if (now - (this.ingested.get(sessionID) ?? 0) < INGEST_DEDUP_MS) return;
    remember(this.ingested, sessionID, now, MAX_SESSIONS);
    const asked = post("/plugin/ingest", { session_id: sessionID, directory: this.directory, db_path: openCodeDb() }, INGEST_TIMEOUT_MS)
      .then(() => this.succeeded(), (error) => this.failed(error))
      .finally(() => this.ingesting.delete(asked));
    this.ingesting.add(asked);
  }

  // Resolves once every ingest asked so far is answered or timed out (never rejects): the host
  // closing awaits it, else `opencode run`, which exits as soon as its session goes idle, may end
  // before the daemon has read the request, and the session is not learned. A daemon that failed
  // a moment ago is not waited for (the daemon's continuous ingest reads the session later).
  async settled() {
    if (Date.now() < this.quietUntil) return;
    await Promise.allSettled([...this.ingesting]);
  }

  // Compaction replaces the conversation: the boot context is picked again, as it now is.
  compacted(sessionID) {
    const entry = this.journal.load(sessionID);
    if (entry.boot === null) return;
    entry.boot = null;
    entry.bootShown = [];
    entry.rechoose = true; // not the pre-compaction boot block another process may still have written
    this.journal.save(sessionID);
  }

  // The system prompt's boot block: "" when there is none. Decided once per session (until
  // compaction) and journaled: a boot context the daemon was too slow to give is left out for the
  // session, never added later (that would change the system prompt, which every cached prefix
  // starts with). `texts` is the system prompt as the host has it; null when it already holds a block.
  async boot(sessionID, texts, agent) {
    const parts = texts.filter((s) => typeof s === "string");
    // Already there: the block is a part of its own (a file that quotes the marker is not it).
    if (parts.some((s) => s.startsWith(BLOCK_OPEN))) return null;
    const text = parts.join("\n");
    remember(this.systems, sessionID, tail(text, MAX_SYSTEM_CHARS), MAX_SESSIONS);
    const entry = this.journal.load(sessionID);
    if (entry.boot !== null) return entry.boot;
    let block = "";
    let shown = [];
    try {
      if (Date.now() >= this.quietUntil) {
        const answer = await post(
          "/plugin/boot",
          { session_id: sessionID, directory: this.directory, agent: agent ?? "", system: this.systems.get(sessionID) },
          BOOT_TIMEOUT_MS,
        );
        this.succeeded();
        block = blockOf(answer?.block);
        if (block) shown = keysOf(answer?.shown);
      }
    } catch (error) {
      this.failed(error);
    }
    entry.boot = block;
    entry.bootShown = shown;
    entry.rechoose = false;
    this.journal.save(sessionID);
    return block;
  }

  // The block of each user message of a request (oldest first: { id, text }): those in the journal
  // as they are, with no network wait; for any not in it (the newest; or, in a session older than
  // the journal, earlier ones the daemon may still know) one call to the daemon, which hears what
  // the boot block and the blocks of these messages showed, so that it leaves them out of the new
  // block even after a restart. Whatever goes out is journaled, with what it shows, before it does.
  // Answers a Map id -> block ("" for none).
  async turn(sessionID, messages, agent) {
    const wanted = messages.slice(-MAX_MESSAGES).map(({ id, text }) => {
      const hash = createHash("sha256").update(text).digest("hex").slice(0, 32);
      return { id, hash, key: `${id}|${hash}` };
    });
    const newest = messages.at(-1);
    const entry = this.journal.load(sessionID);
    const kept = entry.blocks;
    const missing = wanted.filter((w) => !kept.has(w.key));
    if (missing.length) {
      try {
        if (Date.now() < this.quietUntil) throw new NoDaemon("graphmem's daemon failed a moment ago");
        const answer = await post(
          "/plugin/turn",
          {
            session_id: sessionID,
            directory: this.directory,
            agent: typeof agent === "string" ? agent : "",
            messages: wanted.map((w) => ({ id: w.id, hash: w.hash, bare: entry.owed.has(w.key) })),
            text: newest.text,
            system: this.systems.get(sessionID) ?? "",
            files: this.files.get(sessionID) ?? [],
            shown: Journal.shownIn(entry, wanted.map((w) => w.key)),
          },
          TURN_TIMEOUT_MS,
        );
        this.succeeded();
        const blocks = answer?.blocks !== null && typeof answer?.blocks === "object" ? answer.blocks : {};
        for (const w of missing) kept.set(w.key, blockOf(blocks[w.id]));
        // The answer's `shown` is the newest message's block's (an earlier one's is not named).
        const last = wanted.at(-1);
        if (missing.includes(last) && kept.get(last.key)) entry.shown.set(last.key, keysOf(answer?.shown));
        entry.owed.clear();
      } catch (error) {
        this.failed(error);
        // They go out bare now, so they stay bare: the daemon hears so on the next call.
        for (const w of missing) {
          kept.set(w.key, "");
          entry.owed.add(w.key);
        }
      }
      this.journal.save(sessionID);
    }
    return new Map(wanted.map((w) => [w.id, kept.get(w.key) ?? ""]));
  }

  // What must survive compaction (conventions, decisions, open blockers): texts for the summary's prompt.
  async compaction(sessionID) {
    this.compacted(sessionID);
    try {
      const answer = await post("/plugin/compaction", { session_id: sessionID, directory: this.directory }, COMPACTION_TIMEOUT_MS);
      this.succeeded();
      return (Array.isArray(answer?.context) ? answer.context : []).filter((text) => typeof text === "string" && text);
    } catch (error) {
      this.failed(error);
      return [];
    }
  }
}

function pluginOff() {
  return ["off", "0", "false", "no"].includes(String(process.env.GRAPHMEM_PLUGIN ?? "").toLowerCase());
}

// OpenCode 1 (`opencode-ai` 1.x): `server(input)` answers the hooks object. Verified by the real
// client (tests/integration/opencode/test_plugin.py).
async function server({ client, directory }) {
  if (pluginOff()) return {};
  const memory = new Memory(directory, (message) => {
    client?.app?.log?.({ body: { service: "graphmem", level: "warn", message } })?.catch?.(() => {});
  });
  const compacting = new Map(); // sessionID -> until when the next messages transform is compaction's

  return {
    "chat.message": async (input, output) => {
      try {
        const message = output?.message;
        if (message?.role === "user") {
          memory.noteUser(input?.sessionID ?? message.sessionID, message.id, textOf(output?.parts), message.agent);
        }
        for (const part of output?.parts ?? []) if (part?.type === "file") memory.noteFile(input?.sessionID, part.filename);
      } catch {}
    },

    // Recall for this turn goes into the newest user message, as a marked text part; every earlier
    // user message gets back, byte for byte, the block it was first sent with (OpenCode rebuilds the
    // messages from its database for every request, without it). The prefix stays cacheable.
    "experimental.chat.messages.transform": async (_input, output) => {
      try {
        const messages = output?.messages;
        if (!Array.isArray(messages)) return;
        const users = messages.filter((m) => m?.info?.role === "user" && typeof m.info.id === "string" && Array.isArray(m.parts));
        const newest = users.at(-1);
        const sessionID = newest?.info?.sessionID;
        if (typeof sessionID !== "string" || !sessionID) return;
        memory.noteUser(sessionID, newest.info.id, textOf(newest.parts), newest.info.agent);
        const until = compacting.get(sessionID);
        compacting.delete(sessionID);
        if (until !== undefined && Date.now() < until) return; // the compaction agent's call
        if (HIDDEN_AGENTS.includes(newest.info.agent)) return;
        const asked = users.map((m) => ({ id: m.info.id, text: textOf(m.parts), message: m }));
        const blocks = await memory.turn(sessionID, asked, newest.info.agent);
        for (const { id, message } of asked.slice(-MAX_MESSAGES)) {
          const block = blocks.get(id);
          const partID = `prt_graphmem_${id}`;
          if (!block || message.parts.some((part) => part?.id === partID)) continue;
          message.parts.push({ id: partID, sessionID, messageID: id, type: "text", text: block, synthetic: true });
        }
      } catch (error) {
        memory.failed(error);
      }
    },

    "tool.execute.before": async (input, output) => {
      try {
        for (const name of FILE_ARGS) memory.noteFile(input?.sessionID, output?.args?.[name]);
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
        const block = await memory.boot(sessionID, system, memory.users.get(sessionID)?.agent);
        if (block) system.push(block);
      } catch (error) {
        memory.failed(error);
      }
    },

    "experimental.session.compacting": async (input, output) => {
      try {
        if (!input?.sessionID) return;
        remember(compacting, input.sessionID, Date.now() + COMPACTION_TIMEOUT_MS + 5000, MAX_SESSIONS);
        if (!Array.isArray(output?.context)) {
          memory.compacted(input.sessionID);
          return;
        }
        for (const text of await memory.compaction(input.sessionID)) output.context.push(text);
      } catch (error) {
        memory.failed(error);
      }
    },

    // OpenCode awaits this when it closes the project's instance (`opencode run` before it exits).
    dispose: async () => {
      await memory.settled();
    },

    event: async ({ event }) => {
      try {
        const type = event?.type;
        const sessionID = event?.properties?.sessionID;
        if (type === "session.compacted" && sessionID) memory.compacted(sessionID);
        if (type === "session.idle" || type === "session.compacted") memory.ingest(sessionID);
        else if (type === "session.status" && event.properties?.status?.type === "idle") memory.ingest(sessionID);
      } catch (error) {
        memory.failed(error);
      }
    },
  };
}

// OpenCode 2 (`@opencode/plugin` 2.x): `setup(ctx)` registers hooks on the context's domains. Read from
// anomalyco/opencode's source and verified by a host stand-in, not a real client (the shapes, file by
// file, with the commit each was read at, are in docs/opencode.md and
// tests/integration/opencode/v2_host.mjs):
// - ctx.session.hook("context", e): the primary agent loop's request, rebuilt for every call from the
//   session's history: e.sessionID, e.agent, e.kind ("primary"), e.system (SystemPart[]:
//   { type: "text", text }), e.messages (Message[]: { id, role, content: ContentPart[] }). Title,
//   compaction and generate requests have hooks of their own, which get no block.
// - ctx.session.hook("prompt", e): a user prompt at admission: e.sessionID, e.messageID, e.prompt.text,
//   e.prompt.files ({ uri, name }).
// - ctx.session.hook("compaction", e): the compaction request (its e.system gets what must survive).
// - ctx.tool.hook("execute.before", e): e.sessionID, e.tool, e.input (the files a tool touches).
// - ctx.event.subscribe(): an async iterable of { type, data: { sessionID, ... } }; a turn ends with
//   session.execution.succeeded, a compaction with session.compaction.ended.
// - ctx.session.get({ sessionID }): the session; one with a parentID is a subagent's, which gets nothing.
// - ctx.location.directory: the project directory. There is no log in a Promise plugin's context.
async function setup(ctx) {
  if (pluginOff()) return;
  const directory = typeof ctx?.location?.directory === "string" ? ctx.location.directory : process.cwd();
  const memory = new Memory(directory, () => {}); // a V2 Promise plugin has no log to write to
  const subagents = new Map(); // sessionID -> whether it is a subagent's (a child session)
  const stop = new AbortController();

  // A session OpenCode could not describe in time counts as the user's own, and is asked about again.
  async function isSubagent(sessionID) {
    if (subagents.has(sessionID)) return subagents.get(sessionID);
    let timer;
    try {
      const session = await Promise.race([
        ctx.session.get({ sessionID }),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error("OpenCode did not describe the session in time")), TURN_TIMEOUT_MS);
        }),
      ]);
      const info = session?.data ?? session;
      const child = typeof info?.parentID === "string" && info.parentID !== "";
      remember(subagents, sessionID, child, MAX_SESSIONS);
      return child;
    } catch {
      return false; // not the daemon's failure: no backoff
    } finally {
      clearTimeout(timer);
    }
  }

  const textOfContent = (content) =>
    head(
      (Array.isArray(content) ? content : [])
        .filter((part) => part?.type === "text" && typeof part.text === "string")
        .map((part) => part.text)
        .join("\n"),
      MAX_TEXT_CHARS,
    );

  async function hook(domain, name, callback) {
    try {
      await domain?.hook?.(name, async (event) => {
        try {
          await callback(event);
        } catch (error) {
          memory.failed(error);
        }
      });
    } catch (error) {
      memory.failed(error);
    }
  }

  await hook(ctx?.session, "prompt", (event) => {
    const sessionID = event?.sessionID;
    memory.noteUser(sessionID, event?.messageID, event?.prompt?.text);
    for (const file of event?.prompt?.files ?? []) {
      const uri = typeof file?.uri === "string" ? file.uri : "";
      memory.noteFile(sessionID, uri.startsWith("file://") ? fileURLToPath(uri) : file?.name);
    }
  });

  // The boot block at the end of the system prompt; each user message's block appended to its content
  // (the request is rebuilt from history for every call, so every earlier message gets its bytes back).
  await hook(ctx?.session, "context", async (event) => {
    const sessionID = event?.sessionID;
    if (typeof sessionID !== "string" || !sessionID || !Array.isArray(event.system) || !Array.isArray(event.messages)) return;
    if ((event.kind !== undefined && event.kind !== "primary") || HIDDEN_AGENTS.includes(event.agent)) return;
    if (await isSubagent(sessionID)) return;
    const users = event.messages
      .filter((m) => m?.role === "user" && typeof m.id === "string" && m.id)
      .map((m) => ({ id: m.id, text: textOfContent(m.content) }));
    const texts = event.system.map((part) => (part?.type === "text" ? part.text : ""));
    const boot = memory.boot(sessionID, texts, event.agent);
    const turn = users.length ? memory.turn(sessionID, users, event.agent) : Promise.resolve(new Map());
    const [block, blocks] = await Promise.all([boot, turn]);
    if (block) event.system.push({ type: "text", text: block });
    if (!blocks.size) return;
    // A blank line first, as OpenCode 2 separates a message's text parts (a provider that joins
    // them would otherwise run the block into the user's last word).
    event.messages = event.messages.map((message) => {
      const block = message?.role === "user" ? blocks.get(message.id) : "";
      if (!block || !Array.isArray(message.content)) return message;
      const text = `\n\n${block}`;
      if (message.content.some((part) => part?.type === "text" && part.text === text)) return message;
      return { ...message, content: [...message.content, { type: "text", text }] };
    });
  });

  await hook(ctx?.session, "compaction", async (event) => {
    const sessionID = event?.sessionID;
    if (typeof sessionID !== "string" || !sessionID) return;
    const texts = await memory.compaction(sessionID);
    if (Array.isArray(event.system)) for (const text of texts) event.system.push({ type: "text", text });
  });

  await hook(ctx?.tool, "execute.before", (event) => {
    const input = event?.input;
    if (input === null || typeof input !== "object") return;
    for (const name of FILE_ARGS) memory.noteFile(event.sessionID, input[name]);
  });

  // Events arrive on an async iterable for as long as the plugin lives: read in the background.
  let events;
  try {
    events = ctx?.event?.subscribe?.()?.[Symbol.asyncIterator]?.();
  } catch (error) {
    memory.failed(error);
  }
  if (typeof events?.next === "function") {
    (async () => {
      try {
        for (let next = await events.next(); !next.done && !stop.signal.aborted; next = await events.next()) {
          const event = next.value;
          const sessionID = event?.data?.sessionID ?? event?.durable?.aggregateID;
          if (typeof sessionID !== "string" || !sessionID) continue;
          if (event.type === "session.compaction.ended") memory.compacted(sessionID);
          if (event.type === "session.execution.succeeded" || event.type === "session.compaction.ended") {
            memory.ingest(sessionID);
          }
        }
      } catch (error) {
        if (!stop.signal.aborted) memory.failed(error);
      }
    })();
  }

  return async () => {
    await memory.settled(); // the ingests asked as the last turn ended
    stop.abort();
    try {
      await events?.return?.();
    } catch {}
  };
}

// One default export for both: OpenCode 1 calls `server`, OpenCode 2 calls `setup`; both need the id.
export default { id: "graphmem", setup, server };
