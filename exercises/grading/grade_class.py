"""Grade a whole class: ``python -m exercises grade-class DIR [--jobs N] [--out OUT] [--only EX...]``.

DIR holds one entry per student: a folder or a ``.zip`` (its name, less ``.zip``, is the student's
name). A zip is unpacked into a private temporary folder after every entry has been checked (no
absolute path, no ``..``, no symlink, bounded size); a zip or folder holding one top-level folder
and nothing else is graded from that folder.

Every (student, exercise) is graded by its own ``python -m exercises grade ROOT --json --only EX``
subprocess — the very command an instructor runs for one student, so the runner's isolation holds
unchanged (its own stage and temp dirs, one pytest process per exercise, restarts past a crash) —
and the pool runs ``--jobs`` of them at once. A student's grading has a wall-clock budget
(``--student-timeout``): past it, the running exercise is killed (the whole process tree) and the
exercises not yet graded score 0; the status column says so. Nothing one student does stops the
others or the command.

Speed. Identical submission files give identical stages (the runner copies only the files named
in ``exercise.json`` over the grader's tests), so each distinct (exercise, file contents) is
graded once and its verdict is reused by every student who handed in the same bytes (the stub
left untouched, a shared solution); ``--no-dedup`` grades every student separately. A reused
verdict is one sample of a test that depends on chance or on time (fresh random data, a hang at
the timeout, a GPU race): the students who handed in the same bytes all get that sample. The heavy
exercises (the Gluon compile, the ``tl`` interpreter) are scheduled first so the pool does not end
on them, and every grading process shares one Triton cache directory for the run (a compile of
the same kernel source is a cache hit).

Outputs: ``OUT/gradebook.csv`` (student, one column per exercise, total, max, status; rows by
student name), ``OUT/reports/<student>.json`` and ``.txt`` (per test: points and outcome).
"""
from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from . import report, runner
from .source import strip, submission_files

HEAVY = ("ch02_ws_gluon", "ch04_tl_attention")     # torch + triton in a subprocess: start first
ZIP_MAX_BYTES = 256 * 1024 * 1024                   # uncompressed size a student's zip may hold
ZIP_MAX_FILES = 20000
DEFAULT_STUDENT_TIMEOUT = 1800                      # seconds of grading per student


class Refused(Exception):
    pass


@dataclass
class Student:
    name: str
    entry: Path
    root: Path | None = None
    refused: str = ""
    used: float = 0.0                                  # seconds of grading charged so far
    lock: threading.Lock = field(default_factory=threading.Lock)


# ------------------------------------------------------------------------------ the entries
def safe_extract(zpath: Path, dest: Path) -> None:
    """Unpack zpath into dest, refusing absolute paths, '..', symlinks and oversized archives."""
    try:
        zf = zipfile.ZipFile(zpath)
    except (zipfile.BadZipFile, OSError) as e:
        raise Refused(f"not a readable zip ({e})") from e
    with zf:
        infos = zf.infolist()
        if len(infos) > ZIP_MAX_FILES:
            raise Refused(f"the zip holds {len(infos)} entries (at most {ZIP_MAX_FILES})")
        total = 0
        for info in infos:
            name = info.filename
            p = PurePosixPath(name.replace("\\", "/"))
            if name.startswith(("/", "\\")) or p.is_absolute() or (len(name) > 1 and name[1] == ":"):
                raise Refused(f"zip entry {name!r} has an absolute path")
            if ".." in p.parts:
                raise Refused(f"zip entry {name!r} climbs out of the folder ('..')")
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                raise Refused(f"zip entry {name!r} is a symlink")
            total += info.file_size
            if total > ZIP_MAX_BYTES:
                raise Refused(f"the zip unpacks to more than {ZIP_MAX_BYTES >> 20} MiB")
        root = dest.resolve()
        for info in infos:
            target = (dest / PurePosixPath(info.filename.replace("\\", "/"))).resolve()
            if target != root and root not in target.parents:      # belt and braces
                raise Refused(f"zip entry {info.filename!r} lands outside the folder")
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out)


def _descend(root: Path) -> Path:
    """A folder holding a single folder and nothing else (a zip of 'repo-main/'): that folder."""
    for _ in range(3):
        kids = [k for k in root.iterdir() if k.name != "__MACOSX" and not k.name.startswith(".")]
        if len(kids) == 1 and kids[0].is_dir() and not kids[0].is_symlink() and not (
                kids[0].name == "exercises" or kids[0].name in runner.exercises()):
            root = kids[0]
        else:
            break
    return root


def collect(class_dir: Path, work: Path) -> list[Student]:
    students: dict[str, Student] = {}
    for entry in sorted(class_dir.iterdir()):
        if entry.name.startswith(".") or entry.name == "__MACOSX":
            continue
        if entry.is_dir() and not entry.is_symlink():
            name = entry.name
        elif entry.is_file() and entry.suffix.lower() == ".zip":
            name = entry.name[:-4]
        else:
            print(f"grade-class: skipping {entry.name} (neither a folder nor a .zip)", file=sys.stderr)
            continue
        if name in students:                     # alice/ and alice.zip: keep both, apart
            name = entry.name
        students[name] = Student(name, entry)
    for i, s in enumerate(sorted(students.values(), key=lambda s: s.name)):
        try:
            if s.entry.is_dir():
                s.root = _descend(s.entry.resolve())
            else:
                dest = work / f"student-{i:04d}"
                dest.mkdir()
                safe_extract(s.entry, dest)
                s.root = _descend(dest)
        except Refused as e:
            s.refused = f"refused: {e}"
        except OSError as e:
            s.refused = f"refused: could not read the submission ({e})"
    return sorted(students.values(), key=lambda s: s.name)


def content_key(root: Path, ex: str, timeout: int) -> str:
    """What the runner would stage for this exercise: the submission files' bytes (or absence)."""
    h = hashlib.sha256(f"{ex}\0{timeout}\0".encode())
    sub = runner.find_submission(root, ex)
    for rel in submission_files(runner.PACKAGE / ex):
        f = sub / rel if sub is not None else None
        if f is not None and f.is_file():
            h.update(b"F" + rel.encode() + b"\0" + hashlib.sha256(f.read_bytes()).digest())
        else:
            h.update(b"M" + rel.encode() + b"\0")
    return h.hexdigest()


# ------------------------------------------------------------------------------ one grading call
def _kill_tree(pid: int) -> None:
    """Kill pid and every descendant (the runner starts pytest in a session of its own)."""
    try:
        import psutil
        try:
            procs = psutil.Process(pid).children(recursive=True) + [psutil.Process(pid)]
        except psutil.NoSuchProcess:
            procs = []
        for p in procs:
            try:
                p.kill()
            except psutil.NoSuchProcess:
                pass
    except ImportError:  # pragma: no cover
        pass
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def grade_one(root: Path, ex: str, timeout: int, cap: float, env: dict) -> dict:
    """`python -m exercises grade ROOT --json --only EX` with a wall-clock cap: its exercise JSON,
    or {'died': why} when it did not finish."""
    cmd = [sys.executable, "-m", "exercises", "grade", str(root), "--json", "--only", ex,
           "--jobs", "1", "--timeout", str(timeout)]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, cwd=runner.ROOT, env=env, stdout=out, stderr=err,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            proc.wait(timeout=max(cap, 1.0))
        except subprocess.TimeoutExpired:
            _kill_tree(proc.pid)
            proc.wait()
            return {"died": f"killed after {cap:.0f} s (the student's wall-clock budget)"}
        out.seek(0)
        err.seek(0)
        text = out.read().decode("utf-8", "replace")
        tail = err.read().decode("utf-8", "replace")[-1500:]
    try:
        doc = json.loads(text)
        [exj] = doc["exercises"]
        return exj
    except (ValueError, KeyError, TypeError):
        return {"died": f"the grader exited with status {proc.returncode} without a verdict: "
                        f"{tail.strip().splitlines()[-1] if tail.strip() else 'no output'}"}


# ------------------------------------------------------------------------------ the class
def _results(exjs: list[dict]) -> list[runner.ExerciseResult]:
    out = []
    for e in exjs:
        r = runner.ExerciseResult(e["name"], error=e.get("error", ""), seconds=e.get("seconds", 0.0))
        r.tests = [runner.TestResult(t["nodeid"], t["name"], t["points"], t["outcome"], t["message"],
                                     t["hidden"], t["gpu"]) for t in e.get("tests", [])]
        out.append(r)
    return out


def _fmt(x: float) -> str:
    return f"{x:g}"


def grade_class(class_dir: Path, out: Path, jobs: int | None = None, only: list[str] | None = None,
                timeout: int = runner.DEFAULT_TEST_TIMEOUT,
                student_timeout: float = DEFAULT_STUDENT_TIMEOUT, dedup: bool = True,
                quiet: bool = False) -> dict:
    names = runner.exercises()
    if only:
        unknown = sorted(set(only) - set(names))
        if unknown:
            raise SystemExit(f"unknown exercise(s) {', '.join(unknown)}; expected {', '.join(names)}")
        names = [n for n in names if n in only]
    jobs = jobs or os.cpu_count() or 1
    t0 = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    (out / "reports").mkdir(exist_ok=True)
    released = runner.released()
    with tempfile.TemporaryDirectory(prefix="grade-class-") as work:
        work = Path(work)
        students = collect(class_dir, work)
        env = dict(os.environ, PYTHONPATH=str(runner.ROOT), MPLBACKEND="Agg")
        env.setdefault("TRITON_CACHE_DIR", str(work / "triton-cache"))   # one cache for the run
        # tasks: one per distinct (exercise, submission bytes); every student keeps its key
        keys: dict[tuple[str, str], str] = {}
        tasks: dict[str, tuple[Student, str]] = {}
        for s in students:
            if s.refused:
                continue
            for ex in names:
                k = content_key(s.root, ex, timeout) if dedup else f"{s.name}\0{ex}"
                keys[s.name, ex] = k
                tasks.setdefault(k, (s, ex))
        verdicts: dict[str, dict] = {}
        done = [0]
        lock = threading.Lock()

        def run(k: str) -> None:
            s, ex = tasks[k]
            with s.lock:
                left = student_timeout - s.used
            if left <= 0:
                verdicts[k] = {"died": "not graded: the student's wall-clock budget was spent"}
            else:
                t = time.monotonic()
                try:
                    verdicts[k] = grade_one(s.root, ex, timeout, left, env)
                except Exception as e:  # noqa: BLE001  (one student never stops the class)
                    verdicts[k] = {"died": f"grading failed: {type(e).__name__}: {e}"}
                with s.lock:
                    s.used += time.monotonic() - t
            with lock:
                done[0] += 1
                if not quiet and (done[0] % 20 == 0 or done[0] == len(tasks)):
                    print(f"  graded {done[0]}/{len(tasks)} distinct submissions "
                          f"({time.monotonic() - t0:.0f} s)", file=sys.stderr, flush=True)

        order = sorted(tasks, key=lambda k: (tasks[k][1] not in HEAVY, tasks[k][0].name, tasks[k][1]))
        with ThreadPoolExecutor(jobs) as pool:
            list(pool.map(run, order))

        # the maximum of an exercise a student's grading never reached: what the others' show
        ex_max = {ex: max([v["max_score"] for k, v in verdicts.items()
                           if "died" not in v and tasks[k][1] == ex] or [0]) for ex in names}
        rows = []
        for s in students:
            status, exjs = [], []
            if s.refused:
                status.append(s.refused)
            for ex in names:
                v = verdicts.get(keys.get((s.name, ex), ""), {"died": s.refused or "not graded"})
                if "died" in v:
                    if not s.refused:
                        status.append(f"{ex}: {v['died']}")
                    exjs.append({"name": ex, "score": 0.0, "max_score": ex_max[ex],
                                 "error": v["died"], "tests": [], "graded": False})
                else:
                    if v.get("error"):
                        status.append(f"{ex}: {v['error'].strip().splitlines()[0][:120]}")
                    owner = tasks[keys[s.name, ex]][0].name
                    exjs.append({**v, "graded": True,
                                 **({"same_bytes_as": owner} if owner != s.name else {})})
            total = sum(e["score"] for e in exjs)
            mx = sum(e["max_score"] for e in exjs)
            complete = not s.refused and all(e["graded"] for e in exjs)
            row = {"student": s.name, **{e["name"]: e["score"] for e in exjs}, "total": total,
                   "max": mx, "status": "; ".join(status) or "ok", "complete": complete}
            rows.append(row)
            rep = {"student": s.name, "entry": s.entry.name, "status": row["status"],
                   "score": total, "max_score": mx, "exercises": exjs}
            graded = [e for e in exjs if e["graded"]]
            if graded:
                rep["summary"] = report.summary(_results(graded), released)
            (out / "reports" / f"{s.name}.json").write_text(report.dumps(rep))
            txt = [f"student: {s.name}   ({s.entry.name})", f"status:  {row['status']}",
                   f"score:   {_fmt(total)}/{_fmt(mx)}", ""]
            if graded:
                txt.append(report.table(_results(graded), released, verbose=True))
            for e in exjs:
                if not e["graded"]:
                    txt.append(f"{e['name']}  0/{_fmt(e['max_score'])}  (not graded: {e['error']})")
            (out / "reports" / f"{s.name}.txt").write_text("\n".join(txt) + "\n")
    with open(out / "gradebook.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["student", *names, "total", "max", "status"])
        for r in rows:
            w.writerow([r["student"], *[_fmt(r[ex]) for ex in names], _fmt(r["total"]),
                        _fmt(r["max"]), r["status"]])
    seconds = time.monotonic() - t0
    return {"rows": rows, "exercises": names, "seconds": seconds, "students": len(students),
            "distinct": len(tasks), "complete": all(r["complete"] for r in rows)}


def summary_table(res: dict) -> str:
    names = res["exercises"]
    short = [n.split("_", 1)[0] + "_" + n.split("_", 1)[1][:6] for n in names]
    w = max([len(r["student"]) for r in res["rows"]] + [7])
    lines = [f"{'student':<{w}}  " + " ".join(f"{s:>9}" for s in short) + "      total  status"]
    for r in res["rows"]:
        lines.append(f"{r['student']:<{w}}  " + " ".join(f"{_fmt(r[n]):>9}" for n in names)
                     + f"  {_fmt(r['total']):>4}/{_fmt(r['max']):<4}  {r['status'][:80]}")
    lines.append(f"{res['students']} students, {res['distinct']} distinct submissions graded, "
                 f"{res['seconds']:.0f} s")
    return "\n".join(lines)


# ------------------------------------------------------------------------------ a generated class
PATTERN = ("source", "stub", "wrong", "zip")


def _wrong_headers() -> list[tuple[Path, dict]]:
    out = []
    for p in sorted((runner.PACKAGE / "wrong").glob("*.py")):
        h = {}
        for line in p.read_text().splitlines():
            if not line.startswith("# ") or ":" not in line:
                break
            k, v = line[2:].split(":", 1)
            h[k.strip()] = v.strip()
        out.append((p, h))
    return out


def make_class(dest: Path, n: int, wrong: list[str] | None = None, zip_every: bool = True) -> dict:
    """N students in a known pattern, student i by i % 4: the source's submission files (full
    marks), the released stubs (zero: ``source.strip``, what ``release`` writes), the source with
    one known-wrong file from ``exercises/wrong`` (cycling through them, or through ``wrong`` by
    stem), and the source flat in a zip with one top-level folder. Returns {student: (kind, wrong
    file stem or None)}."""
    dest.mkdir(parents=True, exist_ok=True)
    ws = [(p, h) for p, h in _wrong_headers() if wrong is None or p.stem in wrong]
    plan = {}
    for i in range(n):
        kind = PATTERN[i % 4] if zip_every else PATTERN[i % 3]
        name = f"s{i:03d}_{kind}"
        w = ws[(i // 4) % len(ws)] if kind == "wrong" and ws else None
        root = dest / name if kind != "zip" else Path(tempfile.mkdtemp()) / f"{name}-main"
        for ex in runner.exercises():
            for rel in submission_files(runner.PACKAGE / ex):
                text = (runner.PACKAGE / ex / rel).read_text()
                if kind == "stub":
                    text = strip(text)
                if w and w[1]["exercise"] == ex and w[1]["file"] == rel:
                    text = w[0].read_text()
                target = root / rel if kind == "zip" else root / "exercises" / ex / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text)
        if kind == "zip":
            with zipfile.ZipFile(dest / f"{name}.zip", "w") as z:
                for f in sorted(root.rglob("*")):
                    z.write(f, f"{root.name}/{f.relative_to(root)}")
            shutil.rmtree(root.parent)
        plan[name] = (kind, w[0].stem if w else None)
    return plan


if __name__ == "__main__":   # python -m exercises.grading.grade_class make-class DEST N
    if len(sys.argv) == 4 and sys.argv[1] == "make-class":
        for k, v in make_class(Path(sys.argv[2]), int(sys.argv[3])).items():
            print(k, *[x for x in v if x])
    else:
        sys.exit("usage: python -m exercises.grading.grade_class make-class DEST N")
