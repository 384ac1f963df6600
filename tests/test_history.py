"""History lives in results/lab-notebook.md and nowhere else: no run ids (the labels the notebook
gives its runs) and no issue numbers in code, docstrings, CLI flags, file names or READMEs. A fact
a run measured is cited by the results file that holds it.

A run id is a capital A, C, E, F, G, P, Q, R, S or T, a number and at most one small letter,
standing alone as a word: not inside a path or a name (a results log's ``-2026-12-04-<id>-``, a
JSON key, a ``%p`` register) and not a PTX predicate register (``<id>, [bar]``). An issue number
is the word issue with a number (spaced, joined, with ``#``). Upstream projects' issues are cited
with the project's name and a ``#`` ("triton #9171"), which is not ours and not matched.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HISTORY = "results/"                     # the lab notebook and the measured files
# lower case, as flags and names write one: an r-number joined by - or _ (``--<id>-order``,
# ``<id>_tiles_of``), not a register (``r2,``)
JOINED = r"(?<=[-_])r[1-9][0-9]?[a-z]?(?![a-z0-9])|(?<![%\w$])r[1-9][0-9]?[a-z]?(?=[-_][a-z])"
RUN_ID = re.compile(r"(?<![-\w/.%$])[ACEFGPQRST][1-9][0-9]?[a-z]?(?![-\w])(?!,\s*\[)|" + JOINED)
ISSUE = re.compile(r"(?i)\bissue[\s_-]*#?\d+")
# in a file name: an issue number, or a run id between separators (``<name>-<id>.json``)
# A line of 64 or more characters without a space is encoded data (a known-wrong submission's
# packed payload), not words
ENCODED = re.compile(r"^\S{64,}$")
NAME = re.compile(r"(?i:issue[-_]?\d+)|(?<=[-_.])[ACEFGPQRST][1-9][0-9]?[a-z]?(?=[-_.])|" + JOINED)
TEXT = {".py", ".md", ".sh", ".toml", ".yml", ".yaml", ".cfg", ".ini", ".txt", ".json", ".cu",
        ".cuh", ".h", ""}
SKIP_DIRS = {".git", ".venv", "results", "__pycache__", "node_modules", ".ipynb_checkpoints",
             ".pytest_cache", "build", "dist", "out"}


def repository_files(root: Path = ROOT) -> list[Path]:
    """The repository's files (git's list where there is one, else the tree without build
    output and virtualenvs), relative to `root`, results/ left out."""
    try:
        cmd = ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"]
        out = subprocess.run(cmd, cwd=root, capture_output=True, check=True,
                             timeout=60).stdout.decode()
        files = [Path(p) for p in out.split("\0") if p]
    except (OSError, subprocess.SubprocessError):
        files = [p.relative_to(root) for p in root.rglob("*")
                 if p.is_file() and not SKIP_DIRS & set(p.relative_to(root).parts)]
    return [p for p in files if not str(p).startswith(HISTORY) and (root / p).is_file()]


def history_in(root: Path = ROOT, files: list[Path] | None = None) -> list[str]:
    """Every run id or issue number outside results/, as "path:line: text" (or "path: name")."""
    found = []
    for rel in files if files is not None else repository_files(root):
        if NAME.search(rel.name):
            found.append(f"{rel}: file name")
        if rel.suffix not in TEXT:
            continue
        try:
            text = (root / rel).read_text()
        except (UnicodeDecodeError, OSError):
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if ENCODED.match(line):
                continue
            if RUN_ID.search(line) or ISSUE.search(line):
                found.append(f"{rel}:{n}: {line.strip()[:100]}")
    return found


def test_no_run_ids_or_issue_numbers_outside_the_lab_notebook():
    assert history_in() == []


# Built from pieces so that this file itself holds none of them.
R, ISS = "R", "issue"
PLANTED = {
    "sim/a.py": f"# fitted to run {R}2 (lab notebook)\n",
    "fidelity/b.py": f'ap.add_argument("--{R.lower()}5a-order")\nX = "{R}5a"\n'
                     f"def {R.lower()}5a_tiles_of(): pass\n",
    "results-" + R.lower() + "5b.py": "x = 1\n",
    "kernels/c.py": f'"""See {ISS.title()} 23 for why."""\n',
    "instruments/device/" + ISS + "23.sh": "echo\n",
    "README.md": f"the grid ({ISS} #30), runs P{1} and G{5}\n",
}
CLEAN = {
    "sim/ok.py": "# h200-2026-12-04-G1-gemm_sweep_raw.csv.gz and rows_q8 and %p1 are names\n"
                 "asm = 'mbarrier.try_wait.parity.shared::cta.b64 P1, [b], 0;'\n"
                 "# L2, H100, sm_90a, fp16, d64, S 1K, s2 stages; Gluon issues 16 wgmmas\n"
                 "# numpy < 2.4 (triton #9171)\n",
    "kernels/gemm_ws_s2.py": "void f(uint32_t r1, uint32_t r2) {}  // stmatrix_x4\n",
}


def test_the_check_finds_planted_history_and_passes_clean_text(tmp_path):
    for rel, body in {**PLANTED, **CLEAN}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(body)
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "lab-notebook.md").write_text(f"Run {R}5a: measured.\n")
    files = [p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file()]
    found = history_in(tmp_path, [p for p in files if not str(p).startswith(HISTORY)])
    where = {f.split(":")[0] for f in found}
    assert where == set(PLANTED), found
    assert len([f for f in found if f.startswith("fidelity/b.py")]) == 3   # flag, id, function
    assert len([f for f in found if f.startswith("README.md")]) == 1      # one line, three hits


@pytest.mark.parametrize("line", [f"run {R}5b measured it", f"{R}4's grid", f"(P{2})",
                                  f"{ISS} 23's shapes", f"{ISS.title()}#12", f"see {ISS}_7",
                                  f"--{R.lower()}5a-order", f"test_gain_of_{R.lower()}4"])
def test_each_planted_form_is_caught(line):
    assert RUN_ID.search(line) or ISSUE.search(line), line
