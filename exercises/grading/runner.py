"""Run the graders: one pytest subprocess per exercise, restarted past a crash.

Layout of one grading run: the *grader tree* is the ``exercises/`` package this file belongs to
(the instructor's source with hidden tests, or a student's released copy with public tests only).
For each exercise ``chNN_*`` the runner copies that exercise's folder from the grader tree into a
fresh stage directory, then copies the *submission files* (the ones that carry solution blocks)
over it from ``PATH``. The submission never sees the grader tree's solutions, and the tests are
already copied before any submission code runs.

A submission that hangs, crashes, floods the output or exits the interpreter loses the test it
was in: pytest-timeout stops a hung test; a subprocess that dies (``os._exit``, a segfault, the
wall-clock cap) leaves the runner a ``start`` event without its ``result``;
that test is scored 0 and pytest is started again on the tests that have not run.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from .source import SOLUTION_BEGIN, submission_files

PACKAGE = Path(__file__).resolve().parents[1]          # .../exercises
ROOT = PACKAGE.parent                                   # the repo root (sim/ lives here)
DEFAULT_TEST_TIMEOUT = 120                              # seconds per test (pytest-timeout)
OUTPUT_CAP = 64 * 1024 * 1024                           # bytes a grading subprocess may write
try:
    import pytest_timeout  # noqa: F401
    HAVE_TIMEOUT = True
except ImportError:  # pragma: no cover
    HAVE_TIMEOUT = False


def exercises(tree: Path = PACKAGE) -> list[str]:
    return sorted(p.name for p in tree.iterdir()
                  if p.is_dir() and p.name[:2] == "ch" and p.name[2:4].isdigit())


def released(tree: Path = PACKAGE) -> bool:
    return (tree / "RELEASED").exists()


@dataclass
class TestResult:
    nodeid: str
    name: str
    points: float
    outcome: str = "failed"          # passed | failed | skipped
    message: str = ""
    hidden: bool = False
    gpu: bool = False
    doc: str = ""

    @property
    def score(self) -> float:
        return self.points if self.outcome == "passed" else 0.0


@dataclass
class ExerciseResult:
    name: str
    tests: list[TestResult] = field(default_factory=list)
    error: str = ""
    seconds: float = 0.0

    @property
    def score(self) -> float:
        return sum(t.score for t in self.tests)

    @property
    def max_score(self) -> float:
        return sum(t.points for t in self.tests if t.outcome != "skipped")


def find_submission(path: Path, ex: str) -> Path | None:
    for cand in (path / "exercises" / ex, path / ex):
        if cand.is_dir():
            return cand
    if path.is_dir() and path.name == ex:
        return path
    files = submission_files(PACKAGE / ex)     # uploaded flat (Gradescope): the files alone
    if path.is_dir() and any((path / f).is_file() for f in files):
        return path
    return None


def stage(ex: str, submission: Path | None, dest: Path) -> Path:
    """Copy exercise `ex` from the grader tree to dest/ex and overlay the submission's files."""
    src = PACKAGE / ex
    out = dest / ex
    shutil.copytree(src, out, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for rel in submission_files(src):
        target = out / rel
        target.unlink(missing_ok=True)           # never grade the grader tree's own solution
        if submission is not None and (submission / rel).is_file():
            shutil.copyfile(submission / rel, target)
    (dest / "pytest.ini").write_text("[pytest]\naddopts = --import-mode=importlib\n")
    return out


def _read_events(path: Path) -> list[dict]:
    if not path.exists():
        return []
    events = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            pass
    return events


def run_exercise(ex: str, submission_root: Path | None, test_timeout: int = DEFAULT_TEST_TIMEOUT,
                 keyword: str | None = None, wall: float | None = None,
                 test: str | None = None) -> ExerciseResult:
    t0 = time.monotonic()
    result = ExerciseResult(ex)
    sub = find_submission(submission_root, ex) if submission_root else None
    with tempfile.TemporaryDirectory(prefix=f"grade-{ex}-") as tmp:
        tmp = Path(tmp)
        stage_root = tmp / "stage"
        stage_root.mkdir()
        folder = stage(ex, sub, stage_root)
        env = dict(os.environ, PYTHONPATH=str(ROOT), MPLBACKEND="Agg", PYTHONHASHSEED="0",
                   PYTHONDONTWRITEBYTECODE="1", EXERCISES_OUTPUT_CAP=str(OUTPUT_CAP))
        env.pop("EXERCISES_REPORT", None)
        env.pop("EXERCISES_ONLY_TEST", None)
        if test:
            env["EXERCISES_ONLY_TEST"] = test
        tests: dict[str, TestResult] = {}
        order: list[str] = []
        done: set[str] = set()
        for attempt in range(200):
            report = tmp / f"events-{attempt}.jsonl"
            log = tmp / f"log-{attempt}.txt"
            env["EXERCISES_REPORT"] = str(report)
            cmd = [sys.executable, "-m", "pytest", str(folder), "-p", "exercises.grading.plugin",
                   "-p", "no:cacheprovider", "-q", "-rN", "--no-header", "--rootdir", str(stage_root),
                   "-c", str(stage_root / "pytest.ini")]
            if HAVE_TIMEOUT:        # without pytest-timeout only the wall-clock cap stops a hang
                cmd.append(f"--timeout={test_timeout}")
            if keyword:
                cmd += ["-k", keyword]
            cmd += [f"--deselect={n}" for n in sorted(done)]
            remaining = len(order) - len(done) if order else None
            cap = wall or (test_timeout * (remaining if remaining else 20) + 120)
            with open(log, "wb") as out:
                proc = subprocess.Popen(cmd, cwd=stage_root, env=env, stdout=out,
                                        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        start_new_session=True)
                try:
                    proc.wait(timeout=cap)
                    why = f"the test process ended with exit status {proc.returncode}"
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                    why = f"the test process was killed after {cap:.0f} s (wall-clock cap)"
            running = None
            for ev in _read_events(report):
                if ev["event"] == "collected" and not order:
                    for t in ev["tests"]:
                        tests[t["nodeid"]] = TestResult(t["nodeid"], t["name"], t["points"],
                                                        hidden=t["hidden"], gpu=t["gpu"], doc=t["doc"])
                        order.append(t["nodeid"])
                elif ev["event"] == "start":
                    running = ev["nodeid"]
                elif ev["event"] == "result" and ev["nodeid"] in tests:
                    tr = tests[ev["nodeid"]]
                    tr.outcome, tr.message = ev["outcome"], ev["message"]
                    done.add(ev["nodeid"])
                    running = None
            if not order:
                tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
                result.error = f"no tests were collected ({why}).\n{tail}"
                break
            if running is not None and running in tests and running not in done:
                tests[running].outcome = "failed"
                tests[running].message = (f"{why} while this test ran (the submission exited, "
                                          "crashed, hung or wrote too much); scored 0")
                done.add(running)
            if len(done) >= len(order):
                break
            if running is None:   # died between tests or before the first: count the rest lost
                tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
                for n in order:
                    if n not in done:
                        tests[n].message = f"not run: {why}\n{tail}"
                result.error = why
                break
        result.tests = [tests[n] for n in order]
    result.seconds = time.monotonic() - t0
    return result


def grade(submission_root: Path | None, only: list[str] | None = None, jobs: int | None = None,
          test_timeout: int = DEFAULT_TEST_TIMEOUT, keyword: str | None = None,
          test: str | None = None) -> list[ExerciseResult]:
    names = exercises()
    if only:
        unknown = sorted(set(only) - set(names))
        if unknown:
            raise SystemExit(f"unknown exercise(s) {', '.join(unknown)}; expected {', '.join(names)}")
        names = [n for n in names if n in only]
    jobs = jobs or max(1, min(len(names), os.cpu_count() or 1))
    with ThreadPoolExecutor(jobs) as pool:
        return list(pool.map(lambda n: run_exercise(n, submission_root, test_timeout, keyword,
                                                  test=test), names))


__all__ = ["SOLUTION_BEGIN", "exercises", "grade", "released", "run_exercise"]
