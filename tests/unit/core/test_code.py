"""Which parser language a file path gets."""

from __future__ import annotations

import pytest

from graphmem.core.code import LANGUAGE_BY_EXTENSION, LANGUAGES, language_for


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("payments/refund.py", "python"),
        ("stubs/refund.pyi", "python"),
        ("src/refund.ts", "typescript"),
        ("src/refund.mts", "typescript"),
        ("src/refund.cts", "typescript"),
        ("src/RefundList.tsx", "tsx"),
        ("src/refund.js", "javascript"),
        ("src/refund.mjs", "javascript"),
        ("src/refund.cjs", "javascript"),
        ("src/RefundBadge.jsx", "javascript"),
        ("pkg/refund.go", "go"),
        ("src/refund.rs", "rust"),
        ("src/main/java/RefundService.java", "java"),
        ("src/refund.c", "c"),
        ("include/refund.h", "c"),
        ("src/refund.cc", "cpp"),
        ("src/refund.cpp", "cpp"),
        ("src/refund.cxx", "cpp"),
        ("include/refund.hpp", "cpp"),
        ("include/refund.hh", "cpp"),
        ("lib/refund_service.rb", "ruby"),
        ("src/RefundService.php", "php"),
        ("src/RefundService.kt", "kotlin"),
        ("build.gradle.kts", "kotlin"),
        ("src/RefundService.cs", "csharp"),
    ],
)
def test_language_for_maps_each_supported_extension(path: str, language: str) -> None:
    assert language_for(path) == language


def test_language_for_ignores_the_case_of_the_extension() -> None:
    assert language_for("LEGACY/REFUND.PY") == "python"
    assert language_for("Refund.Java") == "java"


def test_language_for_reads_windows_paths() -> None:
    assert language_for("src\\payments\\refund.go") == "go"


@pytest.mark.parametrize(
    "path",
    ["README.md", "Makefile", "notes.txt", "archive.tar.gz", ".bashrc", "src/", "", "refund.py.orig"],
)
def test_language_for_returns_none_for_unsupported_files(path: str) -> None:
    assert language_for(path) is None


def test_languages_lists_every_mapped_language_once() -> None:
    assert set(LANGUAGES) == set(LANGUAGE_BY_EXTENSION.values())
    assert len(LANGUAGES) == len(set(LANGUAGES)) == 13
