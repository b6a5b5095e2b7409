"""What Ctrl-C does to a command: it ends the command, wherever in the process it lands.

Python raises ``KeyboardInterrupt`` wherever the main thread is when SIGINT arrives. Inside a
finalizer (a ``__del__`` such as Kùzu's ``QueryResult.__del__``, or a weak reference's callback
such as the one CPython runs after each import) nothing can catch it: the interpreter prints
"Exception ignored in: ..." with a traceback, and the command goes on as if no key was
pressed. So there, the notice is not printed, and the command sends itself SIGINT again once
the finalizer is done (from a thread of its own: sent from the finalizer, it would be raised in
it again). It lands in the command's own code, or in another finalizer and is sent again, and
the command ends as an interrupted command does.

Once a Ctrl-C was given, what finalizers raise while the command unwinds (an object the
interrupt cut short in its ``__init__``) goes to the debug log (``-vv``), not to the terminal.
Where the lost interrupt also left CPython's import lock held, see
``adapters/embedders._raise_a_swallowed_interrupt``.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from types import FrameType
from typing import Any

_interrupted = False
# How often the thread that sends SIGINT again looks whether the main thread has left the hook,
# and how many times at most (then it sends it anyway).
_LEFT_HOOK_POLL_S = 0.001
_LEFT_HOOK_POLLS = 2000


def install() -> None:
    """Handle Ctrl-C so for the rest of this process; a process started with SIGINT ignored (a
    job a shell put in the background) keeps ignoring it. Call it from the main thread."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupt)
    sys.unraisablehook = _unraisable


def _interrupt(signum: int, frame: FrameType | None) -> None:
    global _interrupted
    _interrupted = True
    raise KeyboardInterrupt


def _unraisable(unraisable: Any) -> None:
    """``sys.unraisablehook``: an exception a finalizer raised, which nothing could catch."""
    if unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
        # No new thread while the interpreter shuts down (RuntimeError): it is ending anyway.
        with contextlib.suppress(RuntimeError):
            threading.Thread(target=_ask_again, name="graphmem-interrupt", daemon=True).start()
        return
    if _interrupted:
        import logging

        logging.getLogger(__name__).debug(
            "after Ctrl-C, in %r", unraisable.object,
            exc_info=(unraisable.exc_type, unraisable.exc_value, None),
        )  # fmt: skip
        return
    sys.__unraisablehook__(unraisable)


def _ask_again() -> None:
    """Send the main thread SIGINT again once it has left ``_unraisable``."""
    main = threading.main_thread().ident
    for _ in range(_LEFT_HOOK_POLLS):
        frame = sys._current_frames().get(main or 0)
        while frame is not None and frame.f_code is not _unraisable.__code__:
            frame = frame.f_back
        if frame is None:
            break
        time.sleep(_LEFT_HOOK_POLL_S)
    if main is not None:
        signal.pthread_kill(main, signal.SIGINT)  # a signal, not a flag: it wakes a blocked wait too
