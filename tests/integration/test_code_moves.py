"""Re-scans keep memories on code that moved: a real git repository in a temp dir, bootstrapped,
changed (a rename, a move, `git mv`), bootstrapped again; on Kùzu and on the in-memory store."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.memory_service import in_memory_service

from graphmem.adapters.embedders import HashEmbedder
from graphmem.app import open_memory
from graphmem.service.memory import MemoryService
from graphmem.settings import load_settings

DISCOUNT = '''def {name}(order, percent):
    """Take ``percent`` off every line of the order."""
    if not 0 <= percent <= 100:
        raise ValueError("percent must be between 0 and 100")
    for line in order.lines:
        line.price = round(line.price * (100 - percent) / 100, 2)
    return order
'''
REWRITTEN = """def {name}(customer, coupons):
    best = None
    for coupon in coupons:
        if coupon.owner == customer.id and (best is None or coupon.value > best.value):
            best = coupon
    return best.code if best else ""
"""
SHIPPING = """def ship_cost(order):
    weight = sum(line.weight for line in order.lines)
    return 4.5 if weight < 2 else 4.5 + (weight - 2) * 1.25
"""
MONEY = """def format_money(value):
    sign = "-" if value < 0 else ""
    return f"{sign}${abs(value):,.2f}"


def parse_money(text):
    return float(text.replace("$", "").replace(",", ""))
"""


class Repo:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.env = {
            **os.environ,
            "GIT_AUTHOR_NAME": "Ana",
            "GIT_AUTHOR_EMAIL": "ana@example.com",
            "GIT_COMMITTER_NAME": "Ana",
            "GIT_COMMITTER_EMAIL": "ana@example.com",
            "GIT_CONFIG_NOSYSTEM": "1",
            "HOME": str(root.parent),
        }
        root.mkdir()
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str | bytes) -> None:
        subprocess.run(["git", *args], cwd=self.root, env=self.env, check=True, capture_output=True)

    def write(self, files: dict[str, str]) -> None:
        for name, text in files.items():
            (self.root / name).parent.mkdir(parents=True, exist_ok=True)
            (self.root / name).write_text(text, "utf-8")

    def commit(self, message: str) -> None:
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    repo = Repo(tmp_path / "shop")
    repo.write(
        {
            "src/pricing.py": DISCOUNT.format(name="apply_discount") + "\n\n" + SHIPPING,
            "src/util.py": MONEY,
        }
    )
    repo.commit("Create the shop")
    return repo


@pytest.fixture(params=["kuzu", "memory"])
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryService]:
    if request.param == "kuzu":
        service = open_memory(load_settings(data_dir=tmp_path / "data"), embedder=HashEmbedder(64))
    else:
        service = in_memory_service(tmp_path / "data")
    yield service
    service.close()


def decide(memory: MemoryService, repo: Repo, text: str) -> str:
    note = memory.remember(text, category="decision", project=str(repo.root))
    assert note.entities, "the decision names a symbol of the bootstrapped code"
    return note.memory.id


def about(memory: MemoryService, memory_id: str) -> set[str]:
    """The code a memory is about: ``path::qualified name`` of its symbols, ``path`` of its files."""
    return {
        e.key.split("::", 1)[1] if e.key.startswith("Symbol:") else e.name
        for e in memory.show(memory_id).entities
        if e.key.startswith(("Symbol:", "File:"))
    }


def context(memory: MemoryService, repo: Repo, target: str) -> str:
    return memory.get_context(target, project=str(repo.root), max_tokens=4000).markdown


def test_a_renamed_function_keeps_its_memories_and_is_not_stale(memory: MemoryService, repo: Repo) -> None:
    memory.bootstrap(repo.root)
    note = decide(memory, repo, "`apply_discount` rounds each line to cents, never the total")
    repo.write({"src/pricing.py": DISCOUNT.format(name="discount_order") + "\n\n" + SHIPPING})
    repo.commit("Rename apply_discount to discount_order")

    report = memory.bootstrap(repo.root)

    assert about(memory, note) == {"src/pricing.py::discount_order"}

    assert report.moved_symbols == 1 and report.memories_moved >= 2  # the decision and the commit
    assert "`apply_discount` → `discount_order` in src/pricing.py (renamed, same body)" in report.moves[0]
    bundle = context(memory, repo, "discount_order")
    assert "rounds each line to cents" in bundle
    assert "Create the shop" in bundle  # the commit that wrote it, linked by blame, follows too
    assert "stale" not in bundle and "no longer exists" not in bundle
    hits = memory.recall("how are discounts rounded in `discount_order`", project=str(repo.root)).hits
    decision = next(h for h in hits if "rounds each line" in h.memory.text)
    assert decision.memory.stale is None


def test_a_function_moved_to_another_file_keeps_its_memories(memory: MemoryService, repo: Repo) -> None:
    memory.bootstrap(repo.root)
    note = decide(memory, repo, "`format_money` puts the sign before the currency symbol")
    repo.write({"src/util.py": MONEY.split("\n\n\n")[1], "src/money.py": MONEY.split("\n\n\n")[0] + "\n"})
    repo.commit("Move format_money to its own module")

    report = memory.bootstrap(repo.root)

    assert any("src/util.py → src/money.py (moved, same body)" in line for line in report.moves)
    assert about(memory, note) == {"src/money.py::format_money"}
    assert "sign before the currency symbol" in context(memory, repo, "src/money.py::format_money")


def test_a_file_git_renamed_keeps_its_file_and_symbol_memories(memory: MemoryService, repo: Repo) -> None:
    memory.bootstrap(repo.root)
    note = decide(memory, repo, "`parse_money` accepts thousands separators")
    repo.git("mv", "src/util.py", "src/currency.py")
    with (repo.root / "src/currency.py").open("a", encoding="utf-8") as file:
        file.write("\n\nCENTS = 100\n")  # not the same bytes: only git's rename detection sees the move
    repo.commit("Rename util to currency")

    report = memory.bootstrap(repo.root)

    assert report.moved_files == 1
    assert any(line.startswith("src/util.py → src/currency.py (file renamed)") for line in report.moves)
    about_file = context(memory, repo, "src/currency.py")
    assert "Create the shop" in about_file  # a commit memory about the file, by path
    assert "no longer exists" not in about_file
    assert about(memory, note) == {"src/currency.py::parse_money"}
    assert "thousands separators" in context(memory, repo, "src/currency.py::parse_money")


def test_a_staged_git_mv_is_seen_before_it_is_committed(memory: MemoryService, repo: Repo) -> None:
    memory.bootstrap(repo.root)
    repo.git("mv", "src/util.py", "src/currency.py")
    (repo.root / "src/currency.py").write_text(MONEY + "\n\nCENTS = 100\n", "utf-8")

    report = memory.bootstrap(repo.root)

    assert report.moved_files == 1
    assert "Create the shop" in context(memory, repo, "src/currency.py")


def test_a_rename_with_a_small_edit_carries_and_flags_the_memories(memory: MemoryService, repo: Repo) -> None:
    memory.bootstrap(repo.root)
    note = decide(memory, repo, "`apply_discount` rounds each line to cents, never the total")
    edited = DISCOUNT.format(name="discount_order").replace("round(line.price", "round(line.unit_price")
    repo.write({"src/pricing.py": edited + "\n\n" + SHIPPING})
    repo.commit("Rename apply_discount and use the unit price")

    report = memory.bootstrap(repo.root)

    assert about(memory, note) == {"src/pricing.py::discount_order"}
    assert "alike" in report.moves[0] and "same body" not in report.moves[0]
    assert "possibly stale: discount_order changed on" in context(memory, repo, "discount_order")


def test_a_rename_with_a_rewritten_body_does_not_carry(memory: MemoryService, repo: Repo) -> None:
    memory.bootstrap(repo.root)
    note = decide(memory, repo, "`apply_discount` rounds each line to cents, never the total")
    repo.write({"src/pricing.py": REWRITTEN.format(name="best_coupon") + "\n\n" + SHIPPING})
    repo.commit("Pick the best coupon instead")

    report = memory.bootstrap(repo.root)

    assert report.moved_symbols == 0 and report.memories_moved == 0
    assert about(memory, note) == {"src/pricing.py::apply_discount"}
    assert "no longer exists" in context(memory, repo, "apply_discount")


def test_two_alike_candidates_are_left_alone(memory: MemoryService, repo: Repo) -> None:
    memory.bootstrap(repo.root)
    note = decide(memory, repo, "`apply_discount` rounds each line to cents, never the total")
    two = DISCOUNT.format(name="discount_order") + "\n\n" + DISCOUNT.format(name="discount_cart")
    repo.write({"src/pricing.py": two + "\n\n" + SHIPPING})
    repo.commit("Split discounts for orders and carts")

    report = memory.bootstrap(repo.root)

    assert report.moved_symbols == 0 and report.ambiguous_moves == 1
    assert any("`apply_discount` in src/pricing.py: several alike" in line for line in report.moves)
    assert about(memory, note) == {"src/pricing.py::apply_discount"}
    assert "no longer exists" in context(memory, repo, "apply_discount")


def test_huge_binary_and_non_utf8_files_do_not_break_a_rescan_that_moves(
    memory: MemoryService, repo: Repo
) -> None:
    weird = os.path.join(os.fsencode(repo.root), b"src", b"caf\xe9.py")
    with open(weird, "wb") as file:
        file.write(b"def cafe():\n    return 1\n")
    (repo.root / "src/blob.py").write_bytes(b"\x00\x01\x02" * 1000)
    (repo.root / "src/huge.py").write_text("VALUES = [\n" + "    1,\n" * 400_000 + "]\n", "utf-8")
    repo.commit("Add odd files")
    memory.bootstrap(repo.root)
    note = decide(memory, repo, "`apply_discount` rounds each line to cents, never the total")
    repo.git("mv", b"src/caf\xe9.py", b"src/caf\xe9s.py")
    repo.git("mv", "src/blob.py", "src/blob2.py")
    repo.git("mv", "src/huge.py", "src/huge2.py")
    repo.write({"src/pricing.py": DISCOUNT.format(name="discount_order") + "\n\n" + SHIPPING})
    repo.commit("Rename everything")

    report = memory.bootstrap(repo.root)

    assert report.moved_symbols == 1
    assert about(memory, note) == {"src/pricing.py::discount_order"}
