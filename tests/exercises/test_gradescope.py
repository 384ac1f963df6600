"""The Gradescope autograder (`python -m exercises gradescope OUT.zip`), tried the way Gradescope
uses it: unpacked into a folder laid out as /autograder (``source/``, ``submission/``,
``results/``), ``setup.sh`` run to build its virtual environment, ``run_autograder`` run on a
submission, ``results/results.json`` read back.

* the zip's model is the course's: the same predictions, repr for repr, from a fresh interpreter
  in the unpacked ``source/``; every file the model and the grader's harness open in the
  instructor's tree is in the zip;
* the student-visible part of results.json (the top-level ``output``, the ``visible`` tests) does
  not change when hidden tests pass or fail or change their points;
* ``submission_root`` finds the work in a flat upload, a zipped folder, a repo copy;
* end to end, with Python 3.10 (Ubuntu 22.04's python3, Gradescope's default image) when this
  machine has one, and always with the interpreter running the tests: setup.sh (a venv, PyPI) and
  run_autograder give the source solutions full marks on the model and math exercises. triton and
  torch are left out (AUTOGRADER_KERNELS=0: 0.5 GB, and the CPU torch comes from
  download.pytorch.org); the Gluon and tl exercises are graded, without them, to 0.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from exercises.grading import report, runner
from exercises.grading.release import (
    REQUIREMENTS_AUTOGRADER,
    needs_kernels,
    gradescope_zip,
    submission_root,
)
from exercises.grading.source import submission_files

PKG = runner.PACKAGE
ROOT = runner.ROOT


@pytest.fixture(scope="module")
def autograder_zip(tmp_path_factory) -> Path:
    return gradescope_zip(tmp_path_factory.mktemp("gs") / "autograder.zip")


def unpack(zpath: Path, dest: Path) -> Path:
    """dest laid out as Gradescope's /autograder: source/ (the zip), submission/, results/."""
    for d in ("source", "submission", "results"):
        (dest / d).mkdir(parents=True)
    with zipfile.ZipFile(zpath) as z:
        for info in z.infolist():
            z.extract(info, dest / "source")
            mode = info.external_attr >> 16
            if mode:
                os.chmod(dest / "source" / info.filename, mode & 0o777)
    return dest


# ------------------------------------------------------------------------------ the zip
def test_zip_holds_the_grader_and_scripts_use_a_venv(autograder_zip, tmp_path):
    import tomllib
    z = zipfile.ZipFile(autograder_zip)
    names = set(z.namelist())
    assert {"setup.sh", "run_autograder", "requirements-autograder.txt",
            "requirements-kernels.txt", "exercises/__main__.py", "sim/engine.py"} <= names
    assert not any(n.startswith("exercises/wrong/") or "__pycache__" in n for n in names)
    salt = z.getinfo("exercises/grading/SEED_SALT")     # each run starts from the image: the
    assert z.read(salt).decode().strip() == runner.seed_salt()    # salt the instructor's tree has
    assert (salt.external_attr >> 16) & 0o777 == 0o600
    for ex in runner.exercises():          # every exercise's tests and solutions, hidden included
        for f in (PKG / ex).rglob("*"):
            if f.is_file() and "__pycache__" not in f.parts:
                assert f"exercises/{f.relative_to(PKG)}" in names, f
    setup = z.read("setup.sh").decode()
    run = z.read("run_autograder").decode()
    # PEP 668: nothing is pip-installed into the system python; run_autograder uses the venv's
    assert "-m venv" in setup and "pip3 install" not in setup
    assert "--break-system-packages" not in setup
    assert '"$VPY" -m pip install' in setup and 'PY="$AG/venv/bin/python"' in run
    for script in (setup, run):
        assert 'AG="${AUTOGRADER_ROOT:-/autograder}"' in script
    assert '-m exercises grade "$SUB" --gradescope "$AG/results/results.json"' in run
    for info in z.infolist():
        if info.filename in ("setup.sh", "run_autograder"):
            assert (info.external_attr >> 16) & 0o111, info.filename
            assert subprocess.run(["bash", "-n", "-c", z.read(info).decode()],
                                  check=False).returncode == 0, info.filename
    # the autograder's pins are the course's (pyproject's dependencies and test extra)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    want = {d.split("#")[0].strip().replace(" ", "") for d in
            project["dependencies"] + project["optional-dependencies"]["test"]}
    got = [ln.strip() for ln in REQUIREMENTS_AUTOGRADER.splitlines() if ln.strip()]
    assert got and set(got) <= want, set(got) - want
    assert {g.split("=")[0].split(">")[0].split("<")[0] for g in got} == {
        "simpy", "numpy", "pytest", "pytest-timeout"}


MODEL_CASES = [("H200", "AttentionConfig(variant='fa3', **TAB2)"),
               ("H200", "AttentionConfig(variant='ws', **TAB2)"),
               ("H200", "AttentionConfig(variant='fa2', seqlen=2048, causal=True)"),
               ("H100", "AttentionConfig(variant='fa3', **TAB2)"),
               ("H100", "AttentionConfig(variant='ws_pingpong', headdim=64, seqlen=4096)"),
               ("B200", "AttentionConfig(variant='overlap3', seqlen=1024)"),
               ("H200", "GemmConfig(variant='ws_pingpong')"),
               ("H100", "GemmConfig(variant='pipelined', m=4096, n=4096, k=4096, dtype='fp8')")]
# Records every file opened below the tree (audit hook: open() and the imports' open_code; not
# its .venv or other hidden folders), then prints the tree's sim, the predictions and the files.
PROBE = """\
import json, os, sys
tree = os.path.realpath(sys.argv[1])
opened = set()
def hook(event, args):
    if event == "open" and isinstance(args[0], (str, bytes)):
        p = os.path.realpath(os.fsdecode(args[0]))
        rel = os.path.relpath(p, tree)
        if p.startswith(tree + os.sep) and not rel.startswith(".") and "site-packages" not in p:
            opened.add(rel)
sys.addaudithook(hook)
import sim
from sim import *
from sim.paper import TAB2
import exercises.grading.harness
preds = [repr(predict(eval(c), eval(hw))) for hw, c in json.loads(sys.argv[2])]
print(json.dumps({"sim": sim.__file__, "preds": preds, "opened": sorted(opened)}))
"""


def probe(tree: Path, pycache: Path) -> dict:
    """Run PROBE in a fresh interpreter that imports from `tree` (its sources: no cached
    bytecode, so every module read shows as its .py)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(PYTHONPATH=str(tree), PYTHONHASHSEED="0", PYTHONDONTWRITEBYTECODE="1",
               PYTHONPYCACHEPREFIX=str(pycache))
    p = subprocess.run([sys.executable, "-c", PROBE, str(tree), json.dumps(MODEL_CASES)], cwd=tree,
                       env=env, capture_output=True, text=True, timeout=600, check=False)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.splitlines()[-1])


def test_unpacked_zip_predicts_as_the_instructors_tree(autograder_zip, tmp_path):
    """The zip carries everything the model and the harness read (they open no data file outside
    it), and its model predicts exactly what the instructor's tree does, config for config."""
    ag = unpack(autograder_zip, tmp_path / "autograder")
    src = ag / "source"
    mine, theirs = probe(ROOT, tmp_path / "pyc1"), probe(src, tmp_path / "pyc2")
    assert Path(mine["sim"]).resolve().is_relative_to(ROOT.resolve())
    assert Path(theirs["sim"]).resolve().is_relative_to(src.resolve()), theirs["sim"]
    assert theirs["preds"] == mine["preds"] and len(mine["preds"]) == len(MODEL_CASES)
    names = set(zipfile.ZipFile(autograder_zip).namelist())
    assert "sim/engine.py" in mine["opened"]           # the hook saw the imports
    missing = [f for f in mine["opened"] if f not in names]
    assert not missing, f"read by the model or the harness but not in the zip: {missing}"


# What Python 3.11+ added that sim/ and the grader must not use (Gradescope's default image,
# Ubuntu 22.04, has 3.10): syntax (`except*`, ...) through ast's feature_version, and the standard
# library's new names. The end-to-end test below runs them under 3.10 where there is one.
NEW_IN_311 = {"tomllib": None,
              "typing": {"Self", "LiteralString", "Never", "assert_never", "reveal_type",
                         "Required", "NotRequired", "TypeVarTuple", "Unpack", "assert_type",
                         "dataclass_transform", "override"},
              "enum": {"StrEnum", "verify", "ReprEnum", "EnumCheck", "global_enum"},
              "datetime": {"UTC"}, "itertools": {"batched"}, "asyncio": {"TaskGroup", "timeout"},
              "contextlib": {"chdir"}, "hashlib": {"file_digest"}, "builtins": {
                  "ExceptionGroup", "BaseExceptionGroup"}}


def test_sim_and_grader_are_python310(autograder_zip):
    import ast
    z = zipfile.ZipFile(autograder_zip)
    found = []
    for name in z.namelist():
        if not name.endswith(".py"):
            continue
        tree = ast.parse(z.read(name), name, feature_version=(3, 10))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found += [(name, a.name) for a in node.names if a.name == "tomllib"]
            elif isinstance(node, ast.ImportFrom) and node.module in NEW_IN_311:
                new = NEW_IN_311[node.module]
                found += [(name, f"{node.module}.{a.name}") for a in node.names
                          if new is None or a.name in new]
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                new = NEW_IN_311.get(node.value.id)
                if new and node.attr in new:
                    found.append((name, f"{node.value.id}.{node.attr}"))
            elif isinstance(node, ast.Name) and node.id in NEW_IN_311["builtins"]:
                found.append((name, node.id))
            elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_note":
                found.append((name, "BaseException.add_note"))
    assert not found, found
    assert sum(n.endswith(".py") for n in z.namelist()) > 40


# ------------------------------------------------------------------------------ results.json
def _results(hidden_outcomes: tuple[str, str],
             hidden_points: float = 2.0) -> list[runner.ExerciseResult]:
    a = runner.ExerciseResult("ch01_ring", [
        runner.TestResult("t::pub_ok", "test_pub_ok", 2, "passed", doc="checks one thing"),
        runner.TestResult("t::pub_bad", "test_pub_bad", 1, "failed", "AssertionError: slot 3 != 2"),
        runner.TestResult("t::sec_a", "test_sec_a", hidden_points, hidden_outcomes[0],
                   "" if hidden_outcomes[0] == "passed" else "AssertionError: secret 7",
                   hidden=True, doc="hidden doc"),
        runner.TestResult("t::gpu", "test_gpu", 3, "skipped", gpu=True)])
    b = runner.ExerciseResult("ch05_idle", [
        runner.TestResult("u::pub", "test_pub", 1, "passed"),
        runner.TestResult("u::sec_b", "test_sec_b", 1, hidden_outcomes[1],
                   "" if hidden_outcomes[1] == "passed" else "secret failure", hidden=True)])
    c = runner.ExerciseResult("ch03_pingpong", [], error="no tests were collected (exit status 2)")
    return [a, b, c]


def student_view(gs: dict) -> str:
    """What a student sees before the grades are published: the top-level output and the visible
    tests (Gradescope hides the total score while any test is not visible)."""
    assert gs["stdout_visibility"] == "hidden"
    shown = [{k: t.get(k) for k in ("name", "score", "max_score", "status", "output")}
             for t in gs["tests"] if t.get("visibility", gs["visibility"]) == "visible"]
    return json.dumps({"output": gs["output"], "tests": shown}, sort_keys=True)


def test_gradescope_output_shows_public_results_only():
    views, scores = set(), set()
    for outcomes in (("passed", "passed"), ("failed", "passed"), ("failed", "failed")):
        for pts in (2.0, 5.0):
            gs = report.gradescope(_results(outcomes, pts), released=False)
            json.dumps(gs)
            hidden = [t for t in gs["tests"] if "(hidden)" in t["name"]]
            assert len(hidden) == 2 and all(t["visibility"] == "after_published" for t in hidden)
            assert all(t["visibility"] == "visible" for t in gs["tests"] if t not in hidden)
            assert gs["score"] == sum(t["score"] for t in gs["tests"])    # hidden points count
            views.add(student_view(gs))
            scores.add(gs["score"])
    assert len(views) == 1, "the student-visible results depend on the hidden tests"
    assert len(scores) > 1                             # ... while the grade does
    [view] = views
    out = json.loads(view)["output"]
    assert out.startswith("Public tests: 3/4 points, 2 of 3 tests passed")
    assert "ch03_pingpong" in out and "published" in out
    for secret in ("secret", "hidden doc", "test_sec", "/7", "/10"):     # 7, 10: the totals
        assert secret not in view, secret
    # all public tests pass: the output says so, and says nothing of the hidden ones' outcome
    ok = _results(("failed", "failed"))[:1]
    ok[0].tests[1].outcome = "passed"
    out = report.gradescope(ok, released=False)["output"]
    assert out.startswith("Public tests: 3/3 points, 2 of 2 tests passed.") and "fail" not in out
    # published: a failed hidden test shows its statement and that it failed, never its message
    gs = report.gradescope(_results(("failed", "failed")), released=False)
    after = [t for t in gs["tests"] if t["visibility"] == "after_published"]
    assert all(t["status"] == "failed" and report.HIDDEN_FAILED in t["output"] for t in after)
    assert "hidden doc" in after[0]["output"]
    assert not any("secret" in t["output"] for t in after), after
    # a released tree (no hidden tests): no word about them
    released = report.gradescope(_results(("passed", "passed"))[1:2], released=True)
    assert "hidden" not in released["output"].lower()


# ------------------------------------------------------------------------------ submission
def _write_flat(folder: Path, exs: list[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for ex in exs:
        for f in submission_files(PKG / ex):
            shutil.copyfile(PKG / ex / f, folder / Path(f).name)


def _write_repo(repo: Path, exs: list[str]) -> None:
    for ex in exs:
        (repo / "exercises" / ex).mkdir(parents=True, exist_ok=True)
        for f in submission_files(PKG / ex):
            shutil.copyfile(PKG / ex / f, repo / "exercises" / ex / f)
    (repo / "README.md").write_text("my repo\n")
    (repo / "sim").mkdir(exist_ok=True)


def test_submission_root_finds_the_work(tmp_path):
    exs = runner.exercises()
    cases = {}
    s = tmp_path / "flat"                                 # the files dragged in, flat
    _write_flat(s, exs)
    cases[s] = s
    s = tmp_path / "one_folder"                           # a zipped folder of the files
    _write_flat(s / "hw5", exs)
    (s / "__MACOSX" / "hw5").mkdir(parents=True)
    _write_flat(s / "__MACOSX" / "hw5", exs[:1])
    cases[s] = s / "hw5"
    s = tmp_path / "repo"                                 # the repo itself (GitHub submission)
    _write_repo(s, exs)
    cases[s] = s
    s = tmp_path / "zipped_repo"                          # a zip of the repo's folder, a stray file
    _write_repo(s / "course-main", exs)
    (s / "notes.txt").write_text("x\n")
    cases[s] = s / "course-main"
    s = tmp_path / "exercises_only"                       # its exercises/ folder
    _write_repo(s, exs[:3])
    cases[s / "exercises"] = s / "exercises"
    s = tmp_path / "deep"                                 # some exercises flat, deeper
    _write_flat(s / "a" / "b", exs[2:4])
    cases[s] = s / "a" / "b"
    s = tmp_path / "empty"
    s.mkdir()
    (s / "essay.txt").write_text("no code\n")
    cases[s] = s
    for upload, want in cases.items():
        got = submission_root(upload)
        assert got == want, (upload.name, got)
    for upload in (tmp_path / "one_folder", tmp_path / "zipped_repo"):
        root = submission_root(upload)
        assert all(runner.find_submission(root, ex) is not None for ex in exs), upload.name
        assert all(runner.find_submission(upload, ex) is None for ex in exs), upload.name


# ------------------------------------------------------------------------------ end to end
def _python310() -> str | None:
    for cand in ("/root/.pyenv/versions/3.10.13/bin/python3.10", shutil.which("python3.10")):
        if cand and Path(cand).exists():
            p = subprocess.run([cand, "-c", "import sys; print(sys.version_info[:2] == (3, 10))"],
                               capture_output=True, text=True, check=False)
            if p.returncode == 0 and p.stdout.strip() == "True":
                return cand
    return None


def _base_python() -> str:
    """The interpreter running the tests, outside any venv it may sit in."""
    base = getattr(sys, "_base_executable", None) or sys.executable
    return base if Path(base).exists() else sys.executable


@pytest.mark.slow
@pytest.mark.timeout(1500)
@pytest.mark.parametrize("which", ["python3.10", "current"])
def test_setup_and_run_autograder(which, autograder_zip, tmp_path):
    if which == "python3.10":
        python = _python310()
        if python is None:
            pytest.skip("no python3.10 on this machine (looked for "
                        "/root/.pyenv/versions/3.10.13/bin/python3.10 and python3.10 on PATH); "
                        "the 'current' case runs the same flow with this interpreter")
    else:
        python = _base_python()
    ag = unpack(autograder_zip, tmp_path / "autograder")
    exs = runner.exercises()
    if which == "python3.10":               # a zipped folder of the files: submission/hw/<files>
        _write_flat(ag / "submission" / "hw", exs)
    else:                                   # a zip of the repo's folder: submission/repo-main/...
        _write_repo(ag / "submission" / "repo-main", exs)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSAFEPATH")}
    env.update(AUTOGRADER_ROOT=str(ag), AUTOGRADER_PYTHON=python, AUTOGRADER_KERNELS="0",
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    p = subprocess.run(["bash", str(ag / "source" / "setup.sh")], cwd=ag, env=env,
                       capture_output=True, text=True, timeout=900, check=False)
    assert p.returncode == 0, (p.stdout[-3000:], p.stderr[-3000:])
    vpy = ag / "venv" / "bin" / "python"
    version = subprocess.run([str(vpy), "-c", "import sys; print(*sys.version_info[:2])"],
                             capture_output=True, text=True, check=True).stdout.split()
    if which == "python3.10":
        assert version == ["3", "10"], version
    assert "autograder ready" in p.stdout

    # Gradescope copies run_autograder to /autograder/run_autograder and runs it from there
    shutil.copy2(ag / "source" / "run_autograder", ag / "run_autograder")
    q = subprocess.run([str(ag / "run_autograder")], cwd=ag, env=env, capture_output=True,
                       text=True, timeout=1200, check=False)
    results = ag / "results" / "results.json"
    assert q.returncode == 0 and results.is_file(), (q.stdout[-3000:], q.stderr[-3000:])
    assert (f"grading {ag / 'submission'}" + ("/hw" if which == "python3.10" else "/repo-main")
            ) in q.stdout
    gs = json.loads(results.read_text())
    assert gs["stdout_visibility"] == "hidden"
    assert gs["score"] == sum(t["score"] for t in gs["tests"])
    by_ex: dict[str, list[dict]] = {}
    for t in gs["tests"]:
        by_ex.setdefault(t["name"].split(":")[0], []).append(t)
        hidden = t["name"].endswith("(hidden)")
        assert t["visibility"] == ("after_published" if hidden else "visible"), t
    assert set(by_ex) == set(exs), set(exs) ^ set(by_ex)        # every exercise graded
    model = [ex for ex in exs if not needs_kernels(PKG / ex)]
    assert len(model) >= 5
    for ex in model:                        # the source solutions: full marks, hidden tests too
        assert any(t["name"].endswith("(hidden)") for t in by_ex[ex]), ex
        for t in by_ex[ex]:
            assert t["status"] == "passed" and t["score"] == t["max_score"] > 0, \
                (t, q.stdout[-3000:])
    visible = [t for t in gs["tests"] if t["visibility"] == "visible"]
    got, most = (report._fmt(sum(t[k] for t in visible)) for k in ("score", "max_score"))
    assert gs["output"].startswith(f"Public tests: {got}/{most} points"), gs["output"]
