"""The CLI's side of ``/rpc`` with progress: it asks for the stream only with a callback,
replays each progress line in the verb's own shape, and refuses what does not fit; an export's
text and a large import's travel their own way (``RemoteMemory.SENDERS``)."""

from __future__ import annotations

import io
import json
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.accepting import Accepting

from graphmem.errors import ImportFileError, NotFoundError, StoreError
from graphmem.server import identity, remote
from graphmem.server.daemon_process import DaemonInfo
from graphmem.server.remote import RemoteMemory
from graphmem.service.results import ExportSummary

NDJSON_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: application/x-ndjson\r\ntransfer-encoding: chunked\r\n\r\n"


def chunked(*lines: Any) -> bytes:
    body = b""
    for line in lines:
        data = (line if isinstance(line, bytes) else json.dumps(line).encode()) + b"\n"
        body += f"{len(data):x}\r\n".encode() + data + b"\r\n"
    return NDJSON_HEAD + body + b"0\r\n\r\n"


def plain(answer: Any) -> bytes:
    body = json.dumps(answer).encode()
    return b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (
        len(body),
        body,
    )


TOKEN = "t" * 43
PID = 4242
CUT = b"CUT:"  # an answer that starts so: what follows it is sent, then the connection closed
HANG_UP = CUT  # the connection closed with the call unanswered


class Daemon:
    """One fake daemon on 127.0.0.1 answering each request with the next of ``answers`` (a plain
    ``{"result": 1}`` when none is left), on connections it keeps open between requests as
    uvicorn does; it proves itself on ``/identity`` like the real one, with ``token`` (a squatter
    has none). It counts the connections it accepted (``connections``), the proofs it gave
    (``identities``) and on which connection each call came (``served_on``). An answer that
    starts with ``CUT`` is sent up to there and its connection closed (``HANG_UP``: unanswered)."""

    def __init__(self, token: str | None = TOKEN) -> None:
        self.token = token
        self.pid = PID  # the pid it proves
        self.answers: list[bytes] = []
        self.requests: list[dict[str, Any]] = []
        self.received = b""  # every byte any client sent
        self.identities = 0
        self.served_on: list[int] = []
        self.accepting = Accepting(self._serve)

    def _read(self, connection: socket.socket, pending: bytes) -> tuple[bytes, bytes, bytes]:
        """(head, body, what follows) of the next request on ``connection``."""
        request = pending
        while b"\r\n\r\n" not in request:
            chunk = connection.recv(65536)
            if not chunk:
                raise OSError("closed")
            self.received += chunk
            request += chunk
        head, _, body = request.partition(b"\r\n\r\n")
        length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
        while len(body) < length:
            chunk = connection.recv(65536)
            self.received += chunk
            body += chunk
        return head, body[:length], body[length:]

    def _serve(self, connection: socket.socket, number: int) -> None:
        with connection:
            rest = b""
            while True:
                try:
                    head, body, rest = self._read(connection, rest)
                except OSError:
                    return
                if head.startswith(b"POST /identity "):
                    self.identities += 1
                    connection.sendall(self._identity(json.loads(body)["nonce"]))
                    continue
                self.requests.append(json.loads(body))
                self.served_on.append(number)
                answer = self.answers.pop(0) if self.answers else plain({"result": 1})
                if answer.startswith(CUT):
                    connection.sendall(answer[len(CUT) :])
                    return
                connection.sendall(answer)
                if b"content-length" not in answer.split(b"\r\n\r\n")[0].lower() and not answer.startswith(
                    NDJSON_HEAD
                ):
                    return  # an answer that ends with the connection

    def hang_up(self) -> None:
        """Close every connection, as the daemon closes one left idle past its keep-alive."""
        self.accepting.end()

    @property
    def connections(self) -> int:
        return self.accepting.connections

    def _identity(self, nonce: str) -> bytes:
        if self.token is None:  # a squatter: it answers what it can
            return plain({"pid": self.pid, "proof": "0" * 64, "key_proof": None})
        return plain(
            {
                "pid": self.pid,
                "proof": identity.proof(self.token, nonce, self.pid, self.port),
                "key_proof": None,
            }
        )

    @property
    def port(self) -> int:
        return self.accepting.port

    def memory(self, tmp_path: Path) -> RemoteMemory:
        (tmp_path / "daemon.token").write_text(TOKEN + "\n", "ascii")
        return RemoteMemory(DaemonInfo(PID, f"http://127.0.0.1:{self.port}", str(tmp_path), 0.0, "t"))


@pytest.fixture
def daemon() -> Iterator[Daemon]:
    running = Daemon()
    yield running
    running.accepting.close()


def test_a_callback_asks_for_progress_and_gets_each_step(daemon: Daemon, tmp_path: Path) -> None:
    daemon.answers.append(
        chunked(
            {"progress": {"done": 3, "total": None}}, {"progress": {"done": 7, "total": None}}, {"result": 7}
        )
    )
    steps: list[int] = []
    assert daemon.memory(tmp_path).reindex(progress=steps.append) == 7
    assert steps == [3, 4]  # reindex's callback takes how many more were done
    assert daemon.requests == [{"method": "reindex", "arguments": {}, "progress": True}]


def test_done_of_progress_is_replayed_as_done_and_total(daemon: Daemon, tmp_path: Path) -> None:
    daemon.answers.append(
        chunked(
            {"progress": {"done": 50, "total": 120}},
            {"progress": {"done": 120, "total": 120}},
            {"error": {"type": "NotFoundError", "message": "gone"}},
        )
    )
    seen: list[tuple[int, int]] = []
    with pytest.raises(NotFoundError, match="gone"):
        daemon.memory(tmp_path).enrich(["!1"], progress=lambda done, total: seen.append((done, total)))
    assert seen == [(50, 120), (120, 120)]  # the progress before the error still arrived
    assert daemon.requests[0]["progress"] is True and "progress" not in daemon.requests[0]["arguments"]


def test_no_callback_asks_for_the_plain_answer(daemon: Daemon, tmp_path: Path) -> None:
    daemon.answers.append(plain({"result": 4}))
    assert daemon.memory(tmp_path).reindex() == 4
    assert daemon.requests == [{"method": "reindex", "arguments": {}}]


def test_a_verb_without_progress_does_not_ask_even_with_a_callback(daemon: Daemon, tmp_path: Path) -> None:
    daemon.answers.append(plain({"result": True}))
    assert daemon.memory(tmp_path).release_item("ses_1", "#3") is True
    assert "progress" not in daemon.requests[0]


def test_a_daemon_that_does_not_stream_still_answers(daemon: Daemon, tmp_path: Path) -> None:
    daemon.answers.append(plain({"result": 2}))  # an older daemon ignores "progress"
    steps: list[int] = []
    assert daemon.memory(tmp_path).reindex(progress=steps.append) == 2
    assert steps == []


IMPORTED = {
    "records": 2,
    "memories_added": 2,
    "memories_skipped": 0,
    "entities": 0,
    "links": 0,
    "dry_run": False,
}


def test_an_import_through_the_daemon_reports_progress(daemon: Daemon, tmp_path: Path) -> None:
    summary = IMPORTED
    daemon.answers.append(chunked({"progress": {"done": 2, "total": None}}, {"result": summary}))
    steps: list[int] = []
    result = daemon.memory(tmp_path).import_text("{}\n", name="x.jsonl", progress=steps.append)
    assert result.memories_added == 2 and steps == [2]
    assert daemon.requests[0]["progress"] is True


def test_an_import_too_large_for_a_request_goes_through_a_file_the_daemon_reads(
    daemon: Daemon, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(remote, "INLINE_IMPORT_CHARS", 10)
    daemon.answers.append(plain({"result": IMPORTED}))

    result = daemon.memory(tmp_path).import_text('{"a": 1}\n' * 3, name="x.jsonl", dry_run=True)

    assert result.memories_added == 2
    [request] = daemon.requests
    staged = Path(request["arguments"].pop("path"))
    assert request == {"method": "import_file", "arguments": {"name": "x.jsonl", "dry_run": True}}
    assert staged.parent == tmp_path / "exports" and not staged.exists()  # removed once answered


def test_a_large_import_with_no_name_is_not_named_after_its_copy(
    daemon: Daemon, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(remote, "INLINE_IMPORT_CHARS", 10)
    daemon.answers.append(plain({"result": IMPORTED}))

    daemon.memory(tmp_path).import_text('{"a": 1}\n' * 3)

    assert daemon.requests[0]["arguments"]["name"] == "The export"  # as a local import names it


# A file's bytes as the CLI reads them: a byte order mark, CRLF, a character outside the BMP.
FILE_BYTES = '\ufeff{"a": "\U0001f680"}\r\n{"b": 1}\n'.encode()


def test_a_small_files_bytes_go_inline_as_its_text(daemon: Daemon, tmp_path: Path) -> None:
    daemon.answers.append(plain({"result": IMPORTED}))

    daemon.memory(tmp_path).import_text(FILE_BYTES, name="x.jsonl")

    assert daemon.requests == [
        {"method": "import_text", "arguments": {"text": FILE_BYTES.decode(), "name": "x.jsonl"}}
    ]


def test_a_small_file_that_is_not_utf8_is_refused_before_anything_is_sent(
    daemon: Daemon, tmp_path: Path
) -> None:
    with pytest.raises(ImportFileError, match=r"^x\.jsonl has 1 line") as refused:
        daemon.memory(tmp_path).import_text(FILE_BYTES + b"caf\xe9\n", name="x.jsonl")

    assert refused.value.problems == [(3, "invalid UTF-8 at byte 3: save the file as UTF-8")]
    assert daemon.requests == []


def test_a_large_files_bytes_are_handed_to_the_daemon_as_they_are(
    daemon: Daemon, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(remote, "INLINE_IMPORT_CHARS", 10)
    staged: list[bytes] = []
    monkeypatch.setattr(Path, "unlink", lambda path, missing_ok=False: staged.append(path.read_bytes()))
    daemon.answers.append(plain({"result": IMPORTED}))

    daemon.memory(tmp_path).import_text(FILE_BYTES, name="x.jsonl", dry_run=True)

    assert daemon.requests[0]["method"] == "import_file" and staged == [FILE_BYTES]


def test_an_export_writes_the_daemons_text_to_out_and_returns_the_summary(
    daemon: Daemon, tmp_path: Path
) -> None:
    daemon.answers.append(
        plain(
            {"result": {"text": '{"id": "mem_1"}\n', "summary": {"memories": 1, "entities": 0, "links": 0}}}
        )
    )
    out = io.StringIO()

    summary = daemon.memory(tmp_path).export(out, project="/src/shop")

    assert summary == ExportSummary(memories=1, entities=0, links=0)
    assert out.getvalue() == '{"id": "mem_1"}\n'
    assert daemon.requests == [{"method": "export", "arguments": {"project": "/src/shop"}}]


@pytest.mark.parametrize(
    "answer",
    [
        chunked({"progress": {"done": 1, "total": None}}),  # no result line
        chunked(b"not json"),
        chunked([1, 2]),
        chunked({"progress": {"done": -1, "total": None}}, {"result": 1}),
        chunked({"progress": {"done": "3"}}, {"result": 1}),
        chunked({"progress": {"done": True, "total": None}}, {"result": 1}),
        chunked({"progress": 5}, {"result": 1}),
    ],
    ids=["no-result", "not-json", "not-an-object", "negative", "text", "boolean", "not-a-dict"],
)
def test_a_stream_that_does_not_fit_is_a_store_error(daemon: Daemon, tmp_path: Path, answer: bytes) -> None:
    daemon.answers.append(answer)
    with pytest.raises(StoreError):
        daemon.memory(tmp_path).reindex(progress=lambda step: None)


def test_the_own_checkouts_branch_goes_with_the_verbs_that_see_branches(
    daemon: Daemon, tmp_path: Path
) -> None:
    info = daemon.memory(tmp_path).info
    memory = RemoteMemory(info, project="/src/shop", branch="feature/fees")
    daemon.answers += [plain({"result": 1}), plain({"result": 1}), plain({"result": 1})]

    for call in (
        lambda: memory.remember("Refunds keep the card fee"),
        lambda: memory.recall("card fee", project="/src/other"),  # another project: not this branch
        lambda: memory.recall("card fee", branch="main"),
    ):
        with pytest.raises(StoreError, match="does not fit"):  # the fake's answer: only the request counts
            call()

    sent = [request["arguments"] for request in daemon.requests]
    assert (sent[0]["project"], sent[0]["branch"]) == ("/src/shop", "feature/fees")
    assert "branch" not in sent[1]
    assert sent[2]["branch"] == "main"


def test_a_memory_bound_to_another_checkout_sends_its_project_and_branch(
    daemon: Daemon, tmp_path: Path
) -> None:
    opened = daemon.memory(tmp_path)
    memory = opened.bound("/src/shop", "feature/fees")
    daemon.answers.append(plain({"result": 1}))

    with pytest.raises(StoreError, match="does not fit"):  # the fake's answer: only the request counts
        memory.remember("Refunds keep the card fee")

    assert (memory.project, memory.branch, opened.project) == ("/src/shop", "feature/fees", None)
    sent = daemon.requests[0]["arguments"]
    assert (sent["project"], sent["branch"]) == ("/src/shop", "feature/fees")


def test_a_squatter_on_the_daemons_port_gets_neither_the_token_nor_the_call(tmp_path: Path) -> None:
    squatter = Daemon(token=None)
    squatter.answers.append(plain({"result": 1}))
    try:
        with pytest.raises(identity.NotTheDaemon, match="not the graphmem daemon") as refused:
            squatter.memory(tmp_path).remember("The staging password is hunter2")
    finally:
        squatter.accepting.close()
    assert "\n" not in str(refused.value)  # one line
    assert TOKEN.encode() not in squatter.received and b"hunter2" not in squatter.received
    assert squatter.requests == []


def test_a_daemon_that_names_another_pid_is_not_the_one_daemon_json_names(
    daemon: Daemon, tmp_path: Path
) -> None:
    daemon.answers.append(plain({"result": 1}))
    info = daemon.memory(tmp_path).info
    memory = RemoteMemory(DaemonInfo(PID + 1, info.url, info.data_dir, 0.0, "t"))
    with pytest.raises(identity.NotTheDaemon, match="pid 4242"):
        memory.reindex()
    assert daemon.requests == []


# -- the connection kept between calls ---------------------------------------------------------


def test_calls_share_one_connection_proven_once_until_the_memory_is_closed(
    daemon: Daemon, tmp_path: Path
) -> None:
    memory = daemon.memory(tmp_path)
    daemon.answers += [plain({"result": 1}), plain({"result": 2}), plain({"result": 3})]

    assert [memory.reindex(), memory.reindex(), memory.reindex()] == [1, 2, 3]
    memory.close()
    assert memory.reindex() == 1  # a call after close opens a new connection

    assert (daemon.connections, daemon.identities, daemon.served_on) == (2, 2, [1, 1, 1, 2])


def test_a_memory_bound_from_another_shares_its_connection(daemon: Daemon, tmp_path: Path) -> None:
    opened = daemon.memory(tmp_path)
    opened.reindex()
    opened.bound("/src/shop").reindex()
    assert (daemon.connections, daemon.identities) == (1, 1)


def test_an_idle_connection_the_daemon_closed_is_replaced_without_an_error(
    daemon: Daemon, tmp_path: Path
) -> None:
    memory = daemon.memory(tmp_path)
    memory.reindex()
    memory.reindex()
    daemon.hang_up()  # its keep-alive ran out

    assert memory.reindex() == 1
    assert (daemon.connections, daemon.identities, daemon.served_on) == (2, 2, [1, 1, 2])


def test_a_call_on_a_connection_closed_as_it_went_out_is_sent_once_more_on_a_new_one(
    daemon: Daemon, tmp_path: Path
) -> None:
    memory = daemon.memory(tmp_path)
    daemon.answers += [plain({"result": 1}), HANG_UP, plain({"result": 2})]

    assert (memory.reindex(), memory.reindex()) == (1, 2)
    assert (daemon.connections, daemon.identities, daemon.served_on) == (2, 2, [1, 1, 2])


@pytest.mark.parametrize(
    "cut",
    [
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n",
        b'HTTP/1.1 200 OK\r\ncontent-length: 40\r\ncontent-type: application/json\r\n\r\n{"res',
    ],
    ids=["in-the-head", "in-the-body"],
)
def test_a_call_whose_answer_began_is_never_sent_again(daemon: Daemon, tmp_path: Path, cut: bytes) -> None:
    memory = daemon.memory(tmp_path)
    daemon.answers += [plain({"result": 1}), CUT + cut]
    memory.reindex()

    with pytest.raises(StoreError, match="did not answer"):
        memory.reindex()  # the daemon may have made the call: it is not made twice
    assert daemon.served_on == [1, 1]
    assert memory.reindex() == 1  # and the next call connects again
    assert daemon.connections == 2


def test_a_streamed_answer_read_to_its_result_leaves_its_connection_to_no_other_call(
    daemon: Daemon, tmp_path: Path
) -> None:
    memory = daemon.memory(tmp_path)
    unended = chunked({"progress": {"done": 3, "total": None}}, {"result": 3})[: -len(b"0\r\n\r\n")]
    daemon.answers += [plain({"result": 1}), unended, plain({"result": 2})]
    steps: list[int] = []

    assert memory.reindex() == 1
    assert memory.reindex(progress=steps.append) == 3  # its last chunk never comes
    assert memory.reindex() == 2
    assert steps == [3] and daemon.served_on == [1, 1, 2]


def test_each_thread_calls_on_a_connection_of_its_own(daemon: Daemon, tmp_path: Path) -> None:
    memory = daemon.memory(tmp_path)
    together = threading.Barrier(2)
    answers: list[int] = []

    def calls() -> None:
        together.wait(10)
        answers.extend([memory.reindex(), memory.reindex()])

    threads = [threading.Thread(target=calls) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert answers == [1, 1, 1, 1]
    assert (daemon.connections, daemon.identities, sorted(daemon.served_on)) == (2, 2, [1, 1, 2, 2])


def test_a_forked_child_calls_on_its_own_connection_and_leaves_its_parents_open(
    daemon: Daemon, tmp_path: Path
) -> None:
    memory = daemon.memory(tmp_path)
    daemon.answers += [plain({"result": 1}), plain({"result": 2}), plain({"result": 3})]
    memory.reindex()

    child = os.fork()
    if child == 0:  # pragma: no cover - the child's exit code says what it saw
        try:
            code = 0 if memory.reindex() == 2 else 1
        except BaseException:
            code = 2
        os._exit(code)
    _, status = os.waitpid(child, 0)

    assert os.waitstatus_to_exitcode(status) == 0
    assert memory.reindex() == 3
    assert (daemon.connections, daemon.served_on) == (2, [1, 2, 1])


def test_a_daemon_restarted_on_another_pid_fails_the_proof_on_the_new_connection(
    daemon: Daemon, tmp_path: Path
) -> None:
    memory = daemon.memory(tmp_path)
    memory.reindex()
    memory.reindex()
    daemon.hang_up()
    daemon.pid = PID + 1  # the daemon daemon.json named has gone; another one answers

    with pytest.raises(identity.NotTheDaemon, match="pid 4242"):
        memory.reindex()
    assert daemon.served_on == [1, 1]


def test_a_new_token_is_proven_on_a_new_connection(daemon: Daemon, tmp_path: Path) -> None:
    memory = daemon.memory(tmp_path)
    memory.reindex()
    daemon.token = "n" * 43
    (tmp_path / "daemon.token").write_text(daemon.token + "\n", "ascii")  # read at each call

    memory.reindex()
    memory.reindex()

    assert (daemon.connections, daemon.identities, daemon.served_on) == (2, 2, [1, 2, 2])
    assert f"Bearer {daemon.token}".encode() in daemon.received
