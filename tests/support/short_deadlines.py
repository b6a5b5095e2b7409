"""``graphmem`` whose daemon gives a client ``SHORT_DEADLINE_S`` to send a request's head and
its body, instead of the 10 and 30 s a user's daemon gives (``graphmem/server/connections.py``):
for a test that waits for a deadline to pass (``test_daemon_connections.py``), the same
protocol closes the connection within a second (the test asserts that the daemon closes it, not
when: 5 s, as before, only made it wait 4 s longer). Run as ``python short_deadlines.py serve ...``
(``support.daemons.start_daemon(..., program=SHORT_DEADLINES)``)."""

from __future__ import annotations

from graphmem.server.connections import GuardedH11Protocol

SHORT_DEADLINE_S = 1.0

if __name__ == "__main__":
    GuardedH11Protocol.head_timeout_s = GuardedH11Protocol.body_timeout_s = SHORT_DEADLINE_S
    from graphmem.cli.main import main

    main()
