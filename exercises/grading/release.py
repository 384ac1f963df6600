"""`python -m exercises release DEST`: the student copy — the course, not only its exercises.

DEST gets the chapters (``notebooks/``: every ``.py`` chapter, ``course.py`` and whatever else the
folder holds, without ``*.ipynb`` and checkpoints), what they import and read (``sim/``,
``records/``, ``fidelity/``, ``instruments/``, ``kernels/``, ``results/`` without
``results/archive``, ``docs/``), ``exercises/`` with every solution block replaced by
``raise NotImplementedError``, hidden-test
blocks and ``hidden/`` folders removed, ``wrong/`` left out and a ``RELEASED`` marker (so ``grade``
there says "public tests passed"); ``requirements.txt`` (the model, the chapters and the model/math
exercises: no torch, no triton), ``requirements-kernels.txt`` (triton and torch, for the Gluon and
``tl`` exercises and the kernels), ``pytest.ini``, a README, and the GitHub Classroom workflow
``.github/workflows/classroom.yml`` with one autograding step per public CPU test.

`python -m exercises gradescope OUT.zip`: the instructor's autograder for Gradescope — the
*source* exercises (hidden tests included), ``sim/``, the requirements, ``setup.sh`` (a virtual
environment, Python >= 3.10) and ``run_autograder`` (see exercises/README.md, Gradescope).
"""
from __future__ import annotations

import ast
import datetime as dt
import json
import math
import shutil
import zipfile
from pathlib import Path

from .runner import PACKAGE, ROOT, SALT_FILE, exercises, find_submission, seed_salt
from .source import meta, solution_lines, strip

REQUIREMENTS = """\
# The model (sim/), the chapters (notebooks/, in JupyterLab or as plain scripts) and the model
# and math exercises: no torch, no triton. The Gluon and tl exercises and the chapters' live
# kernel cells need requirements-kernels.txt as well (and the cells a Hopper GPU).
simpy==4.1.2
numpy>=1.26,<2.4
matplotlib>=3.8
pytest>=8
pytest-timeout>=2.3
PyYAML>=6
jupyterlab>=4
jupytext>=1.16
ipykernel>=6
nbclient>=0.10
ipywidgets>=8
"""
REQUIREMENTS_KERNELS = """\
# The Gluon and tl exercises (ch02_ws_gluon, ch04_tl_attention) and the kernels (kernels/), on top
# of requirements.txt:
#   pip install -r requirements.txt -r requirements-kernels.txt \\
#       --extra-index-url https://download.pytorch.org/whl/cpu
# (the CPU wheel of torch is enough to compile for sm_90a and to run the tl interpreter; on a
# Hopper GPU machine keep the CUDA torch it has).
triton==3.6.0
torch
"""
INSTALL_ALL = ("pip install -r requirements.txt -r requirements-kernels.txt "
               "--extra-index-url https://download.pytorch.org/whl/cpu")
# What the chapters import and read, copied whole (generated files and the archive left out).
COURSE_DIRS = ("sim", "records", "fidelity", "instruments", "kernels", "results", "docs")
# Lab's defaults for the copy, as `python3 tasks.py lab` gives them to the course: a chapter's .py
# opens as a notebook (jupytext) on a double-click. The README puts it on JUPYTER_CONFIG_PATH.
LAB_CONFIG = "jupyter-config"
# Nothing a run, a save from Lab or an install writes may dirty the student's `git status` (or
# reach a Classroom push): checkpoints, caches, the virtual environment.
GITIGNORE = """\
__pycache__/
*.pyc
.venv/
.pytest_cache/
.ipynb_checkpoints/
"""
# How the README opens Lab, from the copy's root: the root is the server's, so a chapter's links
# to ../exercises open; tests/test_lab_browser.py runs exactly this line.
LAB_LINE = "export PYTHONPATH=$PWD JUPYTER_CONFIG_PATH=$PWD/jupyter-config && jupyter lab"
COURSE_SKIP = ("__pycache__", "*.pyc", ".pytest_cache", ".ipynb_checkpoints", "build", "archive",
               "lab-notebook.md")
# The lab notebook is the instructors' record: how each hidden test was built, which cheats got
# through and how they were stopped. The copy holds this note in its place, so that the course's
# pointers to it still lead somewhere.
NOTEBOOK_NOTE = """\
# The lab notebook

The course's lab notebook (every measurement's prediction and outcome, in the order they were
made) stays with the instructors' copy of the course: it also records how the exercises are
graded, hidden tests included. The measurements it describes are the JSON files beside this note.
"""
# A grading run's log shows the hidden tests' outcomes and messages: left out of the copy.
HIDDEN_MARK = "[hidden]"
NOTEBOOK_SKIP = ("__pycache__", "*.pyc", "*.ipynb", ".ipynb_checkpoints")
# what the release leaves out of exercises/: the known-wrong files, the hidden tests and the
# secret of their per-student draws (`runner.seed_salt`)
SKIP = ("__pycache__", "*.pyc", "wrong", "hidden", "RELEASED", ".pytest_cache", "SEED_SALT",
        ".SEED_SALT.*")


class LeakError(RuntimeError):
    pass


def public_tests(test_file_text: str) -> list[tuple[str, float]]:
    """(test name, points) of the CPU tests in a (released) test file."""
    out = []
    for node in ast.parse(test_file_text).body:
        if not isinstance(node, ast.FunctionDef) or not node.name.startswith("test_"):
            continue
        points, gpu = 0.0, False
        for d in node.decorator_list:
            src = ast.unparse(d)
            if src.startswith("pytest.mark.points("):
                points = float(ast.literal_eval(d.args[0]))
            if src == "pytest.mark.gpu":
                gpu = True
        if not gpu:
            out.append((node.name, points))
    return out


def classroom_workflow(tests: list[tuple[str, str, float]]) -> str:
    steps, runners, env = [], [], []
    for ex, name, pts in tests:
        sid = f"{ex}-{name}".replace("_", "-").lower()
        runners.append(sid)
        env.append(f'        {sid.upper()}_RESULTS: "${{{{steps.{sid}.outputs.result}}}}"')
        steps.append(f"""\
    - name: {ex} {name}
      id: {sid}
      uses: classroom-resources/autograding-command-grader@v1
      with:
        test-name: {ex} {name}
        setup-command: ''
        command: python -m exercises grade --only {ex} --test {name} --require-full
        timeout: 10
        max-score: {int(pts) if float(pts).is_integer() else pts}""")
    return f"""\
# Written by `python -m exercises release`: one autograding step per public CPU test, worth its
# points (a test passes or earns nothing). Hidden tests and GPU tests are not run here: the
# instructor grades those with `python -m exercises grade` from the source (or on Gradescope).
name: Autograding Tests
'on': [push, repository_dispatch]
permissions:
  checks: write
  actions: read
  contents: read
jobs:
  run-autograding-tests:
    runs-on: ubuntu-latest
    if: github.actor != 'github-classroom[bot]'
    steps:
    - name: Checkout code
      uses: actions/checkout@v4
    - name: Set up Python
      uses: actions/setup-python@v5
      with:
        python-version: '3.11'
    - name: Install
      run: {INSTALL_ALL}
{chr(10).join(steps)}
    - name: Autograding Reporter
      uses: classroom-resources/autograding-grading-reporter@v1
      env:
{chr(10).join(env)}
      with:
        runners: {','.join(runners)}
"""


def release(dest: Path, force: bool = False) -> Path:
    dest = dest.resolve()
    if dest.exists():
        if not force and any(dest.iterdir()):
            raise SystemExit(f"{dest} exists and is not empty (use --force to replace it)")
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    out = dest / "exercises"
    shutil.copytree(PACKAGE, out, ignore=shutil.ignore_patterns(*SKIP))
    secrets: list[tuple[str, str]] = []
    for src in sorted(PACKAGE.rglob("*.py")):
        rel = src.relative_to(PACKAGE)
        if any(p in ("wrong", "hidden", "__pycache__") for p in rel.parts):
            continue
        text = src.read_text(encoding="utf-8")
        secrets += [(str(rel), s) for s in solution_lines(text)]
        (out / rel).write_text(strip(text), encoding="utf-8")
    (out / "RELEASED").write_text(json.dumps({"released": dt.date.today().isoformat()}) + "\n")
    for d in COURSE_DIRS:
        if (ROOT / d).is_dir():
            shutil.copytree(ROOT / d, dest / d, ignore=shutil.ignore_patterns(*COURSE_SKIP))
    drop_grading_logs(dest / "results")
    (dest / "results" / "lab-notebook.md").write_text(NOTEBOOK_NOTE)
    shutil.copytree(ROOT / "notebooks", dest / "notebooks",
                    ignore=shutil.ignore_patterns(*NOTEBOOK_SKIP))
    (dest / "requirements.txt").write_text(REQUIREMENTS)
    (dest / "requirements-kernels.txt").write_text(REQUIREMENTS_KERNELS)
    (dest / "pytest.ini").write_text("[pytest]\ntestpaths = exercises\n"
                                     "addopts = --import-mode=importlib -p exercises.grading.plugin\n")
    (dest / ".gitignore").write_text(GITIGNORE)
    shutil.copytree(ROOT / LAB_CONFIG, dest / LAB_CONFIG, ignore=shutil.ignore_patterns(*COURSE_SKIP))
    tests = []
    for ex in exercises(out):
        for tf in sorted((out / ex).glob("test_*.py")):
            tests += [(ex, n, p) for n, p in public_tests(tf.read_text(encoding="utf-8"))]
    wf = dest / ".github" / "workflows"
    wf.mkdir(parents=True)
    (wf / "classroom.yml").write_text(classroom_workflow(tests))
    (dest / "README.md").write_text(student_readme(dest))
    check_no_leak(dest, secrets)
    check_no_salt(dest)
    check_whole_release(dest)
    return dest


LOG_SUFFIXES = (".log", ".txt", ".md", ".csv")


def _log_text(p: Path) -> str | None:
    """A text file's content, a gzipped one's too (``run.log.gz``); None for any other file."""
    import gzip
    suffixes = p.suffixes[-2:]
    try:
        if suffixes and suffixes[-1] == ".gz" and suffixes[0] in LOG_SUFFIXES:
            return gzip.decompress(p.read_bytes()).decode("utf-8", errors="replace")
        if p.suffix in LOG_SUFFIXES:
            return p.read_text(encoding="utf-8", errors="replace")
    except (OSError, EOFError):             # gzip.BadGzipFile is an OSError
        return None
    return None


def drop_grading_logs(results: Path) -> None:
    """Remove the logs of grading runs (a report that marks a test hidden) from the copy's
    results/, gzipped ones too: they show what the hidden tests asked and answered."""
    for p in sorted(results.rglob("*")):
        if p.is_file() and HIDDEN_MARK in (_log_text(p) or ""):
            p.unlink()


def check_no_salt(dest: Path) -> None:
    """No released file holds the seed salt (with it a student computes the hidden draws)."""
    salt = SALT_FILE.read_text(encoding="ascii").strip() if SALT_FILE.exists() else ""
    if len(salt) < 16:
        return
    for p in dest.rglob("*"):
        if p.is_file() and salt.encode() in p.read_bytes():
            raise LeakError(f"the seed salt is in the release: {p.relative_to(dest)}")


def student_readme(dest: Path) -> str:
    """The released copy's README: install, open the chapters, grade the exercises."""
    out = dest / "exercises"
    chapters = "\n".join(f"* `notebooks/{p.name}`" for p in sorted((dest / "notebooks").glob("0*.py")))
    kinds = {ex: ("Gluon / tl: needs requirements-kernels.txt" if needs_kernels(out / ex)
                  else "model / math") for ex in exercises(out)}
    rows = "\n".join(f"| `{ex}` | {meta(out / ex)['title']} | `{'`, `'.join(meta(out / ex)['submission'])}` "
                     f"| {kinds[ex]} |" for ex in exercises(out))
    return f"""# Hopper warp specialization — the course

The chapters, the model they run, and the exercises. Everything but the Gluon and `tl` exercises
and the live-GPU cells runs on a laptop CPU.

## Install

```bash
python3 -m venv .venv && . .venv/bin/activate
pip install -r requirements.txt                  # the model, the chapters, JupyterLab, the model/math exercises
pip install -r requirements-kernels.txt \\
    --extra-index-url https://download.pytorch.org/whl/cpu   # + triton, torch: Gluon/tl exercises
```

`requirements.txt` has no torch and no triton: with it alone every chapter runs top to bottom
and the model and math exercises grade. A chapter cell that runs a kernel live needs a Hopper GPU
(sm_90a: H100, H200) and `requirements-kernels.txt`; without them it says so and shows what our
H200 measured (`results/`) instead. The Gluon and `tl` exercises need `requirements-kernels.txt`.

## The chapters

{chapters}

Open them in JupyterLab from the root of this copy (the folder this README is in):

```bash
{LAB_LINE}
```

Lab opens on this folder: open `notebooks/` and double-click a chapter; it opens as a notebook
(jupytext, set up by `jupyter-config/`), and its links to `../exercises/...` open the exercises.
Run → Run All Cells runs it. A save writes the chapter's `.py` back unchanged but for your edits.
Or run one as a plain script, without Jupyter: `PYTHONPATH=$PWD python notebooks/05_fa3_ablation.py`
(the text is printed; figures need `MPLBACKEND` to show or save them).
`sim/` is the course's model (`python -m sim --help`), `docs/` the constants and FA3 facts it
uses, `kernels/` the Gluon kernels, `results/` what our H200 measured.

## The exercises

Fill in the places marked `# YOUR CODE HERE` (each raises `NotImplementedError` until you do).

| exercise | task | you edit | needs |
|---|---|---|---|
{rows}

Each exercise folder has a README with the statement, hints and points.

```bash
python -m exercises grade                     # every exercise: a table of points
python -m exercises grade --only ch01_ring -v # one exercise, with the failure messages
```

Without `requirements-kernels.txt`, `grade` grades the model and math exercises and leaves the
Gluon and `tl` ones out of the maximum, naming them in one line.
These are the **public** tests; the instructor's grading adds hidden ones, so "public tests
passed" is not yet full marks. `sim/` holds the course's own schedules: read it, but write your own
code — the graders hide the helpers that would do an exercise for you. Pushing runs the same public
tests on GitHub Classroom (`.github/workflows/classroom.yml`).
"""


def check_whole_release(dest: Path) -> None:
    """The whole release (sim/, kernels/, notebooks ...) scanned for what answers an exercise
    (`leaks.scan`): a LeakError naming each leak (a released unit that holds more than half of
    a solution block); the idioms the course's code shares with a solution go to stderr."""
    import sys

    from .leaks import report, scan
    found = scan(dest)
    if any(f.leak for f in found):
        raise LeakError(report(found))
    if found:
        print(report(found), file=sys.stderr)


def needs_kernels(folder: Path) -> bool:
    """Whether an exercise's tests or helpers import triton or torch (the Gluon and tl ones:
    `requirements-kernels.txt`)."""
    return any(word in p.read_text(encoding="utf-8") for p in folder.glob("*.py")
               for word in ("import triton", "from triton", "import torch", "from torch"))


def check_no_leak(dest: Path, secrets: list[tuple[str, str]]) -> None:
    """No released file may hold a *distinctive* solution or hidden-test line: one that the public
    (stripped) source holds nowhere, e.g. a README quoting a solution. (Generic lines such as
    ``@pytest.mark.points(1)`` are public anyway.) Also no block marker may survive."""
    released = {p: p.read_text(encoding="utf-8", errors="replace")
                for p in (dest / "exercises").rglob("*") if p.is_file()}
    public = "\n".join(released.values())
    leaks = []
    for p, t in released.items():
        for marker in ("### BEGIN SOLUTION", "### BEGIN HIDDEN TESTS"):
            if any(line.strip() == marker for line in t.splitlines()):
                leaks.append(f"{p.relative_to(dest)}: a {marker!r} block survived")
    # distinctive: absent from the stripped .py sources (what the release is meant to hold)
    stripped = "\n".join(strip(q.read_text(encoding="utf-8")) for q in PACKAGE.rglob("*.py")
                         if not any(x in ("wrong", "hidden", "__pycache__") for x in q.parts))
    for rel, line in secrets:
        if line in stripped:
            continue
        for p, t in released.items():
            if line in t:
                leaks.append(f"{p.relative_to(dest)}: {line!r} (from {rel})")
    del public
    leaks += hidden_values_in(dest)
    if leaks:
        raise LeakError("solution or hidden-test text in the release:\n" + "\n".join(leaks[:20]))


def hidden_values(tree: Path = PACKAGE) -> list[tuple[str, str]]:
    """(where, text) of every value a hidden test uses that could serve as an answer key: the
    numbers its module holds after import (inputs, references, configurations: its globals, into
    lists, tuples, dicts, arrays and dataclasses such as a Hardware), as this run drew them, and the
    float literals of its source. Small integers are left out: they are everywhere (a stage
    count, a range bound) and key nothing on their own."""
    from .runner import _import
    out: list[tuple[str, str]] = []

    def walk(where: str, v, depth: int = 0) -> None:
        if depth > 6:
            return
        if isinstance(v, bool) or v is None:
            return
        if isinstance(v, float):
            if not math.isnan(v) and abs(v) not in (0.0, float("inf")) and len(repr(v).strip("-0.")) >= 6:
                out.append((where, repr(v)))
        elif isinstance(v, int):
            if abs(v) >= 100_000:
                out.append((where, str(v)))
        elif isinstance(v, (list, tuple)):
            for i, x in enumerate(v[:64]):
                walk(f"{where}[{i}]", x, depth + 1)
        elif isinstance(v, dict):
            for k, x in list(v.items())[:64]:
                walk(f"{where}[{k!r}]", x, depth + 1)
        elif type(v).__module__ == "numpy" and hasattr(v, "ravel"):
            walk(where, [float(x) for x in v.ravel()[:64]], depth + 1)
        elif hasattr(v, "__dataclass_fields__") and not isinstance(v, type):
            for f in v.__dataclass_fields__:
                walk(f"{where}.{f}", getattr(v, f), depth + 1)

    import sim
    for name, hw in sim.PRESETS.items():                 # public: the presets' own numbers
        walk(f"public:{name}", hw)
    for path in sorted(tree.glob("ch*/test_*.py")):      # public: what the released tests hold
        mod = _import(path)
        for name in _assigned(path):
            walk("public:" + name, getattr(mod, name, None))
    public = {v for _, v in out}
    out.clear()
    for path in sorted(tree.glob("ch*/hidden/test_*.py")):
        rel = path.relative_to(tree).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, float):
                walk(f"{rel}:{node.lineno}", node.value)
        mod = _import(path)
        for name in _assigned(path):                 # its own values, not what it imports
            v = getattr(mod, name, None)
            if not callable(v) and type(v).__name__ != "module":
                walk(f"{rel}:{name}", v)
    return [(w, v) for w, v in out if v not in public]


def _assigned(path: Path) -> list[str]:
    """The names a module assigns at its top level."""
    names = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
        for t in targets:
            names += [n.id for n in ast.walk(t) if isinstance(n, ast.Name)]
    return names


def hidden_values_in(dest: Path, values: list[tuple[str, str]] | None = None) -> list[str]:
    """Every hidden value (`hidden_values`) found in a text file of the released tree `dest`."""
    values = hidden_values() if values is None else values
    found = []
    for p in dest.rglob("*"):
        if not p.is_file() or p.stat().st_size > 8 << 20:
            continue
        try:
            text = p.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for where, v in values:
            if v in text:
                found.append(f"{p.relative_to(dest)}: the hidden value {v} ({where})")
    return found


# What run_autograder needs on Gradescope (setup.sh installs it into a virtual environment): the
# model and the grader, no matplotlib or notebooks. Python >= 3.10 (Ubuntu 22.04's python3).
REQUIREMENTS_AUTOGRADER = """\
simpy==4.1.2
numpy>=1.26,<2.4
pytest>=8
pytest-timeout>=2.3
"""
SETUP = """\
#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image. Everything is installed
# into a virtual environment, $AG/venv, that run_autograder uses: newer Ubuntu images refuse a
# system-wide `pip install` (PEP 668, "externally-managed-environment"), and Ubuntu 22.04's
# python3 is 3.10, which sim/ and the grader support (the course package as a whole asks for 3.11;
# it is not installed here: run_autograder runs the grader from $AG/source).
# For the course's own tests: AUTOGRADER_ROOT (default /autograder), AUTOGRADER_PYTHON (default
# python3), AUTOGRADER_KERNELS=0 (leave out triton and torch, which the Gluon and tl exercises
# need).
set -euo pipefail
AG="${AUTOGRADER_ROOT:-/autograder}"
PY="${AUTOGRADER_PYTHON:-python3}"
SRC="$AG/source"
VENV="$AG/venv"
if ! "$PY" -m venv --clear "$VENV"; then
    # Ubuntu's python3 has no venv (ensurepip) until python3-venv is installed.
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq python3 python3-venv python3-pip > /dev/null
    "$PY" -m venv --clear "$VENV"
fi
VPY="$VENV/bin/python"
"$VPY" -c 'import sys; assert sys.version_info >= (3, 10), "need python >= 3.10: " + sys.version'
"$VPY" -m pip install -q --disable-pip-version-check -r "$SRC/requirements-autograder.txt"
if [ "${AUTOGRADER_KERNELS:-1}" != 0 ]; then
    # the Gluon and tl exercises (ch02_ws_gluon, ch04_tl_attention): triton and the CPU torch
    "$VPY" -m pip install -q --disable-pip-version-check -r "$SRC/requirements-kernels.txt" \\
        --extra-index-url https://download.pytorch.org/whl/cpu
fi
cd "$SRC"
"$VPY" -c 'import sys, numpy, simpy, pytest, pytest_timeout, sim, exercises.grading.runner
print("autograder ready: python", sys.version.split()[0], "numpy", numpy.__version__)'
# Where the sandbox cannot make a mount namespace (no unshare in the container), only file modes
# hide the solution from the submission's uid: the source is the grader's alone, the venv is
# readable by all (the submission's process runs its python), $AG may be passed through.
chmod 0711 "$AG"
chmod -R go-rwx "$SRC"
chmod -R o+rX "$VENV"
"""
RUN_AUTOGRADER = """\
#!/usr/bin/env bash
# Gradescope runs this for every submission, in /autograder. AUTOGRADER_ROOT (default /autograder)
# lets the course's own tests run it in a folder laid out the same way (source/, submission/,
# results/, and the venv/ that setup.sh made). On Gradescope it runs
#   python -m exercises grade /autograder/submission --gradescope /autograder/results/results.json
# with /autograder/submission narrowed to the folder that holds the work: the upload itself (the
# exercise files flat, the exercises/ folder or a copy of the repo) or the one folder a zipped
# folder unpacks to (see submission_root in exercises/grading/release.py).
set -uo pipefail
AG="${AUTOGRADER_ROOT:-/autograder}"
PY="$AG/venv/bin/python"
if [ ! -x "$PY" ]; then
    echo "run_autograder: no $PY (did setup.sh run?); trying python3" >&2
    PY=python3
fi
mkdir -p "$AG/results"
rm -f "$AG/results/results.json"
chmod 0711 "$AG"; chmod -R go-rwx "$AG/source" "$AG/results"    # see setup.sh: the modes hide it
# Gradescope's metadata lists the previous submissions with their results (the hidden tests'
# outcomes, the instructors' full table): the grader reads it, the submission's uid may not
chmod go-rwx "$AG/submission_metadata.json" 2>/dev/null || true
cd "$AG/source" || exit 1
SUB="$("$PY" -c 'import sys; from pathlib import Path
from exercises.grading.release import submission_root
print(submission_root(Path(sys.argv[1])))' "$AG/submission")" || SUB="$AG/submission"
echo "grading $SUB"
# who is graded (Gradescope's metadata): seeds the hidden values, the same ones in a regrade
WHO="$("$PY" -c 'import json, sys
m = json.load(open(sys.argv[1]))
print(",".join(str(u.get("id") or u.get("email")) for u in m.get("users", [])))' \\
    "$AG/submission_metadata.json" 2>/dev/null)" || WHO=""
"$PY" -m exercises grade "$SUB" --gradescope "$AG/results/results.json" \\
    --student "${WHO:-gradescope}" --jobs "${AUTOGRADER_JOBS:-2}" > "$AG/results/grade.txt" 2>&1
status=$?
cat "$AG/results/grade.txt"
exit $status
"""
# Directories of a submission that are never the student's work.
_NOT_WORK = ("__MACOSX", "__pycache__", "node_modules", "venv")


def submission_root(path: Path, max_depth: int = 4, max_dirs: int = 2000) -> Path:
    """The folder under a Gradescope submission to grade: of `path` and the folders below it (to
    `max_depth`, hidden ones and ``__MACOSX`` left out), the shallowest one in which the most
    exercises find their files (`runner.find_submission`). So a flat upload, an ``exercises/``
    folder or a repo copy is graded where it lies, and a zipped folder (which Gradescope unpacks to
    ``submission/<folder>/...``) from inside that folder. `path` itself when none finds any."""
    names = exercises()
    best, best_n = path, 0
    queue, seen = [(path, 0)], 0
    while queue and seen < max_dirs:
        d, depth = queue.pop(0)                      # breadth first: the shallowest wins a tie
        seen += 1
        n = sum(find_submission(d, ex) is not None for ex in names)
        if n > best_n:
            best, best_n = d, n
        if depth < max_depth:
            try:
                kids = sorted(d.iterdir())
            except OSError:
                continue
            queue += [(k, depth + 1) for k in kids if k.is_dir() and not k.is_symlink()
                      and not k.name.startswith(".") and k.name not in _NOT_WORK]
    return best


def gradescope_zip(out_zip: Path) -> Path:
    """The Gradescope autograder: ``exercises/`` as the instructor has it (solutions, hidden
    tests and the seed salt; ``wrong/`` left out), ``sim/`` (everything the model reads is in
    it: it opens no data file), the requirements, ``setup.sh`` and ``run_autograder``."""
    out_zip = out_zip.resolve()
    out_zip.parent.mkdir(parents=True, exist_ok=True)
    salt = seed_salt()             # the tree's (made now if it has none), or EXERCISES_SEED_SALT
    with zipfile.ZipFile(out_zip, "w", zipfile.ZIP_DEFLATED) as z:
        for base in ("exercises", "sim"):
            for p in sorted((ROOT / base).rglob("*")):
                rel = p.relative_to(ROOT)
                if p.is_file() and not any(x in ("wrong", "__pycache__", ".pytest_cache")
                                           for x in rel.parts) and p.suffix != ".pyc" \
                        and not p.name.startswith(("SEED_SALT", ".SEED_SALT")):
                    z.write(p, str(rel))
        # each Gradescope run starts from the image: the salt must come with it, or a regrade
        # (or every run) would make its own
        info = zipfile.ZipInfo(str(SALT_FILE.relative_to(ROOT)))
        info.external_attr = 0o600 << 16
        z.writestr(info, salt + "\n")
        z.writestr("requirements.txt", REQUIREMENTS)
        z.writestr("requirements-kernels.txt", REQUIREMENTS_KERNELS)
        z.writestr("requirements-autograder.txt", REQUIREMENTS_AUTOGRADER)
        for name, text in (("run_autograder", RUN_AUTOGRADER), ("setup.sh", SETUP)):
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o755 << 16
            z.writestr(info, text)
    return out_zip
