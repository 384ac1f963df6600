"""`python -m exercises grade-class`: a generated class with known scores gives exactly the expected
gradebook; a hand-made class with a refused zip, a hang, a grader worker that dies and a zip of one
folder gives the expected rows, each student's trouble costing only that student; zips are
unpacked safely; a killed worker takes its whole process tree with it."""
from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import uuid
import zipfile
from pathlib import Path

import pytest

from exercises.__main__ import main
from exercises.grading import grade_class as gc
from exercises.grading import runner, zygote
from exercises.grading.grade_class import Refused, make_class, safe_extract
from exercises.grading.source import strip, submission_files

PKG = runner.PACKAGE
ONLY = ["ch00_rates", "ch02_producer", "ch04_online_softmax"]    # the quick ones
WRONG = "ch02_producer_off_by_one_slot"                          # loses three ch02_producer tests
HANG = "ch00_softmax_hangs"                                      # softmax_clk never returns
CRASH_MARK = "# grade-class self-test: the grading worker dies on this file"


def _loses(stem: str) -> set[str]:
    for line in (PKG / "wrong" / f"{stem}.py").read_text().splitlines():
        if line.startswith("# loses:"):
            return {x.strip() for x in line.split(":", 1)[1].split(",")}
    raise AssertionError(stem)


def _write(root: Path, kind: str, wrong: str | None = None, flat: bool = False,
           extra: str = "") -> None:
    for ex in runner.exercises():
        for rel in submission_files(PKG / ex):
            text = (PKG / ex / rel).read_text()
            if kind == "stub":
                text = strip(text)
            if wrong and f"# exercise: {ex}\n# file: {rel}\n" in (PKG / "wrong" / f"{wrong}.py").read_text():
                text = (PKG / "wrong" / f"{wrong}.py").read_text()
            if extra and ex == "ch04_online_softmax":
                text += extra
            target = root / rel if flat else root / "exercises" / ex / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)


def _dies_on_mark(real):
    """runner.run_exercise, except that the worker process exits (as a grader crash would) on a
    file carrying CRASH_MARK: set in the parent before it forks, so the workers inherit it."""
    def run_exercise(ex, root, *args, **kwargs):
        f = Path(root) / "exercises" / ex / "online_softmax.py" if root else None
        if f is not None and f.is_file() and CRASH_MARK in f.read_text():
            os._exit(7)
        return real(ex, root, *args, **kwargs)
    return run_exercise


# frank's hang is a busy loop: it holds a core until his budget kills it, so the budgets are
# short, and still three times what a whole student's grading takes here
TEST_TIMEOUT, STUDENT_BUDGET = 10, 15


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("gradeclass")
    cls = base / "class"
    cls.mkdir()
    _write(cls / "alice", "source")                          # full marks
    _write(cls / "bob", "stub")                              # zero
    _write(cls / "carol", "source", WRONG)                   # loses WRONG's tests
    inner = base / "dave-src" / "dave-main"                  # a zip with one folder inside
    _write(inner, "source", flat=True)
    with zipfile.ZipFile(cls / "dave.zip", "w") as z:
        for f in sorted(inner.rglob("*")):
            z.write(f, f"dave-main/{f.relative_to(inner)}")
    escape = f"gc_escape_{uuid.uuid4().hex}.txt"             # a zip that climbs out: refused
    with zipfile.ZipFile(cls / "eve.zip", "w") as z:
        z.writestr("eve/exercises/ch00_rates/rates.py", "x = 1\n")
        z.writestr(f"eve/../../{escape}", "escaped\n")
    _write(cls / "frank", "stub", HANG)                      # hangs: past his budget, killed
    _write(cls / "grace", "source", extra="\n" + CRASH_MARK + "\n")   # her worker dies
    (cls / "notes.txt").write_text("not a student\n")
    out = base / "out"
    t = time.monotonic()
    zygotes = set(Path(tempfile.gettempdir()).glob(zygote.PREFIX + "*"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(runner, "run_exercise", _dies_on_mark(runner.run_exercise))
        rc = main(["grade-class", str(cls), "--out", str(out), "--jobs", "2",
                   "--timeout", str(TEST_TIMEOUT), "--student-timeout", str(STUDENT_BUDGET),
                   *[a for ex in ONLY for a in ("--only", ex)]])
    left = set(Path(tempfile.gettempdir()).glob(zygote.PREFIX + "*")) - zygotes
    return {"rc": rc, "out": out, "base": base, "escape": escape, "seconds": time.monotonic() - t,
            "zygotes_left": left}


def test_workers_leave_no_zygote_folders(graded):
    """Every worker's zygotes are gone with their folders once the class is graded: the worker
    that ended, the one killed at its student's budget and the one that died (a folder whose
    owner is alive belongs to another test running now)."""
    def owner_alive(d: Path) -> bool:
        pid = int(d.name[len(zygote.PREFIX):].split("-")[0])
        return Path(f"/proc/{pid}").exists()
    assert not [d for d in graded["zygotes_left"] if not owner_alive(d)], graded["zygotes_left"]


def test_gradebook_is_exactly_the_expected_one(graded):
    out = graded["out"]
    alice = json.loads((out / "reports" / "alice.json").read_text())
    full = {e["name"]: e["max_score"] for e in alice["exercises"]}
    assert [e["name"] for e in alice["exercises"]] == ONLY
    assert all(e["score"] == e["max_score"] > 0 for e in alice["exercises"])
    points = {t["name"]: t["points"] for e in alice["exercises"] for t in e["tests"]}
    lost = sum(points[t] for t in _loses(WRONG))
    assert 0 < lost < full["ch02_producer"]
    m = sum(full.values())
    g = lambda x: f"{x:g}"
    rows = list(csv.reader((out / "gradebook.csv").open()))
    assert rows[0] == ["student", *ONLY, "total", "max", "status"]
    body = {r[0]: r for r in rows[1:]}
    assert [r[0] for r in rows[1:]] == ["alice", "bob", "carol", "dave", "eve", "frank", "grace"]
    assert body["alice"] == ["alice", *[g(full[e]) for e in ONLY], g(m), g(m), "ok"]
    assert body["bob"] == ["bob", "0", "0", "0", "0", g(m), "ok"]
    assert body["carol"] == ["carol", g(full["ch00_rates"]), g(full["ch02_producer"] - lost),
                             g(full["ch04_online_softmax"]), g(m - lost), g(m), "ok"]
    assert body["dave"] == ["dave", *[g(full[e]) for e in ONLY], g(m), g(m), "ok"]
    assert body["eve"][:6] == ["eve", "0", "0", "0", "0", g(m)]
    assert body["eve"][6].startswith("refused:") and "'..'" in body["eve"][6]
    assert body["frank"][:6] == ["frank", "0", "0", "0", "0", g(m)]
    assert body["frank"][6].startswith(f"ch00_rates: killed after {STUDENT_BUDGET} s"), \
        body["frank"][6]
    assert body["grace"] == ["grace", g(full["ch00_rates"]), g(full["ch02_producer"]), "0",
                             g(m - full["ch04_online_softmax"]), g(m), body["grace"][6]]
    assert body["grace"][6].startswith("ch04_online_softmax: the grading process died (exit status 7)")
    for r in rows[1:]:                                      # totals are the sums of the columns
        assert float(r[4]) == sum(float(x) for x in r[1:4])
    assert graded["rc"] == 1                                # eve refused, frank cut off, grace died
    timing = json.loads((out / "timing.json").read_text())
    assert set(timing["exercises"]) == set(ONLY) and timing["dedup"] is True


def test_reports_and_isolation(graded):
    out, base = graded["out"], graded["base"]
    for s in ("alice", "bob", "carol", "dave", "eve", "frank", "grace"):
        assert (out / "reports" / f"{s}.json").is_file() and (out / "reports" / f"{s}.txt").is_file()
    carol = json.loads((out / "reports" / "carol.json").read_text())
    failed = {t["name"] for e in carol["exercises"] for t in e["tests"] if t["outcome"] == "failed"}
    assert failed == _loses(WRONG)
    assert "FAIL" in (out / "reports" / "carol.txt").read_text()
    frank = json.loads((out / "reports" / "frank.json").read_text())
    assert not frank["exercises"][0]["graded"] and "killed" in frank["exercises"][0]["error"]
    dave = json.loads((out / "reports" / "dave.json").read_text())   # same bytes as alice's, but
    assert not any("same_bytes_as" in e for e in dave["exercises"])  # graded on his own draws
    for d in (base, base.parent, Path("/tmp")):
        assert not (d / graded["escape"]).exists()
    # frank's hang (killed at his budget) and grace's dead worker cost the others nothing: the
    # whole class is done well within frank's three hanging tests' timeouts plus the rest
    assert graded["seconds"] < 3 * TEST_TIMEOUT + 90, graded["seconds"]


GEN_ONLY = [*ONLY, "ch04_tl_attention"]
GEN_WRONG = ["ch00_masked_same_cost", WRONG, "ch04_tl_unmasked_scores"]


def test_generated_class_scores_as_expected(tmp_path):
    """make_class's 12 students (source, stub, known-wrong, zip; every file distinct), graded
    without dedup, score exactly what make_class expects of each."""
    plan = make_class(tmp_path / "c", 12, wrong=GEN_WRONG)
    assert sorted(v["wrong"] for v in plan.values() if v["wrong"]) == sorted(GEN_WRONG)
    digests = []
    for entry in sorted((tmp_path / "c").iterdir()):     # every handed-in file is distinct
        if entry.suffix == ".zip":
            with zipfile.ZipFile(entry) as z:
                digests += [hashlib.sha256(z.read(n)).hexdigest() for n in z.namelist()
                            if not n.endswith("/")]
        else:
            digests += [hashlib.sha256(f.read_bytes()).hexdigest() for f in entry.rglob("*.py")]
    assert len(digests) == len(set(digests)) == 12 * sum(
        len(submission_files(PKG / ex)) for ex in runner.exercises())
    out = tmp_path / "out"
    rc = main(["grade-class", str(tmp_path / "c"), "--out", str(out), "--jobs", "2",
               "--no-dedup", *[a for ex in GEN_ONLY for a in ("--only", ex)]])
    assert rc == 0
    rows = list(csv.DictReader((out / "gradebook.csv").open()))
    assert [r["student"] for r in rows] == sorted(plan)
    for r in rows:
        exp = plan[r["student"]]["expected"]
        known = [ex for ex in GEN_ONLY if exp[ex] is not None]   # None: a may-lose test on CPU
        assert len(known) >= len(GEN_ONLY) - 1, plan[r["student"]]
        got = {ex: float(r[ex]) for ex in known}
        assert got == {ex: exp[ex] for ex in known}, (r["student"], plan[r["student"]], r)
        assert r["status"] == "ok"
    timing = json.loads((out / "timing.json").read_text())
    assert timing["items"] == 12 * len(GEN_ONLY) and timing["dedup"] is False


def _zip(path: Path, entries):
    with zipfile.ZipFile(path, "w") as z:
        for name, data, mode in entries:
            info = zipfile.ZipInfo(name)
            if mode:
                info.external_attr = mode << 16
            z.writestr(info, data)


@pytest.mark.parametrize("entry,why", [("/etc/evil.py", "absolute"), ("a/../../evil.py", "'..'"),
                                       ("C:/evil.py", "absolute"), ("a\\..\\..\\evil.py", "'..'")])
def test_zip_entries_that_escape_are_refused(tmp_path, entry, why):
    _zip(tmp_path / "s.zip", [("ok/rates.py", "x = 1\n", 0), (entry, "boom\n", 0)])
    (tmp_path / "x").mkdir()
    with pytest.raises(Refused, match=why):
        safe_extract(tmp_path / "s.zip", tmp_path / "x")
    assert not any((tmp_path / "x").rglob("*"))            # nothing written before the check


def test_zip_symlink_is_refused(tmp_path):
    _zip(tmp_path / "s.zip", [("link", "/etc/passwd", stat.S_IFLNK | 0o777)])
    (tmp_path / "x").mkdir()
    with pytest.raises(Refused, match="symlink"):
        safe_extract(tmp_path / "s.zip", tmp_path / "x")


def test_a_corrupt_zip_is_refused_for_its_student_alone(tmp_path):
    """A zip whose data fails its CRC (or is encrypted, or uses a method zipfile cannot read)
    refuses that student; the others are collected (main's collect raised BadZipFile and no one
    was graded)."""
    cls = tmp_path / "class"
    (cls / "alice" / "exercises" / "ch00_rates").mkdir(parents=True)
    (cls / "alice" / "exercises" / "ch00_rates" / "rates.py").write_text("x = 1\n")
    _zip(cls / "mallory.zip", [("exercises/ch00_rates/rates.py", "y = 2\n" * 50, 0)])
    data = bytearray((cls / "mallory.zip").read_bytes())
    at = data.index(b"y = 2")
    data[at] ^= 0xFF                                      # one byte of file data: a bad CRC
    (cls / "mallory.zip").write_bytes(bytes(data))
    (tmp_path / "work").mkdir()
    got = {s.name: s for s in gc.collect(cls, tmp_path / "work")}
    assert got["mallory"].refused.startswith("refused: an unreadable zip (BadZipFile")
    assert not got["alice"].refused


def test_staging_copies_only_submission_files(tmp_path):
    """Only the exercise.json files reach the private copy, regular files alone; a symlinked file
    refuses its exercise (nothing of it is staged); an oversized file is cut just past the
    sandbox's limit."""
    src = tmp_path / "src" / "exercises"
    (src / "ch00_rates").mkdir(parents=True)
    (src / "ch00_rates" / "rates.py").write_text("x = 1\n")
    (src / "ch00_rates" / "secret.txt").write_text("not a submission file\n")
    (src / "ch01_ring").mkdir()
    (src / "ch01_ring" / "ring.py").symlink_to("/etc/passwd")
    (src / "ch05_idle").mkdir()
    with open(src / "ch05_idle" / "idle.py", "wb") as f:
        f.truncate(gc.FILE_MAX_BYTES + 4096)
    dest = tmp_path / "dest"
    refused = gc._stage(src.parent, dest, runner.exercises())
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if not p.is_dir()) == [
        "exercises/ch00_rates/rates.py", "exercises/ch05_idle/idle.py"]
    assert refused == {"ch01_ring": "exercises/ch01_ring/ring.py is a symbolic link (to "
                                    "/etc/passwd): only the student's own files are graded"}
    assert (dest / "exercises/ch05_idle/idle.py").stat().st_size == gc.FILE_MAX_BYTES + 1


def test_symlinked_folders_refuse_the_exercise_alone(tmp_path):
    """A student whose files are reached through a symlinked folder (a classmate's clone beside
    his, the instructor's tree, one exercise's folder) is refused those exercises, with the link
    in the status; the classmates are graded as they would be alone, and the linked-to files are
    never graded as his."""
    cls = tmp_path / "class"
    _write(cls / "alice", "source")
    (cls / "bob").mkdir()
    (cls / "bob" / "exercises").symlink_to("../alice/exercises")       # a classmate's folder
    _write(cls / "carol", "stub")
    shutil.rmtree(cls / "carol" / "exercises" / "ch00_rates")
    (cls / "carol" / "exercises" / "ch00_rates").symlink_to(PKG / "ch00_rates")   # the solutions
    out = tmp_path / "out"
    res = gc.grade_class(cls, out, jobs=2, only=["ch00_rates", "ch04_online_softmax"], quiet=True)
    rows = {r["student"]: r for r in res["rows"]}
    full = rows["alice"]["max"]
    assert rows["alice"]["total"] == full > 0 and rows["alice"]["status"] == "ok"
    assert rows["bob"]["total"] == 0 and rows["bob"]["status"] == "; ".join(
        f"{ex}: refused: exercises is a symbolic link (to ../alice/exercises): only the "
        "student's own files are graded" for ex in ("ch00_rates", "ch04_online_softmax"))
    assert rows["carol"]["total"] == 0 and rows["carol"]["status"] == (
        f"ch00_rates: refused: exercises/ch00_rates is a symbolic link (to {PKG / 'ch00_rates'}): "
        "only the student's own files are graded")
    assert not res["complete"] and rows["bob"]["max"] == rows["carol"]["max"] == full


def test_a_symlinked_zip_or_folder_refuses_its_student_alone(tmp_path):
    """An entry of the class folder that is a symbolic link (a zip or a folder reaching the
    solutions outside the class folder) refuses that student, with the link in the status; the
    classmate beside it is graded as she would be alone, and the linked-to zip is never graded."""
    outside = tmp_path / "outside"
    _write(outside / "sol", "source")
    with zipfile.ZipFile(outside / "solution.zip", "w") as z:
        for f in sorted((outside / "sol").rglob("*.py")):
            z.write(f, f.relative_to(outside / "sol").as_posix())
    cls = tmp_path / "class"
    _write(cls / "alice", "source")
    (cls / "bob.zip").symlink_to(outside / "solution.zip")
    (cls / "carol").symlink_to(outside / "sol")
    res = gc.grade_class(cls, tmp_path / "out", jobs=2, only=["ch00_rates"], quiet=True)
    rows = {r["student"]: r for r in res["rows"]}
    assert rows["alice"]["total"] == rows["alice"]["max"] > 0 and rows["alice"]["status"] == "ok"
    for who, entry, target in (("bob", "bob.zip", "solution.zip"), ("carol", "carol", "sol")):
        assert rows[who]["total"] == 0, rows[who]
        assert rows[who]["status"] == (
            f"refused: {entry} is a symbolic link (to {outside / target}): only the student's "
            "own files are graded"), rows[who]
    assert not res["complete"]
    with pytest.raises(Refused, match="not a readable zip"):          # opened without following
        safe_extract(cls / "bob.zip", tmp_path / "x")


def test_a_verdict_killed_by_a_signal_is_never_reused():
    """A test whose submission's process a signal killed (the OOM killer's SIGKILL in the
    student's cgroup prints no MemoryError and names no limit) binds the verdict to its student:
    every sharer of those bytes is graded again; a plain failure is still reused."""
    from exercises.grading.sandbox import Outcome
    died = {"score": 0, "limits": [], "tests": [
        {"name": "t", "outcome": "failed",
         "message": "the submission's process failed: the submission's process ended "
                    "(the worker was killed by signal 9)"}]}
    assert gc._killed(died) and gc._owner_bound(died)
    plain = {"score": 0, "limits": [], "tests": [
        {"name": "t", "outcome": "failed", "message": "AssertionError: 3 != 4"}]}
    assert not gc._killed(plain) and not gc._owner_bound(plain)
    oom = Outcome(returncode=-9, oom_killed=True, limits={"memory_bytes": 4 << 30})
    assert oom.limit.startswith(f"memory limit ({4 << 30} bytes")
    assert Outcome(returncode=-9).limit == ""         # a SIGKILL not from the OOM killer


def test_oom_kills_are_read_from_the_cgroup(tmp_path):
    from exercises.grading.budget import oom_kills
    v2, v1 = tmp_path / "v2", tmp_path / "v1"
    v2.mkdir()
    v1.mkdir()
    (v2 / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 2\noom_kill 2\n")
    (v1 / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 1\n")
    assert oom_kills([str(v2 / "cgroup.procs"), str(v1 / "cgroup.procs")]) == 3
    assert oom_kills([str(tmp_path / "none" / "cgroup.procs")]) == 0


def test_shared_bytes_whose_process_is_killed_are_graded_for_each(tmp_path, monkeypatch):
    """Two students hand in the same file whose process SIGKILLs itself (what the OOM killer
    does): the verdict is not shared, each is graded on their own, and the message says so.
    (Dedup shares verdicts only where the tests draw nothing per student: so taken here.)"""
    monkeypatch.setattr(runner, "seeded", lambda ex, tree=None: False)
    cls = tmp_path / "class"
    for who in ("ann", "ben"):
        (cls / who / "exercises" / "ch00_rates").mkdir(parents=True)
        (cls / who / "exercises" / "ch00_rates" / "rates.py").write_text(
            (PKG / "ch00_rates" / "rates.py").read_text()
            + "\nimport os, signal\nprint('x' * 5000, flush=True)\n"     # a message cut short
            + "os.kill(os.getpid(), signal.SIGKILL)\n")
    res = gc.grade_class(cls, tmp_path / "out", jobs=2, only=["ch00_rates"], quiet=True)
    assert res["distinct"] == 1 and res["regraded"] == 1
    ben = json.loads((tmp_path / "out" / "reports" / "ben.json").read_text())
    assert not any("same_bytes_as" in e for e in ben["exercises"])
    assert "killed by signal 9" in ben["exercises"][0]["tests"][0]["message"]
    assert {r["total"] for r in res["rows"]} == {0}


def test_a_shared_verdict_that_died_is_graded_again(tmp_path, monkeypatch):
    """Dedup grades identical bytes once, as the first student's; when that student's budget runs
    out before the item is reached (his own hang spends it), the item is not graded for him, and
    his classmate who handed in the same bytes is graded on her own budget, not given his "not
    graded". (Dedup shares verdicts only where the tests draw nothing per student: so taken.)"""
    monkeypatch.setattr(runner, "seeded", lambda ex, tree=None: False)
    cls = tmp_path / "class"
    _write(cls / "aaron", "source", HANG)            # ch00_rates hangs until his budget is spent
    _write(cls / "zoe", "source")                    # ch04: the same bytes as aaron's
    assert (cls / "aaron/exercises/ch04_online_softmax/online_softmax.py").read_bytes() == \
        (cls / "zoe/exercises/ch04_online_softmax/online_softmax.py").read_bytes()
    res = gc.grade_class(cls, tmp_path / "out", jobs=1, only=["ch00_rates", "ch04_online_softmax"],
                         timeout=10, student_timeout=5, quiet=True)
    rows = {r["student"]: r for r in res["rows"]}
    assert rows["aaron"]["total"] == 0, rows["aaron"]
    assert "ch04_online_softmax: not graded: the student's wall-clock budget" in \
        rows["aaron"]["status"], rows["aaron"]
    assert rows["zoe"]["total"] == rows["zoe"]["max"] > 0 and rows["zoe"]["status"] == "ok", \
        rows["zoe"]
    assert res["regraded"] == 1
    zoe = json.loads((tmp_path / "out" / "reports" / "zoe.json").read_text())
    assert not any("same_bytes_as" in e for e in zoe["exercises"])
    assert gc._owner_bound({"died": "killed"}) and gc._owner_bound({"limits": ["t: memory"]})
    assert not gc._owner_bound({"score": 0, "limits": []})


TREE = r"""
import ctypes, os, sys, time
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)               # a child subreaper, as the workers are
pids = []
if os.fork() == 0:                                     # child: double-forks a setsid grandchild
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            time.sleep(300); os._exit(0)
        time.sleep(300); os._exit(0)
    os._exit(0)                                        # its grandchild is orphaned: to us
if os.fork() == 0:
    time.sleep(300); os._exit(0)
time.sleep(0.5)
print("ready", flush=True)
time.sleep(300)
"""


def test_kill_tree_takes_every_descendant(tmp_path):
    p = subprocess.Popen([sys.executable, "-c", TREE], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        below = gc._descendants(p.pid)
        assert len(below) == 3, below                      # the orphans stayed below the reaper
        gc.kill_tree(p.pid)
        p.wait(10)
        time.sleep(0.2)
        for pid in below:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    assert f.read().rsplit(")", 1)[1].split()[0] == "Z"
            except FileNotFoundError:
                pass
    finally:
        if p.poll() is None:
            p.kill()


def test_make_class_pattern(tmp_path):
    plan = make_class(tmp_path / "c", 8)
    assert [v["kind"] for v in plan.values()] == ["source", "stub", "wrong", "zip"] * 2
    assert (tmp_path / "c" / "s003_zip.zip").is_file() and (tmp_path / "c" / "s000_source").is_dir()
    a = (tmp_path / "c" / "s000_source" / "exercises" / "ch00_rates" / "rates.py").read_text()
    b = (tmp_path / "c" / "s004_source" / "exercises" / "ch00_rates" / "rates.py").read_text()
    assert a != b and a.splitlines()[:-1] == b.splitlines()[:-1]      # one comment line apart
    assert set(plan["s001_stub"]["expected"].values()) == {0.0}
    assert plan["s000_source"]["expected"] == plan["s003_zip"]["expected"]
    assert plan["s002_wrong"]["wrong"].startswith("cheat_budget_")      # a bomb and a reader of
    assert plan["s006_wrong"]["wrong"].startswith("cheat_isolation_")   # the neighbours' folders
    shutil.rmtree(tmp_path / "c")


def test_gradebook_cells_are_never_formulas(tmp_path):
    """A student's folder named like a spreadsheet formula (=HYPERLINK(...), +, -, @, a tab)
    lands in gradebook.csv as text: a leading ' stops a spreadsheet from running it when the
    instructor opens the gradebook. The returned rows keep the name as it is; the gradebook and
    the reports show its control characters (the tab) as escapes."""
    from exercises.grading.report import safe
    names = ['=HYPERLINK("http:,,evil.example,x","click")', "+1+1", "-2", "@SUM(1)", "\tcmd",
             "honest"]
    cls = tmp_path / "class"
    for name in names:
        _write(cls / name, "source")
    out = tmp_path / "out"
    res = gc.grade_class(cls, out, jobs=2, only=["ch04_online_softmax"], quiet=True)
    assert sorted(r["student"] for r in res["rows"]) == sorted(names)
    with open(out / "gradebook.csv", newline="") as f:
        book = list(csv.reader(f))
    assert book[0] == ["student", "ch04_online_softmax", "total", "max", "status"]
    cells = {row[0]: row for row in book[1:]}
    assert set(cells) == ({"'" + n for n in names if n not in ("honest", "\tcmd")}
                          | {"honest", "\\x09cmd"})
    for row in book[1:]:
        assert not any(c[:1] in ("=", "+", "-", "@", "\t", "\r") for c in row), row
        assert row[1] == row[2] == row[3] != "0" and row[4] == "ok", row
    for name in names:
        rep = json.loads((out / "reports" / f"{name}.json").read_text())
        assert rep["student"] == safe(name, one_line=True)
        assert (out / "reports" / f"{name}.txt").read_text().startswith(
            f"student: {safe(name, one_line=True)} ")
