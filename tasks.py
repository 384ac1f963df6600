#!/usr/bin/env python3
"""The course's two commands, for a machine that has only python3.11 and pip.

    python3 tasks.py story   # set up .venv, then run the story: the model's ablation with our H200's
                             # measured ladder beside it (python -m fidelity story)
    python3 tasks.py test    # set up .venv, then run the whole test suite (CI runs this): in
                             # parallel, a worker a core and one more (pytest-xdist), unless
                             # -n is given
    python3 tasks.py lab     # set up .venv, then open JupyterLab on notebooks/

Set-up is idempotent: the virtualenv is (re)installed only when pyproject.toml changed, so the
second run starts at once.

Only the story and pytest itself run with MPLBACKEND=Agg (figures to files, no display). JupyterLab
and every kernel it starts get the environment without it, so the chapters draw inline; the
notebook tests start their kernels the same way (tests/test_notebooks.py, tests/test_lab_browser.py,
which starts Lab through `lab_command`, exactly as `python3 tasks.py lab` does).
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
# A Jupyter config dir added to JUPYTER_CONFIG_PATH for `lab`: labconfig/default_setting_overrides.json
# makes a chapter's .py open as a notebook (jupytext) and turns off Lab's news and update checks.
# A student's own Lab settings (Settings Editor) still win over these defaults.
LAB_CONFIG = ROOT / "jupyter-config"


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


def base_env(**extra: str) -> dict[str, str]:
    """This process's environment without MPLBACKEND (a kernel started from it draws inline),
    with a fixed hash seed, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    return {**env, "PYTHONHASHSEED": "0", **extra}


def lab_command(*args: str) -> tuple[list[str], dict[str, str]]:
    """The command line and environment of `python3 tasks.py lab [args]`.

    The server's root is the repository (a chapter's links to ../exercises open), Lab starts in
    notebooks/, and its defaults come from LAB_CONFIG. No MPLBACKEND: kernels use the inline backend.
    """
    config_path = os.pathsep.join(p for p in (str(LAB_CONFIG), os.environ.get("JUPYTER_CONFIG_PATH"))
                                  if p)
    env = base_env(JUPYTER_CONFIG_PATH=config_path)
    cmd = [str(PY), "-m", "jupyter", "lab", f"--ServerApp.root_dir={ROOT}",
           "--LabApp.default_url=/lab/tree/notebooks"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")  # containers and CI machines run as root
    return cmd + list(args), env


def run(*args: str) -> int:
    """Run the venv's python with MPLBACKEND=Agg: the story's figures go to files, pytest's own
    process never opens a window (the kernels the tests start drop it again)."""
    env = base_env(MPLBACKEND="Agg")
    return subprocess.run([str(PY), *args], cwd=ROOT, env=env, check=False).returncode


def workers() -> int:
    """One pytest-xdist worker a core, and one more: the slowest tests wait on a browser, a Lab
    server, pip or a sandbox's start, and the extra worker computes in those waits (the suite
    on 2 cores: 5:51 with three workers against 6:13 with two, same tree, same machine)."""
    return (os.cpu_count() or 1) + 1


def test_args(args) -> list[str]:
    """pytest's arguments for `tasks.py test`: the user's, run in parallel (`workers()`)
    unless they choose the workers (-n, --numprocesses) or turn xdist off (-p no:xdist). Each
    test file stays on one worker (--dist loadfile): its module's fixtures are built once."""
    args = list(args)
    chosen = any(a == "-n" or a.startswith(("-n", "--numprocesses")) for a in args)
    off = any(a in ("no:xdist", "-pno:xdist") for a in args)
    return args if chosen or off else ["-n", str(workers()), "--dist", "loadfile", *args]


def lab(*args: str) -> int:
    cmd, env = lab_command(*args)
    return subprocess.run(cmd, cwd=ROOT, env=env, check=False).returncode


def main(argv: list[str]) -> int:
    commands = {
        "story": lambda rest: run("-m", "fidelity", "story", *rest),
        "test": lambda rest: run("-m", "pytest", *test_args(rest)),
        "lab": lambda rest: lab(*rest),
        "setup": lambda rest: 0,
    }
    if not argv or argv[0] not in commands:
        print(f"usage: python3 tasks.py {{{'|'.join(commands)}}} [args...]", file=sys.stderr)
        return 2
    setup()
    return commands[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
