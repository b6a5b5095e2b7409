"""graphmem ui's sign-in: a code opens one session once, before it expires; idle sessions end."""

from __future__ import annotations

from graphmem.server.ui_sessions import CODE_TTL_S, MAX_CODES, MAX_SESSIONS, SESSION_IDLE_S, UiSessions


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_code_opens_one_session_once() -> None:
    sessions = UiSessions()
    code = sessions.new_code()
    session = sessions.open(code)
    assert session is not None and sessions.valid(session)
    assert sessions.open(code) is None


def test_a_code_expires() -> None:
    clock = Clock()
    sessions = UiSessions(clock)
    code = sessions.new_code()
    clock.now += CODE_TTL_S
    assert sessions.open(code) is None


def test_a_wrong_code_or_session_is_refused() -> None:
    sessions = UiSessions()
    sessions.new_code()
    assert sessions.open("guess") is None
    assert sessions.open("") is None
    assert not sessions.valid(b"guess")
    assert not sessions.valid("\udcff")


def test_an_idle_session_ends_and_a_used_one_stays() -> None:
    clock = Clock()
    sessions = UiSessions(clock)
    used, idle = sessions.open(sessions.new_code()), sessions.open(sessions.new_code())
    assert used is not None and idle is not None
    clock.now += SESSION_IDLE_S * 0.6
    assert sessions.valid(used)
    clock.now += SESSION_IDLE_S * 0.6
    assert sessions.valid(used) and not sessions.valid(idle)


def test_signing_out_ends_the_session() -> None:
    sessions = UiSessions()
    session = sessions.open(sessions.new_code())
    assert session is not None and sessions.close(session)
    assert not sessions.valid(session) and not sessions.close(session)


def test_codes_and_sessions_are_bounded() -> None:
    sessions = UiSessions()
    codes = [sessions.new_code() for _ in range(MAX_CODES + 5)]
    assert sessions.open(codes[0]) is None  # the oldest went first
    opened = [sessions.open(sessions.new_code()) for _ in range(MAX_SESSIONS + 1)]
    assert opened[0] is not None and not sessions.valid(opened[0])
    assert opened[-1] is not None and sessions.valid(opened[-1])
