"""``graphmem`` whose daemon is sent SIGTERM by itself right before its HTTP server starts, as a
``graphmem stop`` (or a supervisor) that reads the published address at once may send it: for the
test that such a daemon stops, cleanly, rather than keeping the signal from its server
(``tests/integration/test_daemon.py``). Run as ``python early_sigterm.py serve ...``."""

from __future__ import annotations

import os
import signal
from typing import Any

import uvicorn

if __name__ == "__main__":
    serve = uvicorn.Server.run

    def signalled_first(self: uvicorn.Server, *args: Any, **kwargs: Any) -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        serve(self, *args, **kwargs)

    uvicorn.Server.run = signalled_first  # type: ignore[method-assign]
    from graphmem.cli.main import main

    main()
