"""The compact map of memory ids to numbers: a sorted base and the changes since, as a dict."""

from __future__ import annotations

import numpy as np
import pytest

from graphmem.adapters import id_map
from graphmem.adapters.id_map import IdMap


@pytest.fixture(autouse=True)
def _small_merges(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(id_map, "MERGE_MIN", 3)


def test_it_answers_as_a_dict_through_sets_pops_and_merges() -> None:
    ids = IdMap.of(["b", "a", "c", "a"])  # the last "a" wins
    expected = {"b": 0, "a": 3, "c": 2}
    assert dict(zip(ids.keys(), map(ids.get, ids.keys()), strict=True)) == expected
    steps = [("set", "d", 7), ("pop", "a", 0), ("set", "b", 9), ("set", "mem_0123456789abcdef", 4)]
    steps += [("pop", "zz", 0), ("set", "a", 11), ("pop", "d", 0), ("set", "e", 1), ("set", "f", 2)]
    for action, key, number in steps:
        if action == "set":
            ids.set(key, number)
            expected[key] = number
        else:
            assert ids.pop(key) == expected.pop(key, None)
        assert len(ids) == len(expected) and sorted(ids.keys()) == sorted(expected)
        assert all(ids.get(k) == v and k in ids for k, v in expected.items())
        assert "zz" not in ids and ids.get("zz") is None
    wanted = ["f", "nope", "mem_0123456789abcdef", "b"]
    assert ids.get_many(wanted).tolist() == [expected.get(k, -1) for k in wanted]
    keys, numbers = ids.arrays()
    assert keys.tolist() == sorted(k.encode() for k in expected)
    assert dict(zip([k.decode() for k in keys.tolist()], numbers.tolist(), strict=True)) == expected
    again = IdMap.from_sorted(keys, numbers)
    assert all(again.get(k) == v for k, v in expected.items()) and len(again) == len(expected)


def test_ids_wider_than_the_base_are_found_and_merged() -> None:
    ids = IdMap.of(["ab"])
    ids.update([("a-much-longer-id", 5), ("x", 6), ("y", 7), ("z", 8)])  # past MERGE_MIN: merged
    assert ids.get("a-much-longer-id") == 5 and ids.get("ab") == 0 and ids.get("a-much") is None
    assert ids.get_many(["a-much-longer-id", "ab", "zz"]).tolist() == [5, 0, -1]
    assert np.asarray(ids.numbers()).tolist() == [5, 0, 6, 7, 8]


def test_two_maps_of_the_same_ids_hold_one_array_of_them_and_change_apart(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(id_map, "SHARED_FROM", 4)
    ids = [f"mem_{i:016x}" for i in range(8)]
    rows = IdMap.of(ids)  # the vector index's rows
    records = IdMap.from_arrays(id_map.encoded(ids[::-1]), np.arange(8, dtype=np.int64))  # the file's
    other = IdMap.of(ids[:7])  # other ids: their own array
    assert rows.arrays()[0] is records.arrays()[0] and other.arrays()[0] is not rows.arrays()[0]
    records.pop(ids[0])
    records.set("mem_new", 9)
    records.arrays()  # merged: a new array of its own
    assert rows.get(ids[0]) == 0 and "mem_new" not in rows and records.get(ids[7]) == 0
    assert sorted(rows.keys()) == ids
