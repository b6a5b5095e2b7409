"""The CLI's side of ``/rpc``: the Memory service of a running daemon, called like the local one."""

from __future__ import annotations

import functools
import inspect
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, Concatenate, Generic, ParamSpec, TextIO, TypeVar, overload
from urllib.parse import urlsplit

from graphmem import errors
from graphmem.api import Bound, Memory
from graphmem.server import loopback, rpc_types
from graphmem.server.daemon_process import DaemonInfo, read_token
from graphmem.server.verbs import VERBS, Binding, Owner

TIMEOUT_S = 3600.0  # imports of large files take a while
MAX_LINE = 64 * 1024 * 1024  # bytes of one line of a streamed answer (the last is the result)
# Largest import text sent in the request body (the daemon's default limit is 2,000,000 bytes).
INLINE_IMPORT_CHARS = 1_500_000


P = ParamSpec("P")
R = TypeVar("R")
Send = Callable[["RemoteMemory", str, dict[str, Any]], Any]


class RemoteVerb(Generic[P, R]):
    """A verb of ``RemoteMemory``, with the signature and doc ``Memory`` declares for it (for
    ``inspect`` and ``help``; mypy reads the protocol's own): ``RemoteVerb(Memory.recall)``
    sends each call to the daemon (``RemoteMemory.forward``), or through ``send`` for a verb
    whose arguments or answer do not travel as they are. ``with_table_verbs`` makes them."""

    def __init__(self, declared: Callable[Concatenate[Any, P], R], send: Send | None = None) -> None:
        self.name = declared.__name__
        self.__doc__ = declared.__doc__
        self._declared = declared
        self._send = send

    @functools.cached_property
    def signature(self) -> inspect.Signature:
        """``declared``'s signature without its ``self`` (a bound method's); worked out when a
        call first asks (a CLI call uses one verb of the forty)."""
        signature = inspect.signature(self._declared)
        return signature.replace(parameters=tuple(signature.parameters.values())[1:])

    @overload
    def __get__(self, remote: None, owner: type[object]) -> RemoteVerb[P, R]: ...

    @overload
    def __get__(self, remote: RemoteMemory, owner: type[object]) -> Callable[P, R]: ...

    def __get__(self, remote: RemoteMemory | None, owner: type[object]) -> RemoteVerb[P, R] | Callable[P, R]:
        if remote is None:
            return self
        name, send = self.name, self._send

        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            answer: R = remote.forward(name, args, kwargs, send)
            return answer

        call.__name__ = call.__qualname__ = name
        call.__doc__ = self.__doc__
        vars(call)["__signature__"] = self.signature
        return call


def with_table_verbs(remote: type[RemoteMemory]) -> type[RemoteMemory]:
    """``remote`` with a ``RemoteVerb`` for each verb of the table (``server/verbs.py``) that
    ``/rpc`` serves and ``Memory`` declares, sent by ``forward`` (through the sender
    ``remote.SENDERS`` names for it, if any): a new verb needs no line here."""
    for verb in VERBS.values():
        declared = vars(Memory).get(verb.name)
        if verb.rpc and verb.owner is Owner.MEMORY and declared is not None:
            setattr(remote, verb.name, RemoteVerb(declared, remote.SENDERS.get(verb.name)))
    return remote


@with_table_verbs
class RemoteMemory(Bound, Memory):
    """The Memory protocol (``graphmem/api.py``) through the daemon that owns the store.

    Its verbs are made from the table (``with_table_verbs``), which mypy does not see: it takes
    the class for abstract, hence the ``type: ignore[abstract]`` where one is built."""

    def __init__(
        self,
        info: DaemonInfo,
        api_key: str | None = None,
        *,
        project: str | None = None,
        branch: str | None = None,
        connections: loopback.ThreadConnections | None = None,
    ) -> None:
        super().__init__(project, branch)
        self.info = info
        self.data_dir = Path(info.data_dir)
        self._api_key = api_key
        target = urlsplit(info.url)
        self._host, self._port = target.hostname or "127.0.0.1", target.port or 80
        self._connections = connections or loopback.ThreadConnections(TIMEOUT_S)

    def _call(self, method: str, progress: Callable[..., None] | None = None, **arguments: Any) -> Any:
        """Run ``method`` on the daemon; with a ``progress`` callback (for a verb that reports
        progress), the daemon streams it and the callback is called here as the verb goes."""
        request: dict[str, Any] = {"method": method, "arguments": rpc_types.encode_arguments(arguments)}
        shape = rpc_types.VERBS[method].progress
        replay = _Replay(shape, progress) if progress is not None and shape is not None else None
        if replay is not None:
            request["progress"] = True
        headers = {"Content-Type": "application/json"}
        secret = read_token(self.data_dir) or self._api_key  # the token file is the user's own
        if not secret:
            raise errors.StoreError(
                f"No daemon.token in {self.data_dir} and no GRAPHMEM_API_KEY: nothing to prove the "
                f"daemon at {self.info.url} is graphmem's. Stop it with `graphmem stop` and try again."
            )
        headers["Authorization"] = f"Bearer {secret}"
        expected = loopback.Expected(secret, self.info.pid, self.info.url)
        try:
            status, raw = self._exchange(json.dumps(request).encode(), headers, replay, expected)
        except (OSError, ValueError) as exc:
            raise errors.StoreError(
                f"The graphmem daemon at {self.info.url} (pid {self.info.pid}) holds the store but did "
                f"not answer ({exc}). Stop it with `graphmem stop` and try again."
            ) from exc
        try:
            answer = json.loads(raw)
        except ValueError:
            raise errors.StoreError(f"The daemon answered HTTP {status} with no JSON.") from None
        if status != 200 and not isinstance(answer.get("error"), dict):
            raise errors.StoreError(f"The daemon refused the call (HTTP {status}): {answer.get('error')}")
        if "error" in answer:
            problem = answer["error"]
            kind = getattr(errors, str(problem.get("type")), errors.GraphmemError)
            if not (isinstance(kind, type) and issubclass(kind, errors.GraphmemError)):
                kind = errors.GraphmemError
            if kind is errors.ImportFileError:
                raise errors.ImportFileError(
                    problem["message"], [tuple(p) for p in problem.get("problems", [])]
                )
            raise kind(problem["message"])
        return rpc_types.decode_result(method, answer["result"])

    def _exchange(
        self, body: bytes, headers: dict[str, str], replay: _Replay | None, expected: loopback.Expected
    ) -> tuple[int, bytes]:
        """The status and the answer, on this thread's connection, proven to be the daemon
        ``daemon.json`` names; a streamed answer's progress lines go to ``replay`` as they
        arrive, and its last line is the answer."""
        connection = self._connections.own(self._host, self._port)
        with connection.post("/rpc", body, headers, expected) as answer:
            if replay is None or answer.media_type != rpc_types.NDJSON:
                return answer.status, answer.read()  # a refusal, or a daemon that does not stream
            for line in answer.lines(MAX_LINE):
                event = _event(line)
                if "progress" not in event:
                    return answer.status, line
                replay(event["progress"])
        raise loopback.LoopbackError("the streamed answer ended before its result")

    def forward(
        self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any], send: Send | None = None
    ) -> Any:
        """``method`` called with ``args`` and ``kwargs`` as ``Memory.<method>`` binds them (the
        daemon checks names and values), with this memory's project and branch when the verb
        uses them and the call names none; ``send``: how, when not as they are (``_send``)."""
        arguments = _bind(method, args, kwargs)
        binds = rpc_types.VERBS[method].binds
        if binds is not Binding.NONE and arguments.get("project") is None:
            arguments["project"] = self.project
            if binds is Binding.BRANCH and arguments.get("branch") is None and self.branch:
                arguments["branch"] = self.branch
        return (send or RemoteMemory._send)(self, method, arguments)

    def _send(self, method: str, arguments: dict[str, Any]) -> Any:
        """The call, its local ``progress`` callback replaying what the daemon streams."""
        progress = arguments.get("progress")
        sent = {k: v for k, v in arguments.items() if k not in rpc_types.LOCAL_ONLY}
        return self._call(method, progress, **sent)

    def _send_export(self, method: str, arguments: dict[str, Any]) -> Any:
        """``export``: the daemon answers the text beside the summary; the text goes to ``out``."""
        out: TextIO = arguments.pop("out")
        answer = self._call(method, **arguments)
        out.write(answer["text"])
        from graphmem.service.results import ExportSummary  # here: the other verbs' calls do not need it

        return rpc_types.decode(ExportSummary, answer["summary"])

    def _send_import_text(self, method: str, arguments: dict[str, Any]) -> Any:
        """Inline when the request stays small; a larger text goes through a file in the daemon's
        export folder (request bodies are limited), which its ``import_file`` reads under the
        text's own ``name``: the copy is how the text travels, never where the memories came
        from, nor what an error names. A file's bytes (the CLI's) are written as they are, never
        decoded whole: JSON takes at least a character a byte, so only a file as short as an
        inline text is decoded to go inline."""
        progress = arguments.pop("progress", None)
        text: str | bytes = arguments.pop("text")
        if isinstance(text, bytes) and len(text) <= INLINE_IMPORT_CHARS:
            from graphmem.service.file_access import decode_export  # a file's: the CLI has it loaded

            text = decode_export(text, str(arguments.get("name", "The export")))
        if isinstance(text, str) and len(json.dumps(text)) <= INLINE_IMPORT_CHARS:
            return self._call(method, progress, text=text, **arguments)
        arguments.setdefault("name", "The export")  # ``import_text``'s: never the copy's path
        exports = self.data_dir / "exports"
        exports.mkdir(parents=True, exist_ok=True, mode=0o700)
        staged = exports / f".import-{uuid.uuid4().hex}.jsonl"
        try:
            if isinstance(text, bytes):
                staged.write_bytes(text)
            else:
                staged.write_text(text, "utf-8")
            return self._call("import_file", progress, path=staged, **arguments)
        except OSError as exc:
            raise errors.InvalidInputError(
                f"Cannot hand the file to the daemon through {exports}: {exc}."
            ) from None
        finally:
            staged.unlink(missing_ok=True)

    # The verbs whose arguments or answer do not travel as they are, and how each is sent.
    SENDERS: ClassVar[dict[str, Send]] = {"export": _send_export, "import_text": _send_import_text}

    def bound(self, project: str | None, branch: str | None = None) -> RemoteMemory:
        """This memory for the checkout of ``project`` on ``branch``, through the same daemon
        and on the same connections (as ``MemoryService.bound``: a new value, the same parts)."""
        return RemoteMemory(  # type: ignore[abstract]
            self.info, self._api_key, project=project, branch=branch, connections=self._connections
        )

    def warm_up(self) -> None:
        """The daemon has its model loaded (or loading) already."""

    @property
    def embeds_on_read(self) -> bool:
        """The daemon's worker embeds what waits for its vector."""
        return False

    def close(self) -> None:
        """Close the connections to the daemon (once no call is in flight), this memory's and
        those of the memories ``bound`` made from it; a later call opens a new one."""
        self._connections.close()


class _Replay:
    """Calls a verb's local ``progress`` callback with what the daemon streams, in the
    verb's own shape (``rpc_types.PROGRESS_SHAPES``)."""

    def __init__(self, shape: str, callback: Callable[..., None]) -> None:
        self.shape = shape
        self.callback = callback
        self.done = 0

    def __call__(self, progress: Any) -> None:
        fields = progress if isinstance(progress, dict) else {}
        done, total = fields.get("done"), fields.get("total")
        if not isinstance(done, int) or not _count(done) or not (total is None or _count(total)):
            raise errors.StoreError(
                f"The daemon's progress {str(progress)[:80]!r} does not fit this graphmem; a daemon "
                "of another version? Restart it with `graphmem stop` and try again."
            )
        if self.shape == rpc_types.STEPS:
            step, self.done = done - self.done, done
            if step > 0:
                self.callback(step)
        elif self.shape == rpc_types.DONE:
            self.callback(done)
        else:
            self.callback(done, done if total is None else total)


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _event(line: bytes) -> dict[str, Any]:
    """One line of a streamed answer: a JSON object."""
    try:
        event = json.loads(line)
    except ValueError:
        event = None
    if not isinstance(event, dict):
        raise errors.StoreError(f"The daemon streamed a line that is not a JSON object: {line[:80]!r}.")
    return event


def _bind(method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """A call's arguments by name, as ``MemoryService.<method>`` would bind them (those that
    stay in this process, a progress callback, included); the daemon checks the names and
    values (an unknown or missing one is an ``InvalidInputError``)."""
    positional = rpc_types.VERBS[method].positional
    if len(args) > len(positional):
        raise TypeError(
            f"{method}() takes {len(positional)} positional argument(s) but {len(args)} were given"
        )
    bound = dict(zip(positional, args, strict=False))
    twice = sorted(bound.keys() & kwargs.keys())
    if twice:
        raise TypeError(f"{method}() got multiple values for argument {twice[0]!r}")
    return {**bound, **kwargs}
