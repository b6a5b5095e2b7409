"""Text that is not UTF-8 (a command line's undecodable bytes) is refused by the CLI's side of
``/rpc`` as the service refuses it, naming the argument: never sent, so never the guard's
refusal of the whole body (HTTP 400, exit 5) that a user cannot act on."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from graphmem.errors import InvalidInputError
from graphmem.server import rpc_types

UNDECODABLE = os.fsdecode(b"bad\xff\xfe")  # what argv holds for those bytes


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({"text": UNDECODABLE, "category": "fact"}, r"The text is not valid UTF-8 \(at character 3\)"),
        ({"query": UNDECODABLE}, r"The query is not valid UTF-8 \(at character 3\)"),
        ({"path": Path("/tmp") / UNDECODABLE}, r"The path is not valid UTF-8 \(at character 8\)"),
        ({"refs": ("!1", UNDECODABLE)}, r"The refs\[1\] is not valid UTF-8"),
    ],
)
def test_text_that_is_not_utf8_is_refused_naming_the_argument(
    arguments: dict[str, object], says: str
) -> None:
    with pytest.raises(InvalidInputError, match=says) as raised:
        rpc_types.encode_arguments(arguments)

    assert raised.value.exit_code == 2
    assert str(raised.value).endswith("pass UTF-8 text.")


def test_utf8_text_beyond_ascii_and_the_bmp_still_encodes() -> None:
    arguments = {"text": "Kùzu 🚀", "refs": ["!1"], "path": Path("/tmp/é")}

    encoded = rpc_types.encode_arguments(arguments)

    assert json.loads(json.dumps(encoded)) == {"text": "Kùzu 🚀", "refs": ["!1"], "path": "/tmp/é"}
