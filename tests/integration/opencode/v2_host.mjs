// A stand-in for the OpenCode 2 plugin host, driven from pytest (test_plugin_v2.py): it loads a plugin
// file as OpenCode 2 does, calls its setup(ctx) and then each hook with the shapes OpenCode 2's source
// defines, and prints what the plugin made of each request. OpenCode 2 (2.3.x) cannot be installed on
// the machines these tests run on, so this is what verifies graphmem's plugin against it.
//
// The shapes, as read in anomalyco/opencode (the commit each file was read at):
// - the module: packages/core/src/plugin/module.ts @ 07db2b925a415a95954142697bb11adc460c1906 — a
//   default export { id: string, setup: function } (or effect); other members are ignored. Files in
//   .opencode/plugins/ and $XDG_CONFIG_HOME/opencode/plugins/ are loaded with no config entry:
//   packages/core/src/plugin/discovery.ts @ dbc74f5bfd7384a8afaa97b5a746552c4967fca6 and
//   source-directory.ts @ 8ff468ab6e736d53de4175cce7433ad2601586e3.
// - setup(context) and its answer (a cleanup function or nothing): packages/plugin/src/promise/plugin.ts
//   @ 0ef9ef4be011358f55c5a01e78d55beb033f4746.
// - domain.hook(name, callback) -> Promise<{ dispose }>: packages/plugin/src/promise/registration.ts
//   @ baf3a6591a154eba7164fd50c8105c6f5b003658. The host awaits each callback, then reads the event.
// - session hooks: packages/plugin/src/promise/session.ts @ 03545fd3bb099af708c5f1146c42c10c7f24c359 —
//   prompt { sessionID, messageID, prompt: { text, files }, metadata, delivery }; context { sessionID,
//   model, kind, agent, system: SystemPart[], messages: Message[], options, tools }; compaction (the
//   context's shape, for the compaction request); title and generate are hooks of their own.
// - SystemPart { type: "text", text } and Message { id, role, content: ContentPart[], metadata }, built
//   readonly: packages/ai/src/schema/messages.ts @ 2b33fbee34033a1dda531675f1bdc229da5fb90e; a user
//   message carries its session message id: packages/core/src/session/runner/to-llm-message.ts
//   @ 0010d84ddd3366aedf240ed8392c9ce24ae3216c. The request is rebuilt from the session's history for
//   every call, so what a hook added to an earlier request is not in the next one: model-request.ts
//   @ 0330149c5fe09d2af468a905b0f132fd75cba522 (which also tells a subagent by its session's parentID).
// - tool hooks: packages/plugin/src/promise/tool.ts @ 196e46122874caa1df7d28dab7a64f6fddf0730a —
//   execute.before { tool, sessionID, agent, messageID, id, input }.
// - events: packages/plugin/src/promise/event.ts @ 31ee1d62fe1b1e1bc2a525dc6659da4fb77239a1
//   (subscribe(): AsyncIterable), envelope packages/schema/src/event.ts
//   @ 162a75f99cc10925fe2922b86940b72a49dbb60b ({ id, type, created, data, durable }), session events
//   packages/schema/src/session-event.ts @ 03130971e20a847d77cd70e13faabca0de4f512d
//   (session.execution.succeeded, session.compaction.ended, { sessionID }).
//
// Usage: node v2_host.mjs PLUGIN_URL SCRIPT_JSON (or @FILE holding it). The script is { directory, sessions: { id: { parentID } },
// steps: [...] }; each step is one of
//   { do: "prompt", sessionID, messageID, text, files }
//   { do: "context" | "compaction" | "title", sessionID, agent, system: [text], messages: [{ id, role, text }] }
//   { do: "tool", sessionID, tool, input }
//   { do: "event", type, sessionID }
// It prints one JSON line: { loaded, registered, results (per request step: its system and messages as
// they would go out), requests (every HTTP request the plugin made: path, status), cleanup }.

const [pluginUrl, scriptText] = process.argv.slice(2);
// "@PATH": the script is in that file (a long one would not fit in one argument).
const { readFileSync } = await import("node:fs");
const script = JSON.parse(scriptText.startsWith("@") ? readFileSync(scriptText.slice(1), "utf8") : scriptText);

// Every request the plugin makes, with its answer's status (0: it failed).
const requests = [];
const realFetch = globalThis.fetch;
globalThis.fetch = (url, init) => {
  const seen = { path: new URL(String(url)).pathname, status: 0 };
  if (seen.path !== "/identity") {
    try {
      seen.body = JSON.parse(init?.body ?? "null");
    } catch {}
  }
  requests.push(seen);
  return realFetch(url, init).then((response) => {
    seen.status = response.status;
    return response;
  });
};

const mod = await import(pluginUrl);
const definition = mod.default;
if (typeof definition?.id !== "string" || typeof definition?.setup !== "function") {
  console.error("Plugin must export a default definition with an id and an effect or setup function.");
  process.exit(3);
}

const registered = { session: [], tool: [] };
const hooks = new Map(); // "domain:name" -> [callback]
function domain(name) {
  return async (hook, callback) => {
    registered[name].push(hook);
    const key = `${name}:${hook}`;
    hooks.set(key, [...(hooks.get(key) ?? []), callback]);
    return { dispose: async () => hooks.set(key, (hooks.get(key) ?? []).filter((c) => c !== callback)) };
  };
}
async function trigger(key, event) {
  for (const callback of hooks.get(key) ?? []) await callback(event);
  return event;
}

// The event stream: subscribe() answers an async iterable fed by the script's event steps.
const subscribers = [];
function subscribe() {
  const queue = [];
  let wake;
  let done = false;
  const iterator = {
    [Symbol.asyncIterator]() {
      return this;
    },
    async next() {
      while (!queue.length && !done) await new Promise((resolve) => (wake = resolve));
      return queue.length ? { value: queue.shift(), done: false } : { value: undefined, done: true };
    },
    async return() {
      done = true;
      wake?.();
      return { value: undefined, done: true };
    },
    push(event) {
      queue.push(event);
      wake?.();
    },
  };
  subscribers.push(iterator);
  return iterator;
}

const directory = script.directory;
const ctx = Object.freeze({
  app: { name: "opencode", version: "2.3.0-stand-in", channel: "latest" },
  location: { directory, project: { id: "prj_stand_in", directory, canonical: directory } },
  options: {},
  session: {
    hook: domain("session"),
    get: async ({ sessionID }) => ({ id: sessionID, ...(script.sessions?.[sessionID] ?? {}) }),
  },
  tool: { hook: domain("tool") },
  event: { subscribe },
});

const cleanup = await definition.setup(ctx);

const deepFreeze = (value) => {
  if (value && typeof value === "object") {
    Object.values(value).forEach(deepFreeze);
    Object.freeze(value);
  }
  return value;
};
// The request as OpenCode 2 builds it from the session's history: readonly messages, a fresh array.
function request(step, kind) {
  return {
    sessionID: step.sessionID,
    model: { providerID: "fake", id: "fake-model" },
    kind,
    agent: step.agent ?? "build",
    system: (step.system ?? []).map((text) => ({ type: "text", text })),
    messages: (step.messages ?? []).map((m) =>
      deepFreeze({ id: m.id, role: m.role, content: [{ type: "text", text: m.text }], metadata: {} }),
    ),
    options: { maxTokens: 32000 },
    tools: {},
  };
}
const texts = (message) => message.content.filter((part) => part.type === "text").map((part) => part.text);

const results = [];
let seq = 0;
for (const step of script.steps) {
  if (step.do === "prompt") {
    const files = (step.files ?? []).map((path) => ({ uri: `file://${path}` }));
    await trigger("session:prompt", {
      sessionID: step.sessionID,
      messageID: step.messageID,
      prompt: { text: step.text, files },
      delivery: "steer",
    });
  } else if (step.do === "context" || step.do === "compaction" || step.do === "title") {
    const kind = step.do === "context" ? "primary" : step.do;
    const event = await trigger(`session:${step.do}`, request(step, kind));
    results.push({
      do: step.do,
      system: event.system.map((part) => part.text),
      messages: event.messages.map((m) => ({ id: m.id, role: m.role, texts: texts(m) })),
    });
  } else if (step.do === "tool") {
    await trigger("tool:execute.before", {
      tool: step.tool,
      sessionID: step.sessionID,
      agent: "build",
      messageID: "msg_tool",
      id: "call_1",
      input: step.input,
    });
  } else if (step.do === "event") {
    seq += 1;
    const event = {
      id: `evt_${seq}`,
      type: step.type,
      created: Date.now(),
      data: { sessionID: step.sessionID },
      durable: { aggregateID: step.sessionID, seq, version: 1 },
    };
    for (const subscriber of subscribers) subscriber.push(event);
    await new Promise((resolve) => setTimeout(resolve, 50)); // the plugin reads its events in the background
  }
}

// The host goes as OpenCode 2 unloads a plugin: it awaits the cleanup setup answered (a Cleanup may
// return a promise), and nothing else. What the plugin sent on its own (ingest, when a turn ended)
// is answered before then only if the cleanup waits for it.
if (typeof cleanup === "function") await cleanup();

const loaded = { id: definition.id, setup: true, server: typeof definition.server === "function" };
// Written to a pipe, stdout is asynchronous: exit only once the line is out (a long one was cut).
process.stdout.write(`${JSON.stringify({ loaded, registered, results, requests, cleanup: typeof cleanup })}\n`, () =>
  process.exit(0),
);
