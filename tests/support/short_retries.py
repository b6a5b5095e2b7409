"""``graphmem`` whose daemon's background workers try an unreachable store again every
``SHORT_RETRY_S`` instead of the ``STORE_RETRY_S`` (5 s) a user's daemon waits
(``graphmem/server/runtime.py``): for the tests that stop a PostgreSQL server under a daemon and
wait for its workers to meet the outage for a few turns, then to be back at work
(``tests/integration/adapters/test_postgres_outage.py``), the same loop turns in a second. Run
as ``python short_retries.py serve ...`` (``support.daemons.start_daemon(...,
program=SHORT_RETRIES)``)."""

from __future__ import annotations

from graphmem.server import runtime

SHORT_RETRY_S = 1.0

if __name__ == "__main__":
    runtime.STORE_RETRY_S = SHORT_RETRY_S
    from graphmem.cli.main import main

    main()
