"""A ``/rpc`` body that is JSON but no object is refused with what it is and the shape to send,
not only "unknown method" (the caller sent no method at all)."""

from __future__ import annotations

from typing import Any

import pytest

from graphmem.errors import InvalidInputError
from graphmem.server import rpc


@pytest.mark.parametrize(
    ("body", "kind"),
    [([1, 2], "array"), ("remember", "string"), (None, "null"), (3, "number"), (True, "boolean")],
)
def test_a_body_that_is_no_object_says_what_it_is_and_what_to_send(body: Any, kind: str) -> None:
    with pytest.raises(InvalidInputError) as raised:
        rpc.parse(body)

    message = str(raised.value)
    assert message.startswith(f"Unknown method: the body is a JSON {kind}; send an object")
    assert '{"method": NAME, "arguments": {...}}' in message and "recall" in message


def test_an_unknown_method_in_an_object_still_lists_the_methods() -> None:
    with pytest.raises(InvalidInputError, match=r"^Unknown method; use one of: .*recall"):
        rpc.parse({"method": "drop_everything"})
