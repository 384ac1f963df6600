"""Cheats a `# loses:` header cannot express (issue "A grader an instructor can trust", item 6).

The known-wrong files in exercises/wrong/cheat_*.py are graded by test_grading.py (points lost);
these tests check what else a cheat must not achieve: a report rewritten after the grader wrote
it, a grader tree changed, a submission file that is a symlink or a fifo, an output flood, the
grader's environment leaking into the sandbox.

Each test can fail. Against a grader weakened as its docstring says (a `sitecustomize` that
patches `exercises.grading.sandbox` before the grader runs: `_LIMITS` with ``namespaces=False,
drop_privileges=False``, a reaper that kills nothing, `_copy_submission` following symlinks, no
output cap, the grader's environment passed on), each one fails; see the docstrings.
"""
from __future__ import annotations

import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from exercises.grading import runner

PKG = runner.PACKAGE
ROOT = runner.ROOT
WRONG = PKG / "wrong"
SOLUTION = PKG / "ch00_rates" / "rates.py"
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="the uid drop and the mount namespace that "
                             "stop this cheat need root (CI and Gradescope run as root)")


def submit(tmp_path: Path, ex: str, name: str, text: str | None = None, src: Path | None = None):
    """tmp_path/<ex>/<name> holding `text` or a copy of `src`; the submission root."""
    d = tmp_path / "sub" / ex
    d.mkdir(parents=True, exist_ok=True)
    if src is not None:
        shutil.copyfile(src, d / name)
    elif text is not None:
        (d / name).write_text(text)
    return tmp_path / "sub"


def grade(root: Path, ex: str):
    [res] = runner.grade(root, only=[ex], jobs=1, test_timeout=60)
    return res


def tree_digest(top: Path) -> dict[str, str]:
    out = {}
    for p in sorted(top.rglob("*")):
        if "__pycache__" in p.parts or p.suffix == ".pyc" or not p.is_file():
            continue
        out[p.relative_to(top).as_posix()] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


# ------------------------------------------------------------------------------ late rewrites
@as_root
def test_report_unchanged_after_a_setsid_rewriter(tmp_path):
    """cheat_forge_setsid_rewriter leaves a double-forked `setsid` process that, 2 s on, rewrites
    the `--gradescope FILE` it read in /proc with full marks. `grade --gradescope out.json` must
    write a report that is still byte-identical 5 s after grade returned.
    Fails against a grader without the PID namespace, the uid drop and the reaper's kill (the
    rewriter survives the session, finds the grader's argv in /proc, and can write the file)."""
    root = submit(tmp_path, "ch05_idle", "idle.py", src=WRONG / "cheat_forge_setsid_rewriter.py")
    out = tmp_path / "out.json"
    proc = subprocess.run([sys.executable, "-m", "exercises", "grade", str(root), "--only",
                           "ch05_idle", "--gradescope", str(out)], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    first = out.read_bytes()
    report = json.loads(first)
    assert report["score"] < sum(t["max_score"] for t in report["tests"]), report["score"]
    time.sleep(5)
    assert out.read_bytes() == first, "the report changed after the grader wrote it"


# ------------------------------------------------------------------------------ the grader's tree
@as_root
def test_tree_unchanged_after_a_write_into_tree_cheat(tmp_path):
    """cheat_forge_write_tree overwrites every exercises/ch*/test_*.py and hidden/test_*.py it
    finds above its cwd and its own file (the sandbox's directory is made in the grader's temp
    dir) or at /autograder/source. The grader's exercises/ and sim/ must be byte-identical after
    grading it, and it must still lose its points.
    Fails against a grader without the uid drop and the mount masks whose temp dir lies inside
    its tree (TMPDIR=<tree>/tmp): the cheat walks up to the tree and rewrites the tests."""
    before = {"exercises": tree_digest(PKG), "sim": tree_digest(ROOT / "sim")}
    root = submit(tmp_path, "ch03_pingpong", "pingpong.py", src=WRONG / "cheat_forge_write_tree.py")
    res = grade(root, "ch03_pingpong")
    after = {"exercises": tree_digest(PKG), "sim": tree_digest(ROOT / "sim")}
    changed = sorted(f"{top}/{k}" for top in before for k in set(before[top]) | set(after[top])
                     if before[top].get(k) != after[top].get(k))
    assert not changed, f"grading the cheat changed the grader's tree: {changed[:10]}"
    assert res.score == 0, [(t.name, t.outcome) for t in res.tests]


# ------------------------------------------------------------------------------ special files
def test_symlink_to_the_solution_is_refused(tmp_path):
    """rates.py as a symbolic link to the course's solution: refused, every test fails, score 0.
    Fails against a grader whose copy follows links (`_copy_submission` as shutil.copyfile): the
    solution would be graded as the student's."""
    d = tmp_path / "sub" / "ch00_rates"
    d.mkdir(parents=True)
    (d / "rates.py").symlink_to(SOLUTION)
    res = grade(tmp_path / "sub", "ch00_rates")
    assert res.tests and res.score == 0, [(t.name, t.outcome) for t in res.tests]
    assert all(t.outcome == "failed" for t in res.tests)
    assert any("symbolic link" in t.message for t in res.tests), res.tests[0].message


def test_relative_symlink_is_refused(tmp_path):
    """The same with a relative link (../../..): refused too, score 0."""
    d = tmp_path / "sub" / "ch00_rates"
    d.mkdir(parents=True)
    (d / "rates.py").symlink_to(os.path.relpath(SOLUTION, d))
    res = grade(tmp_path / "sub", "ch00_rates")
    assert res.tests and res.score == 0 and all(t.outcome == "failed" for t in res.tests)


def test_symlinked_exercise_folder_scores_zero(tmp_path):
    """The exercise folder of the upload a symlink to the grader's own exercise folder (a zip or
    a repository can carry one): what it reaches is the course's solution, not the student's
    work, and must score 0. Fails against a grader that follows a symlinked folder."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "ch00_rates").symlink_to(PKG / "ch00_rates")
    res = grade(tmp_path / "sub", "ch00_rates")
    assert res.score == 0, [(t.name, t.outcome) for t in res.tests]


def test_fifo_is_refused_and_does_not_hang(tmp_path):
    """rates.py as a fifo (a reader would block forever): refused or missing, score 0, and
    grading returns promptly. Fails against a grader that opens the file without checking its
    kind (it would block in open())."""
    d = tmp_path / "sub" / "ch00_rates"
    d.mkdir(parents=True)
    os.mkfifo(d / "rates.py")
    t0 = time.monotonic()
    res = grade(tmp_path / "sub", "ch00_rates")
    assert time.monotonic() - t0 < 60
    assert res.tests and res.score == 0
    assert all(t.outcome == "failed" for t in res.tests)


# ------------------------------------------------------------------------------ output flood
FLOOD = '''
import os, sys
sys.path.insert(0, os.path.dirname(__file__))


def wgmma_group_clk(hw, rows, n, k, dtype="fp16", a_from_smem=True):
    chunk = b"x" * (1 << 20)
    for _ in range(150):
        os.write(1, chunk)                   # 150 MiB on stdout
        sys.stderr.write("y" * (1 << 20))    # and 150 MiB on stderr
    sys.stderr.flush()
    return -1.0
'''


def test_output_flood_does_not_break_the_grader(tmp_path):
    """A submission that writes 300 MB to stdout and stderr in one call: that test fails, the
    other tests still pass, the grader's memory does not grow by the flood and it returns.
    Fails against a grader that keeps all the output (max_output_bytes unbounded): its memory
    grows by ~300 MB (or against one that reads the pipe only at the end: the worker blocks)."""
    sol = SOLUTION.read_text()
    text = sol + FLOOD
    root = submit(tmp_path, "ch00_rates", "rates.py", text=text)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss        # KiB on Linux
    t0 = time.monotonic()
    res = grade(root, "ch00_rates")
    took = time.monotonic() - t0
    grew = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) * 1024
    out = {t.name: t.outcome for t in res.tests}
    assert out["test_softmax"] == out["test_softmax_masked"] == "passed", out
    assert out["test_wgmma_fp16"] == "failed", out
    assert took < 120, took
    assert grew < 100 << 20, f"the grader's memory grew by {grew >> 20} MiB during the flood"


# ------------------------------------------------------------------------------ environment
PROBE = '''
import json, os, sys


def wgmma_group_clk(hw, rows, n, k, dtype="fp16", a_from_smem=True):
    raise RuntimeError("PRO" + "BE" + json.dumps({"env": dict(os.environ), "path": sys.path,
                                             "uid": os.getuid()}) + "EBO" + "RP")


def softmax_clk(hw, rows, block_n, masked=False):
    return 0.0
'''


def test_sandbox_env_holds_no_grader_paths(tmp_path, monkeypatch):
    """With EXERCISES_* and PYTHONPATH set in the grader's environment, the submission sees
    neither, no environment value names the grader's tree, and no sys.path entry lies in
    exercises/ or is the repository root.
    Fails against a grader that passes its environment on (`_LIMITS["env"] = dict(os.environ)`)."""
    monkeypatch.setenv("EXERCISES_SECRET_DIR", str(PKG / "ch00_rates" / "hidden"))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    root = submit(tmp_path, "ch00_rates", "rates.py", text=PROBE)
    res = grade(root, "ch00_rates")
    msg = next(t.message for t in res.tests if t.name == "test_wgmma_fp16")
    assert "PROBE" in msg and "EBORP" in msg, msg[-2000:]
    seen = json.loads(msg[msg.rindex("PROBE{") + 5:msg.rindex("}EBORP") + 1])
    env, path = seen["env"], seen["path"]
    bad = sorted(k for k in env if k.startswith(("EXERCISES", "PYTHON")) and k != "PYTHONHASHSEED")
    assert not bad, f"grader variables reached the sandbox: {bad}"
    leaks = sorted(k for k, v in env.items() if str(PKG) in v or v == str(ROOT))
    assert not leaks, f"environment values naming the grader's tree: {leaks}"
    inside = [p for p in path if p == str(ROOT) or p.startswith(str(PKG))]
    assert not inside, f"sys.path entries in the grader's tree: {inside}"
    if os.geteuid() == 0:
        assert seen["uid"] != 0, "the submission ran as root"
