"""graphmem inside agent clients.

- Files installed into a client, data rather than Python (``opencode/graphmem.js``: the
  OpenCode plugin, read by ``adapters/opencode_config.py`` with ``importlib.resources``).
- The hook side shared by the clients whose hooks are commands (Claude Code, Codex CLI):
  ``hook_command`` runs a hook as a process (its arguments, its log, an answer that never
  raises into the client's turn), ``hook_input`` reads a hook's stdin as hostile input,
  ``hook_journal`` makes each call a hook makes to the daemon (boot block, prompt, compaction,
  ingest: its body and what its answer means) and keeps the journal of prompts,
  ``hook_client`` reaches the daemon's ``/plugin/*`` routes within a deadline.
"""
