"""One submission, every way of grading it: `grade` (the API and the CLI's --json), `grade
--gradescope`'s results.json, the Gradescope zip's own grader (unpacked as /autograder is laid
out), the student's released copy (its public tests) and `grade-class` all give each test the
same outcome and each exercise the same points.

The submission mixes a right answer (ch01), a known-wrong one (ch00: the masked block costs the
same) and a missing file (ch05), so that passes and failures both have to agree."""
from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from exercises.grading import runner
from exercises.grading.release import gradescope_zip, release

PKG = runner.PACKAGE
ONLY = ["ch00_rates", "ch01_ring", "ch05_idle"]


@pytest.fixture(scope="module")
def submission(tmp_path_factory) -> Path:
    sub = tmp_path_factory.mktemp("agree") / "alice"
    (sub / "ch00_rates").mkdir(parents=True)
    shutil.copyfile(PKG / "wrong" / "ch00_masked_same_cost.py", sub / "ch00_rates" / "rates.py")
    (sub / "ch01_ring").mkdir()
    shutil.copyfile(PKG / "ch01_ring" / "ring.py", sub / "ch01_ring" / "ring.py")
    (sub / "ch05_idle").mkdir()                       # handed in nothing
    return sub


@pytest.fixture(scope="module")
def reference(submission) -> dict:
    out = {(r.name, t.name): t.outcome for r in runner.grade(submission, only=ONLY, jobs=1)
           for t in r.tests}
    outcomes = set(out.values())
    assert outcomes == {"passed", "failed"}, outcomes        # both kinds, or nothing is shown
    return out


def _cli(cwd: Path, sub: Path, gs: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PYTHONPATH"] = str(cwd)
    args = [sys.executable, "-m", "exercises", "grade", str(sub), "--json", "--gradescope", str(gs)]
    for ex in ONLY:
        args += ["--only", ex]
    p = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600,
                       check=False)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout)


def _from_json(d: dict) -> dict:
    return {(e["name"], t["name"]): t["outcome"] for e in d["exercises"] for t in e["tests"]}


def _from_gradescope(gs: Path) -> dict:
    out = {}
    for t in json.loads(gs.read_text())["tests"]:
        ex, name = t["name"].removesuffix(" (hidden)").split(": ")
        out[ex, name] = t["status"]
    return out


def test_cli_and_gradescope_agree(submission, reference, tmp_path):
    d = _cli(runner.ROOT, submission, tmp_path / "results.json")
    assert _from_json(d) == reference
    assert _from_gradescope(tmp_path / "results.json") == reference


def test_the_gradescope_zip_agrees(submission, reference, tmp_path):
    ag = tmp_path / "autograder"
    with zipfile.ZipFile(gradescope_zip(tmp_path / "autograder.zip")) as z:
        z.extractall(ag / "source")
    shutil.copytree(submission, ag / "submission")
    d = _cli(ag / "source", ag / "submission", ag / "results" / "results.json")
    assert _from_json(d) == reference
    assert _from_gradescope(ag / "results" / "results.json") == reference


def test_the_release_agrees_on_its_public_tests(submission, reference, tmp_path):
    rel = release(tmp_path / "student")
    d = _cli(rel, submission, tmp_path / "results.json")
    public = {k: v for k, v in reference.items()
              if not any(t.hidden for r in [runner.collect(k[0])] for t in r if t.name == k[1])}
    assert _from_json(d) == public


def test_grade_class_agrees(submission, reference, tmp_path):
    from exercises.grading.grade_class import grade_class
    klass = tmp_path / "class"
    shutil.copytree(submission, klass / "alice")
    with zipfile.ZipFile(klass / "bob.zip", "w") as z:             # the same work, zipped
        for p in submission.rglob("*"):
            z.write(p, Path("bob") / p.relative_to(submission))
    grade_class(klass, tmp_path / "out", jobs=2, only=ONLY, quiet=True)
    rows = {r["student"]: r for r in csv.DictReader((tmp_path / "out" / "gradebook.csv").open())}
    points = {(ex, c.name): c.points for ex in ONLY for c in runner.collect(ex)}
    for student in ("alice", "bob"):
        for ex in ONLY:
            want = sum(points[k] for k, v in reference.items() if k[0] == ex and v == "passed")
            assert float(rows[student][ex]) == want, (student, ex, rows[student])
