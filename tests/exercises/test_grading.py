"""Self-tests of the exercises and their grader.

* the source (solutions in place) scores full marks, hidden tests included;
* the released stubs score zero under the instructor's grader: every graded test fails, so none
  of them is assertion-free;
* every known-wrong submission in exercises/wrong/ loses exactly the tests its header names
  (``# loses:``) and keeps the rest — including the adversarial ones that hang, exit, flood the
  output or monkeypatch the reference;
* the release holds no solution or hidden-test text, says "public tests passed", and carries a
  GitHub Classroom workflow; the Gradescope results.json has the documented shape.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from exercises.grading import report, runner
from exercises.grading.release import public_tests, release
from exercises.grading.source import MarkerError, blocks, meta, solution_lines, strip

PKG = runner.PACKAGE
WRONG = sorted((PKG / "wrong").glob("*.py"))


def header(path: Path) -> dict:
    h = {}
    for line in path.read_text().splitlines():
        if not line.startswith("# ") or ":" not in line:
            break
        k, v = line[2:].split(":", 1)
        h[k.strip()] = v.strip()
    return h


def by_name(results):
    return {t.name: t for r in results for t in r.tests}


@pytest.fixture(scope="session")
def released(tmp_path_factory):
    return release(tmp_path_factory.mktemp("release") / "student")


@pytest.fixture(scope="session")
def source_results():
    return runner.grade(PKG, test_timeout=120)


# ------------------------------------------------------------------------------ full marks
def test_source_scores_full_marks(source_results):
    assert [r.name for r in source_results] == runner.exercises()
    assert len(source_results) >= 6
    for r in source_results:
        assert not r.error, (r.name, r.error)
        assert r.tests, f"{r.name}: no tests"
        for t in r.tests:
            assert t.points > 0, f"{r.name}::{t.name} has no points marker"
            if not (t.gpu and t.outcome == "skipped"):
                assert t.outcome == "passed", (r.name, t.name, t.message[-1500:])
    s = report.summary(source_results, released=False)
    assert s["score"] == s["max_score"] > 0
    assert s["hidden"]["max_score"] > 0 and s["verdict"] == "public and hidden tests passed"


def test_every_chapter_has_an_exercise():
    chapters = {meta(PKG / ex)["chapter"] for ex in runner.exercises()}
    assert {"00", "01", "02", "03", "04", "05"} <= chapters
    for ex in runner.exercises():
        m = meta(PKG / ex)
        assert (PKG / ex / "README.md").is_file(), ex
        for f in m["submission"]:
            assert blocks((PKG / ex / f).read_text(), "SOLUTION"), f"{ex}/{f} has no solution block"


def test_gradescope_results_shape(source_results):
    gs = report.gradescope(source_results, released=False)
    json.dumps(gs)
    assert gs["score"] == sum(t["score"] for t in gs["tests"])
    for t in gs["tests"]:
        assert {"name", "score", "max_score", "status", "visibility"} <= set(t)
        assert t["visibility"] == ("after_published" if "(hidden)" in t["name"] else "visible")
    assert any("(hidden)" in t["name"] for t in gs["tests"])
    table = report.table(source_results, released=False)
    assert "public and hidden tests passed" in table and "all tests passed" not in table


# ------------------------------------------------------------------------------ stubs
def test_released_stubs_score_zero(released):
    results = runner.grade(released, test_timeout=120)
    graded = [(r.name, t) for r in results for t in r.tests if t.outcome != "skipped"]
    assert len(graded) >= 25
    passed = [f"{n}::{t.name}" for n, t in graded if t.outcome == "passed"]
    assert not passed, f"stubs earn points (a test that cannot fail?): {passed}"
    assert sum(r.score for r in results) == 0


# ------------------------------------------------------------------------------ wrong submissions
def _grade_wrong(path: Path):
    h = header(path)
    if h.get("needs") == "root" and os.geteuid() != 0:
        return h, None       # off root nothing stops it: it would really run against this machine
    sub = Path(__import__("tempfile").mkdtemp(prefix="wrong-")) / h["exercise"]
    sub.mkdir(parents=True)
    shutil.copyfile(path, sub / h["file"])
    try:
        [res] = runner.grade(sub.parent, only=[h["exercise"]], jobs=1,
                             test_timeout=int(h.get("timeout", 60)))
    finally:
        shutil.rmtree(sub.parent, ignore_errors=True)
    return h, res


@pytest.fixture(scope="session")
def wrong_results():
    with ThreadPoolExecutor(2) as pool:
        return dict(zip([p.name for p in WRONG], pool.map(_grade_wrong, WRONG)))


def test_there_are_wrong_submissions():
    names = {p.stem for p in WRONG}
    for must in ("ch01_off_by_one_slot", "ch01_empty_own_parity", "ch02_producer_missing_wait",
                 "ch02_producer_expects_one_tile", "ch04_inverse_rescale",
                 "ch03_passes_after_scores", "ch02_consumer_missing_wait"):
        assert must in names
    exercises = [header(p)["exercise"] for p in WRONG]
    assert set(exercises) == set(runner.exercises()), "every exercise has a known-wrong submission"
    for ex in ("ch01_ring", "ch02_producer"):
        assert exercises.count(ex) >= 2, f"{ex}: at least two known-wrong submissions"


@pytest.mark.parametrize("name", [p.name for p in WRONG])
def test_wrong_submission_loses_exactly_its_tests(wrong_results, name):
    h, res = wrong_results[name]
    if res is None:
        pytest.skip("this cheat is stopped by the uid drop and the mount namespace, which need "
                    "root (CI and Gradescope run as root)")
    names = {t.name for t in res.tests}
    graded = {t.name for t in res.tests if t.outcome != "skipped"}
    loses = (graded if h["loses"] == "all" else set() if h["loses"] == "none"
             else {x.strip() for x in h["loses"].split(",")})
    maybe = {x.strip() for x in h.get("may-lose", "").split(",") if x.strip()}  # races
    assert loses | maybe <= names, f"header names unknown tests: {(loses | maybe) - names}"
    assert not res.error, res.error
    failed = {t.name for t in res.tests if t.outcome == "failed"} - maybe
    assert failed == loses & graded, (
        f"expected to lose {sorted(loses & graded)}, lost {sorted(failed)}: "
        + "; ".join(f"{t.name}: {t.message[-400:]}" for t in res.tests
                    if t.name in failed ^ (loses & graded)))
    assert res.score == sum(t.points for t in res.tests if t.outcome == "passed")
    assert res.score < res.max_score or h["loses"] == "none"


def test_ring_checks_judge_a_run_by_its_own_hardware():
    """ch01's checks take the barrier wake-up of the run's Hardware: a right ring on one whose
    barriers wake later than H100's (the hidden tests draw mbarrier_clk in 20-60 clk) breaks no
    rule, for every depth the hidden tests use (2-4: a consumer holds K_j and V_{j-1} at once)."""
    from sim import H100
    pub = runner._import(PKG / "ch01_ring" / "test_ring.py")
    ref = runner._import(PKG / "ch01_ring" / "hidden" / "test_hidden.py")._Reference
    hw = H100.with_(mbarrier_clk=60.0)
    assert hw.mbarrier_clk > max(H100.mbarrier_clk, H100.mbarrier_probe_clk)
    for stages in (2, 3, 4):
        r, slots, bad = pub.run_ring(ref, stages, 6, hw=hw, headdim=64, block_n=128)
        pub.assert_runs(r, slots, bad, 6, stages)


# ------------------------------------------------------------------------------ release
def test_release_has_no_solution_text(released):
    out = released / "exercises"
    assert not (out / "wrong").exists()
    assert (out / "RELEASED").is_file()
    text = {p: p.read_text(errors="replace") for p in out.rglob("*") if p.is_file()}
    for p, t in text.items():       # no marker line survives (the tooling names them in strings)
        marks = [ln for ln in t.splitlines() if ln.strip() in (
            "### BEGIN SOLUTION", "### END SOLUTION", "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS")]
        assert not marks, (p, marks)
    public = "\n".join(strip(p.read_text()) for p in PKG.rglob("*.py") if "wrong" not in p.parts)
    checked = 0
    for src in PKG.rglob("*.py"):
        if "wrong" in src.parts:
            continue
        s = src.read_text()
        for line in solution_lines(s):
            if line in public:
                continue             # a generic line the public code holds too
            checked += 1
            assert not any(line in t for t in text.values()), f"solution line leaked: {line!r}"
    for src in PKG.glob("ch*/hidden/*.py"):       # the code of hidden tests (READMEs may name
        for ln in src.read_text().splitlines():     # them and their points)
            ln = ln.strip()
            if len(ln) >= 12 and ln not in public and not ln.startswith(('"""', "#", "def test_")):
                checked += 1
                assert not any(ln in t for t in text.values()), f"hidden test code leaked: {ln!r}"
    assert checked >= 20
    for ex in runner.exercises():
        for f in meta(PKG / ex)["submission"]:
            assert "raise NotImplementedError" in (out / ex / f).read_text()


PLANTED = {
    # ch01's stream position (K_0, K_1, V_0, K_2, ...) under other names, in a model file
    "sim/attention/shared_lap.py": (
        "def place(block, which, count):\n"
        "    if which == \"V\":\n"
        "        return 2 * block + 2 if block + 1 < count else 2 * count - 1\n"
        "    return 2 * block - 1 if block else 0\n"),
    # ch03's FA3 hand-over (turn passed once Q·Kᵀ is issued, before its wait) in a schedule
    "sim/attention/fa3_turns.py": (
        "def consumer(cta, w):\n"
        "    for j in range(cta.n_blocks):\n"
        "        yield from cta.wait_turn(w, j)\n"
        "        s = cta.qk(w, j)\n"
        "        cta.pass_turn(w)\n"
        "        yield s\n"),
}


def test_release_fails_on_a_planted_leak(released):
    """The release as built has no leak (`release` ran the scan, which is fatal); a model file
    that holds ch01's parity under other names, or a schedule with ch03's hand-over, makes the
    same check fail, naming each (the idioms the course shares with the solutions do not)."""
    from exercises.grading.release import LeakError, check_whole_release
    check_whole_release(released)
    try:
        for rel, text in PLANTED.items():
            (released / rel).write_text(text)
        with pytest.raises(LeakError) as err:
            check_whole_release(released)
    finally:
        for rel in PLANTED:
            (released / rel).unlink(missing_ok=True)
    msg = str(err.value)
    found = [line for line in msg.splitlines() if line.startswith("  LEAK")]
    assert found and all(any(rel in line for rel in PLANTED) for line in found), msg
    for block, where in (("ch01_ring/ring.py", "sim/attention/shared_lap.py"),
                         ("ch03_pingpong/pingpong.py", "sim/attention/fa3_turns.py")):
        assert any(line.startswith("  LEAK") and block in line and where in line
                   for line in msg.splitlines()), (block, msg)


def test_release_is_the_course(released):
    """The student copy holds the chapters and what they import and read, and splits its
    requirements: the model's need no torch and no triton."""
    root = runner.ROOT
    chapters = sorted(p.name for p in (root / "notebooks").glob("*.py"))
    assert "course.py" in chapters and len(chapters) >= 7
    assert sorted(p.name for p in (released / "notebooks").glob("*.py")) == chapters
    assert not list((released / "notebooks").glob("*.ipynb"))
    if (root / "notebooks" / "jupytext.toml").exists():
        assert (released / "notebooks" / "jupytext.toml").is_file()
    for d in ("sim", "records", "fidelity", "instruments", "kernels", "docs", "results"):
        assert (released / d).is_dir(), d
    assert not (released / "results" / "archive").exists()
    assert not list(released.rglob("__pycache__"))
    for f in (root / "results").glob("*.json"):
        assert (released / "results" / f.name).read_bytes() == f.read_bytes(), f.name
    req = (released / "requirements.txt").read_text().lower()
    kern = (released / "requirements-kernels.txt").read_text().lower()
    pkgs = [ln.split("#")[0].strip() for ln in req.splitlines() if ln.split("#")[0].strip()]
    assert not any(p.startswith(("torch", "triton")) for p in pkgs), pkgs
    assert {"simpy", "numpy", "matplotlib", "pytest"} <= {p.split("=")[0].split("<")[0].split(">")[0]
                                                         for p in pkgs}
    assert "triton==3.6.0" in kern and "torch" in kern
    readme = (released / "README.md").read_text()
    assert "requirements-kernels.txt" in readme and "notebooks/01_tma_and_the_ring.py" in readme
    # Lab as the README opens it: jupytext's viewer from the shipped config, checkpoints ignored
    from exercises.grading.release import LAB_LINE
    assert "jupyterlab" in req and LAB_LINE in readme
    overrides = json.loads((released / "jupyter-config/labconfig/default_setting_overrides.json")
                           .read_text())
    assert overrides["@jupyterlab/docmanager-extension:plugin"]["defaultViewers"]["python"] \
        == "Jupytext Notebook"
    assert ".ipynb_checkpoints/" in (released / ".gitignore").read_text().split()


def test_release_leaves_out_the_lab_notebook_and_grading_logs(released):
    """The lab notebook records how the hidden tests were built and which cheats got through,
    and a grading run's log shows the hidden tests' messages: the copy holds a note in the
    notebook's place and none of those logs (the course holds both, so this can fail)."""
    from exercises.grading.release import HIDDEN_MARK, NOTEBOOK_NOTE
    root = runner.ROOT / "results"
    assert "test_many_laps" in (root / "lab-notebook.md").read_text()
    logs = [p.relative_to(root) for p in root.rglob("*.log")
            if "archive" not in p.parts and HIDDEN_MARK in p.read_text(errors="replace")]
    assert logs, "no grading log in the course's results/: this test checks nothing"
    assert (released / "results" / "lab-notebook.md").read_text() == NOTEBOOK_NOTE
    for rel in logs:
        assert not (released / "results" / rel).exists(), rel
    for p in (released / "results").rglob("*"):
        if p.is_file() and p.suffix in (".log", ".txt", ".md"):
            assert HIDDEN_MARK not in p.read_text(errors="replace"), p


def test_a_gzipped_grading_log_is_left_out_too(tmp_path):
    """A grading log kept gzipped (``run.log.gz``, as results/logs/ keeps long ones) is read and
    left out like a plain one; a gzipped log of no grading run, a plain one and other files stay."""
    import gzip

    from exercises.grading.release import HIDDEN_MARK, drop_grading_logs
    logs = tmp_path / "results" / "logs"
    logs.mkdir(parents=True)
    graded = f"  FAIL test_many_laps  0/2 {HIDDEN_MARK}\n".encode()
    (logs / "grade.log.gz").write_bytes(gzip.compress(graded))
    (logs / "grade.txt").write_bytes(graded)
    (logs / "bench.log.gz").write_bytes(gzip.compress(b"fa3 595.1 TFLOP/s\n"))
    (logs / "bench.log").write_text("fa3 595.1 TFLOP/s\n")
    (logs / "broken.log.gz").write_bytes(b"not gzip")
    drop_grading_logs(tmp_path / "results")
    assert sorted(p.name for p in logs.iterdir()) == ["bench.log", "bench.log.gz", "broken.log.gz"]


def test_released_model_predicts_as_the_course(released):
    """The released `sim` is the course's: the same predictions for the H200 preset (FA3 tab. 2's
    shape) and the H100, digit for digit, in a fresh interpreter that imports it from the copy."""
    from sim import H100, H200, AttentionConfig, GemmConfig, predict
    from sim.paper import TAB2
    cases = [("H200", "AttentionConfig(variant='fa3', **TAB2)"),
             ("H200", "AttentionConfig(variant='ws', **TAB2)"),
             ("H100", "AttentionConfig(variant='fa3', **TAB2)"),
             ("H200", "GemmConfig(variant='ws_pingpong')")]
    names = {"H100": H100, "H200": H200, "TAB2": TAB2, "AttentionConfig": AttentionConfig,
             "GemmConfig": GemmConfig}
    want = [repr(predict(eval(c, names), names[hw]).tflops) for hw, c in cases]
    code = ("import sim; from sim import *; from sim.paper import TAB2; print(sim.__file__); "
            + "; ".join(f"print(repr(predict({c}, {hw}).tflops))" for hw, c in cases))
    env = {**__import__("os").environ, "PYTHONPATH": str(released)}
    p = subprocess.run([sys.executable, "-c", code], cwd=released, capture_output=True, text=True,
                       env=env, timeout=300, check=False)
    assert p.returncode == 0, p.stderr[-2000:]
    out = p.stdout.split()
    assert Path(out[0]).resolve().is_relative_to(released.resolve()), out[0]
    assert out[1:] == want, (cases, out[1:], want)


def test_release_classroom_workflow(released):
    yaml = pytest.importorskip("yaml")
    wf = yaml.safe_load((released / ".github/workflows/classroom.yml").read_text())
    steps = wf["jobs"]["run-autograding-tests"]["steps"]
    graders = [s for s in steps if "autograding-command-grader" in s.get("uses", "")]
    expected = [(ex, n, p) for ex in runner.exercises(released / "exercises")
                for f in sorted((released / "exercises" / ex).glob("test_*.py"))
                for n, p in public_tests(f.read_text())]
    assert len(graders) == len(expected) >= 20
    assert sum(s["with"]["max-score"] for s in graders) == sum(p for *_, p in expected)
    reporter = steps[-1]
    assert "autograding-grading-reporter" in reporter["uses"]
    assert reporter["with"]["runners"].split(",") == [s["id"] for s in graders]


def test_flat_upload_is_found(tmp_path):
    """A Gradescope upload of the bare files: each exercise finds its own file."""
    shutil.copyfile(PKG / "ch05_idle" / "idle.py", tmp_path / "idle.py")
    assert runner.find_submission(tmp_path, "ch05_idle") == tmp_path
    assert runner.find_submission(tmp_path, "ch01_ring") is None
    [res] = runner.grade(tmp_path, only=["ch05_idle"], jobs=1)
    assert res.score == res.max_score > 0


def test_released_copy_says_public_tests_passed(released, tmp_path):
    """A student's copy with a right answer: its own grader says "public tests passed"."""
    copy = tmp_path / "student"
    shutil.copytree(released, copy)
    ex = "ch04_online_softmax"
    shutil.copyfile(PKG / ex / "online_softmax.py", copy / "exercises" / ex / "online_softmax.py")
    p = subprocess.run([sys.executable, "-m", "exercises", "grade", "--only", ex, "--json"],
                       cwd=copy, capture_output=True, text=True, timeout=300,
                       env={**__import__("os").environ, "PYTHONPATH": str(copy)}, check=False)
    assert p.returncode == 0, p.stderr[-2000:]
    d = json.loads(p.stdout)
    assert d["score"] == d["max_score"] > 0
    assert d["verdict"].startswith("public tests passed") and d["hidden_tests_removed"]
    assert d["hidden"]["max_score"] == 0


# ------------------------------------------------------------------------------ conventions
def test_strip_replaces_blocks_and_rejects_bad_markers():
    src = "def f():\n    x = 1\n    ### BEGIN SOLUTION\n    return x + 41\n    ### END SOLUTION\n"
    out = strip(src)
    assert "return x + 41" not in out and "    raise NotImplementedError" in out
    with pytest.raises(MarkerError, match="hidden/ folder"):     # hidden tests live in hidden/
        strip("a = 1\n### BEGIN HIDDEN TESTS\ndef test_x(): pass\n### END HIDDEN TESTS\n")
    for bad in ("### BEGIN SOLUTION\nx\n", "### END SOLUTION\n",
                "### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION\n"):
        with pytest.raises(MarkerError):
            strip(bad)


def test_hidden_folder_and_points_reach_the_report(tmp_path):
    """The runner on its own: points from the marker, tests in a hidden/ folder flagged hidden
    (and left out by release), one result per test, in file order."""
    ex = tmp_path / "ch09_demo"
    (ex / "hidden").mkdir(parents=True)
    (ex / "exercise.json").write_text('{"title": "demo", "chapter": "09", "submission": []}')
    (ex / "test_pub.py").write_text(
        "import pytest\n\n@pytest.mark.points(3)\ndef test_a():\n    assert 1\n\n"
        "@pytest.mark.points(2)\ndef test_b():\n    assert 0, 'b is wrong'\n")
    (ex / "hidden" / "test_sec.py").write_text(
        "import pytest\n\n@pytest.mark.points(4)\ndef test_c():\n    assert 1\n")
    cases = runner.collect("ch09_demo", tmp_path)
    assert [(c.name, c.points, c.hidden) for c in cases] == [
        ("test_a", 3, False), ("test_b", 2, False), ("test_c", 4, True)]
    from exercises.grading.student import Student
    st = Student({})
    outcomes = {c.name: runner.run_case(c, st, 10) for c in cases}
    assert {n: o for n, (o, _) in outcomes.items()} == {
        "test_a": "passed", "test_b": "failed", "test_c": "passed"}
    assert "b is wrong" in outcomes["test_b"][1]


def test_gradescope_zip(tmp_path):
    import zipfile

    from exercises.grading.release import gradescope_zip
    z = zipfile.ZipFile(gradescope_zip(tmp_path / "autograder.zip"))
    names = set(z.namelist())
    assert {"run_autograder", "setup.sh", "requirements.txt", "exercises/__main__.py",
            "sim/engine.py"} <= names
    assert not any(n.startswith("exercises/wrong/") for n in names)
    # the autograder keeps the solutions' tests, hidden ones included
    assert "exercises/ch02_producer/hidden/test_hidden.py" in names
    assert {"requirements-kernels.txt"} <= names and "triton" in z.read("setup.sh").decode() + \
        z.read("requirements-kernels.txt").decode()
    assert "-m exercises grade" in z.read("run_autograder").decode()


def test_release_holds_no_hidden_value(released, tmp_path):
    """Every number a hidden test draws or computes (inputs, references, its Hardware) is absent
    from the whole released tree, the Classroom workflow included; a value planted in a copy of
    the release is found."""
    from exercises.grading.release import hidden_values, hidden_values_in
    values = hidden_values()
    where = {w.split(":")[0] for w, _ in values}
    assert {"ch00_rates/hidden/test_hidden.py", "ch05_idle/hidden/test_hidden.py",
            "ch02_producer/hidden/test_hidden.py"} <= where, where
    assert not hidden_values_in(released, values)
    assert not list(released.rglob("hidden"))
    copy = tmp_path / "leaky"
    shutil.copytree(released / ".github", copy / ".github")
    wf = copy / ".github" / "workflows" / "classroom.yml"
    wf.write_text(wf.read_text() + f"\n# {values[0][1]}\n")
    assert hidden_values_in(copy, values), "a planted hidden value was not found"


def test_exercise_readmes_state_the_points_the_grader_gives():
    """Each exercise README's title says "N public + M hidden points" (and "+G on a Hopper GPU")
    and its table lists every test with its points, as the grader collects them."""
    import re
    for ex in runner.exercises():
        text = (PKG / ex / "README.md").read_text()
        cases = runner.collect(ex)
        pub = sum(c.points for c in cases if not c.hidden and not c.gpu)
        hid = sum(c.points for c in cases if c.hidden and not c.gpu)
        gpu = sum(c.points for c in cases if c.gpu)
        title = text.splitlines()[0]
        m = re.search(r"(\d+) (?:public|CPU)(?: \+ (\d+) hidden)? points(?:; \+(\d+) on a Hopper GPU)?",
                      title)
        assert m, f"{ex}: the title names no points: {title}"
        assert (int(m[1]), int(m[2] or 0), int(m[3] or 0)) == (pub, hid, gpu), (ex, title)
        rows = dict(re.findall(r"^\|[^|]*`(test_\w+)`[^|]*\|\s*(\d+)\s*\|", text, re.MULTILINE))
        assert {c.name: int(c.points) for c in cases} == {k: int(v) for k, v in rows.items()}, ex


def test_released_copy_without_triton_leaves_the_kernel_exercises_out(monkeypatch):
    """A student's copy without requirements-kernels.txt: the Gluon and tl exercises are named
    once, not graded and out of the maximum; the model and math exercises grade as before."""
    from exercises.grading.release import needs_kernels
    kernel_exs = [ex for ex in runner.exercises() if needs_kernels(PKG / ex)]
    model_ex = next(ex for ex in runner.exercises() if not needs_kernels(PKG / ex))
    assert kernel_exs, "no exercise needs triton: the rule tests nothing"
    monkeypatch.setattr(runner, "released", lambda tree=PKG: True)
    monkeypatch.setattr(runner, "kernels_installed", lambda: False)
    results = runner.grade(PKG, only=[kernel_exs[0], model_ex], jobs=1)
    by = {r.name: r for r in results}
    assert by[kernel_exs[0]].not_installed and by[kernel_exs[0]].max_score == 0
    assert not by[model_ex].not_installed and by[model_ex].score == by[model_ex].max_score > 0
    s = report.summary(results, released=True)
    assert s["max_score"] == by[model_ex].max_score and s["not_installed"] == [kernel_exs[0]]
    lines = report.table(results, released=True).splitlines()
    said = [ln for ln in lines if kernel_exs[0] in ln]
    assert len(said) == 1 and "requirements-kernels.txt" in said[0], said
