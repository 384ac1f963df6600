#!/usr/bin/env python3
"""The course's two commands, for a machine that has only python3.11 and pip.

    python3 tasks.py story   # set up .venv, then run the story: the model's ablation with our H200's
                             # measured ladder beside it (python -m fidelity story)
    python3 tasks.py test    # set up .venv, then run the whole test suite (CI runs this)
    python3 tasks.py lab     # set up .venv, then open JupyterLab on notebooks/

Set-up is idempotent: the virtualenv is (re)installed only when pyproject.toml changed, so the
second run starts at once.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
PY = VENV / "bin" / "python"
STAMP = VENV / ".installed-from"


def _wanted_stamp() -> str:
    return hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()


def setup() -> None:
    """Create .venv and install the project with every extra, unless already done."""
    if not PY.exists():
        print(f"[tasks] creating {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    if STAMP.exists() and STAMP.read_text() == _wanted_stamp():
        return
    print("[tasks] installing the project and its pinned dependencies (first run only)", flush=True)
    pip = [str(PY), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    subprocess.run(pip + ["--upgrade", "pip"], check=True)
    subprocess.run(pip + ["-e", f"{ROOT}[dev]"], check=True)
    STAMP.write_text(_wanted_stamp())


def run(*args: str) -> int:
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONHASHSEED="0")
    return subprocess.run([str(PY), *args], cwd=ROOT, env=env, check=False).returncode


def main(argv: list[str]) -> int:
    commands = {
        "story": lambda rest: run("-m", "fidelity", "story", *rest),
        "test": lambda rest: run("-m", "pytest", *rest),
        "lab": lambda rest: run("-m", "jupyter", "lab", "notebooks", *rest),
        "setup": lambda rest: 0,
    }
    if not argv or argv[0] not in commands:
        print(f"usage: python3 tasks.py {{{'|'.join(commands)}}} [args...]", file=sys.stderr)
        return 2
    setup()
    return commands[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
