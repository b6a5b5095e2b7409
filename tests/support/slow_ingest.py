"""``graphmem`` whose daemon reads a ``/plugin/ingest`` request's body only ``INGEST_DELAY_S``
after it arrived, as a daemon on a busy machine may: the client that sent it must still be there
to be answered, else the request is dropped (the server reads a disconnect, not the body) and the
session is never learned. For the test that a finished ``opencode run`` waits for its plugin's
ingest (``tests/integration/opencode/test_plugin.py``). Run as ``python slow_ingest.py serve ...``
(``support.daemons.start_daemon(..., program=SLOW_INGEST)``)."""

from __future__ import annotations

from typing import Any

import anyio

from graphmem.server import plugin_routes

INGEST_DELAY_S = 2.0

if __name__ == "__main__":
    parse = plugin_routes._parse

    async def slow_parse(request: Any, model: Any) -> Any:
        if model is plugin_routes.IngestBody:
            await anyio.sleep(INGEST_DELAY_S)
        return await parse(request, model)

    plugin_routes._parse = slow_parse  # type: ignore[assignment]
    from graphmem.cli.main import main

    main()
