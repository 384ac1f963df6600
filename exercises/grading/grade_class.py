"""Grade a whole class: ``python -m exercises grade-class DIR [--jobs N] [--out OUT] [--only EX...]``.

DIR holds one entry per student: a folder or a ``.zip`` (its name, less ``.zip``, is the student's
name). A zip is unpacked into a private temporary folder after every entry has been checked (no
absolute path, no ``..``, no symlink, bounded size); a zip or folder holding one top-level folder
and nothing else is graded from that folder. Each student's submission files (only those named in
the exercises' ``exercise.json``) are then copied into that private folder (mode 0700, under the
temp dir the sandbox hides), so a submission's process, which may read what its user can read,
does not find the other students' files where the class folder leaves them; a file past the
sandbox's size limit is copied only that far. A symbolic link anywhere between the student's entry
and a submission file (the file itself, ``exercises/``, the exercise's folder) refuses that
exercise for that student, with the link named in the status: what it reaches is not the
student's upload (a classmate's folder, the instructor's tree), as ``grade PATH`` refuses it.
An entry of DIR that is itself a symbolic link (a folder or a zip) refuses that student, with the
link named in the status; a zip is opened without following links.

Workers. The parent imports every exercise's tests once (``runner.warm``: their references are
computed once) and forks ``--jobs`` worker processes from that state (multiprocessing's 'fork'
context), each in a session of its own and a child subreaper. The parent hands out one
(student, exercise) item at a time; a worker grades it with ``runner.run_exercise`` (the tests in
the worker, the submission's code in a fresh sandbox process per test, forked by the worker's
zygote (`zygote`), under the student's own uid and cgroup: `budget`, killed with its tree on a
hang or crash) and sends back the exercise's JSON (as ``grade --json`` prints it). Before every test
the runner reseeds the NumPy generators the test modules hold from the student's name and the
sha256 of the student's files (`runner.seed`, `runner.seed_identity`): each student draws values
of its own, the same ones in a regrade of the same files. A worker is replaced after
``RECYCLE`` items, and at once when it dies (the item it held scores 0, with the reason).

Budget. A student's grading has a wall-clock budget (``--student-timeout``): the seconds its items
have run, summed (two of its exercises graded at once count twice). When it is spent, the workers
grading that student are killed, each with its whole process tree (stopped, then every descendant
killed, repeated until none is left), their exercises and the student's exercises not yet started
score 0, and the status column says so; a fresh worker takes each killed one's place. Nothing one
student does stops the others or the command.

Order. The heavy exercises (the Gluon compile and the ``tl`` interpreter: about a second each
from a warm zygote, several for the worker's first, which warms it) are handed out first,
student by student, then the light ones, so the pool does not end on a heavy item.

Dedup (default on; ``--no-dedup`` off). Identical submission files give identical gradings, so
each distinct (exercise, file contents) is graded once and its verdict reused by every student who
handed in the same bytes (the stub left untouched, a shared solution); the report names the
student it came from. An exercise whose tests draw values per student (hidden tests, a seeded
generator: `runner.seeded`) is keyed by the student as well (`content_key`): a verdict drawn for
one student's values is never another's. A reused verdict is one sample of a test that depends
on chance or on time (fresh random data, a GPU race). A verdict that tells of its student's circumstances as much as
of the bytes is never reused: one that died (the budget spent, the item killed, a dead worker), one
in which a limit stopped a test (the student's cgroup, the test's time run out beside the
student's other items) or one in which a signal killed the submission's process (SIGKILL from
the kernel's OOM killer in the student's cgroup prints nothing); every other student who handed
in those bytes is graded afresh, under their own budget, after the first round. There is no
shared Triton cache: each sandbox compiles in its own private folder (a cache writable by every
sandbox could be poisoned by one student for the next).

Outputs: ``OUT/gradebook.csv`` (student, one column per exercise, total, max, status; rows by
student name; a cell that a spreadsheet would read as a formula starts with ``'``),
``OUT/reports/<student>.json`` and ``.txt`` (per test: points and outcome),
``OUT/timing.json`` (seconds per exercise, summed over items, and the wall time).
"""
from __future__ import annotations

import csv
import ctypes
import hashlib
import json
import multiprocessing
import os
import random
import shutil
import signal
import stat
import sys
import tempfile
import time
import traceback
import zipfile
from collections import deque
from dataclasses import dataclass, field
from multiprocessing.connection import wait as mp_wait
from pathlib import Path, PurePosixPath

from . import report, runner, zygote
from .source import strip, submission_files

HEAVY = ("ch02_ws_gluon", "ch04_tl_attention")     # a sandbox importing triton: hand out first
ZIP_MAX_BYTES = 256 * 1024 * 1024                   # uncompressed size a student's zip may hold
ZIP_MAX_FILES = 20000
FILE_MAX_BYTES = 16 << 20                           # the sandbox's max_file_bytes default
DEFAULT_STUDENT_TIMEOUT = 1800                      # seconds of grading per student
KILLED_BY = "killed by signal"                      # what sandbox.py says of such a process
RECYCLE = 100                                       # items a worker grades before a fresh one


class Refused(Exception):
    pass


@dataclass
class Student:
    name: str
    entry: Path
    root: Path | None = None
    refused: str = ""
    used: float = 0.0                                  # seconds of grading charged so far
    spent: bool = False                                # the budget ran out
    refused_ex: dict[str, str] = field(default_factory=dict)   # exercise -> why not graded


# ------------------------------------------------------------------------------ the entries
def safe_extract(zpath: Path, dest: Path) -> None:
    """Unpack zpath into dest, refusing absolute paths, '..', symlinks and oversized archives."""
    zf = _open_zip(zpath)
    with zf.fp, zf:                                    # the zip, then the file it was read from
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


def _stage(root: Path, dest: Path, names: list[str], entry: Path | None = None
           ) -> dict[str, str]:
    """Copy the submission files `runner.find_submission` finds under root (in the student's
    entry: `entry`, root by default) into dest/exercises/EX/: regular files only, at most
    FILE_MAX_BYTES + 1 bytes (so that the sandbox still refuses an oversized one). Returns
    {exercise: why} for each exercise reached through a symbolic link (`_linked_from`), none of
    whose files is copied."""
    refused = {}
    for ex in names:
        sub = runner.find_submission(root, ex)
        if sub is None:
            continue
        srcs = [(rel, sub / rel) for rel in submission_files(runner.PACKAGE / ex)
                if os.path.lexists(sub / rel)]
        why = next((w for w in (_linked_from(entry or root, src) for _, src in srcs) if w), "")
        if why:
            refused[ex] = why
            continue
        for rel, src in srcs:
            if not stat.S_ISREG(os.lstat(src).st_mode):
                continue                               # a fifo, a device: nothing to grade
            dst = dest / "exercises" / ex / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as f, open(dst, "wb") as out:
                out.write(f.read(FILE_MAX_BYTES + 1))
    return refused


def _linked_from(entry: Path, path: Path) -> str:
    """Why `path` is not the student's own file: the first symbolic link on the way down from
    the entry (a folder or the file), named with its target; "" when there is none."""
    if not path.is_relative_to(entry):
        return f"{path} lies outside the student's folder"
    link = runner._linked(entry, path)
    return "" if link is None else _a_link(link, link.relative_to(entry))


def _student_name(entry: Path) -> str | None:
    """The student an entry of the class folder stands for (a folder, or a .zip less its
    suffix, either one possibly a symbolic link, refused later); None for anything else."""
    if entry.is_dir():
        return entry.name
    if entry.suffix.lower() == ".zip" and (entry.is_file() or entry.is_symlink()):
        return entry.name[:-4]
    return None


def _entry_link(entry: Path) -> str:
    """Why a student's entry is refused for being a symbolic link ("" when it is none): what it
    reaches is not the student's upload (a classmate's, the instructor's solution)."""
    return f"refused: {_a_link(entry, entry.name)}" if entry.is_symlink() else ""


def _a_link(link: Path, shown) -> str:
    """Why a symbolic link is not graded, `shown` naming it, with its target."""
    try:
        target = os.readlink(link)
    except OSError:
        target = "?"
    return f"{shown} is a symbolic link (to {target}): only the student's own files are graded"


def _open_zip(zpath: Path):
    """The zip at zpath, opened without following a symbolic link (O_NOFOLLOW)."""
    try:
        fd = os.open(zpath, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as e:
        raise Refused(f"not a readable zip ({e})") from e
    f = os.fdopen(fd, "rb")
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        f.close()
        raise Refused("not a readable zip (not a regular file)")
    try:
        return zipfile.ZipFile(f)
    except (zipfile.BadZipFile, OSError) as e:
        f.close()
        raise Refused(f"not a readable zip ({e})") from e


def collect(class_dir: Path, work: Path, names: list[str] | None = None) -> list[Student]:
    names = names or runner.exercises()
    students: dict[str, Student] = {}
    for entry in sorted(class_dir.iterdir()):
        if entry.name.startswith(".") or entry.name == "__MACOSX":
            continue
        name = _student_name(entry)
        if name is None:
            print(f"grade-class: skipping {entry.name} (neither a folder nor a .zip)", file=sys.stderr)
            continue
        if name in students:                     # alice/ and alice.zip: keep both, apart
            name = entry.name
        students[name] = Student(name, entry, refused=_entry_link(entry))
    for i, s in enumerate(sorted(students.values(), key=lambda s: s.name)):
        if s.refused:
            continue
        try:
            if s.entry.is_dir():
                src = _descend(s.entry.resolve())
                unpacked = None
            else:
                unpacked = work / f"zip-{i:04d}"
                unpacked.mkdir()
                safe_extract(s.entry, unpacked)
                src = _descend(unpacked)
            s.root = work / f"student-{i:04d}"
            s.root.mkdir()
            s.refused_ex = _stage(src, s.root, names,
                                  s.entry.resolve() if unpacked is None else unpacked)
            if unpacked is not None:
                shutil.rmtree(unpacked, ignore_errors=True)
        except Refused as e:
            s.refused = f"refused: {e}"
        except OSError as e:
            s.refused = f"refused: could not read the submission ({e})"
        except Exception as e:  # noqa: BLE001 - a corrupt, encrypted or odd zip: this student's
            s.refused = (f"refused: an unreadable zip ({type(e).__name__}: "   # alone
                         f"{str(e)[:200]})")
    return sorted(students.values(), key=lambda s: s.name)


def content_key(root: Path, ex: str, timeout: int, student: str = "") -> str:
    """What the runner would hand the sandbox for this exercise: the submission files' bytes (or
    absence, or a symlink's target), and the student (`student`) where the exercise's tests draw
    values per student (`runner.seeded`): the same bytes handed in by two students are graded
    against each one's own draws, never against the other's."""
    h = hashlib.sha256(f"{ex}\0{timeout}\0".encode())
    if student and runner.seeded(ex):
        h.update(b"S" + student.encode("utf-8", "surrogateescape") + b"\0")
    sub = runner.find_submission(root, ex)
    for rel in submission_files(runner.PACKAGE / ex):
        f = sub / rel if sub is not None else None
        if f is not None and f.is_symlink():
            h.update(b"L" + rel.encode() + b"\0" + os.readlink(f).encode("utf-8", "replace"))
        elif f is not None and f.is_file():
            h.update(b"F" + rel.encode() + b"\0" + hashlib.sha256(f.read_bytes()).digest())
        else:
            h.update(b"M" + rel.encode() + b"\0")
    return h.hexdigest()


# ------------------------------------------------------------------------------ the workers
def _descendants(pid: int) -> list[int]:
    """Every live (non-zombie) process below pid, from /proc's parent links."""
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != b"Z":
            kids.setdefault(int(fields[1]), []).append(int(d))
    out, todo = [], [pid]
    while todo:
        for k in kids.get(todo.pop(), []):
            out.append(k)
            todo.append(k)
    return out


def kill_tree(pid: int) -> None:
    """Stop pid (it can fork no more; it is a child subreaper, so orphans of its descendants stay
    below it), kill every descendant until none is left, then kill pid."""
    try:
        os.kill(pid, signal.SIGSTOP)
    except ProcessLookupError:
        return
    for _ in range(50):
        below = _descendants(pid)
        if not below:
            break
        for k in below:
            try:
                os.kill(k, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.02)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _reseed() -> None:
    """Fresh entropy for the random generators the warmed test modules hold (module-level
    ``np.random.default_rng()``): forked from one parent, every worker would draw the same."""
    random.seed()
    try:
        import numpy as np
    except ImportError:  # pragma: no cover
        return
    np.random.seed()
    for mod in list(runner._modules.values()):
        for v in list(vars(mod).values()):
            if isinstance(v, np.random.Generator):
                try:
                    v.bit_generator.state = type(v.bit_generator)().state
                except Exception:  # noqa: BLE001, S112 - a generator we cannot reseed keeps its state
                    continue


def _serve(conn, released: bool) -> None:
    """A worker: grade (item, root, exercise, timeout) messages until None or EOF."""
    os.setsid()                                        # no terminal signals; the parent ends us
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)   # PR_SET_CHILD_SUBREAPER
        except (OSError, AttributeError):
            pass
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            break
        if msg is None:
            break
        iid, root, ex, timeout, who = msg
        _reseed()
        try:
            r = runner.run_exercise(ex, Path(root) if root else None, timeout, identity=who)
            exj = report.to_json([r], released)["exercises"][0]
        except BaseException as e:  # noqa: BLE001 - one item never stops the worker
            exj = {"died": f"grading failed: {type(e).__name__}: {e}\n"
                           + traceback.format_exc(limit=-3)[-1500:]}
        try:
            conn.send((iid, exj))
        except (OSError, ValueError):
            break
    conn.close()
    zygote.close_all()                       # os._exit runs no atexit: end them here
    os._exit(0)


class _Worker:
    def __init__(self, ctx, released: bool):
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(child, released), daemon=False)
        self.proc.start()
        child.close()
        self.item: int | None = None
        self.start = 0.0
        self.done = 0

    def stop(self, kill: bool = False) -> None:
        if not kill and self.proc.is_alive():
            try:
                self.conn.send(None)
            except OSError:
                kill = True
            else:
                self.proc.join(5)
        if self.proc.is_alive():
            kill_tree(self.proc.pid)
        self.proc.join(5)
        self.conn.close()
        zygote.remove_left_by(self.proc.pid)     # a killed worker's zygotes left their folders


def _warm(names: list[str]) -> None:
    """Import the tests (a test file that does not load is the workers' to report) and make the
    sandbox support folders, before any fork."""
    from .student import support_dir
    for ex in names:
        try:
            _collect(ex, tries=5, warn=True)
            support_dir(runner.adapters(ex))
        except Exception:  # noqa: BLE001 - run_exercise reports it per item
            print(f"grade-class: the tests of {ex} do not load here; each worker will try "
                  "again", file=sys.stderr)
            continue


def run_items(items: list[tuple[Student, str]], jobs: int, timeout: int, student_timeout: float,
              released: bool, progress=None, recycle: int = RECYCLE) -> list[dict]:
    """Grade items [(student, exercise)] in `jobs` forked workers, in the given order; one
    exercise JSON (or {'died': why}) per item, in the same order."""
    ctx = multiprocessing.get_context("fork")
    results: list[dict | None] = [None] * len(items)
    pending = deque(range(len(items)))
    workers: list[_Worker] = []
    running: dict[int, _Worker] = {}

    def charge(s: Student, seconds: float) -> None:
        s.used += seconds

    def finish(w: _Worker, verdict: dict) -> None:
        i = w.item
        s = items[i][0]
        charge(s, time.monotonic() - w.start)
        results[i] = verdict
        running.pop(i, None)
        w.item = None
        w.done += 1
        if progress:
            progress(sum(r is not None for r in results), len(items))

    def replace(w: _Worker, kill: bool) -> None:
        w.stop(kill=kill)
        workers[workers.index(w)] = _Worker(ctx, released)

    try:
        workers.extend(_Worker(ctx, released) for _ in range(max(1, min(jobs, len(items)))))
        while pending or running:
            # hand out items to idle workers
            for k in range(len(workers)):
                w = workers[k]
                if w.item is not None:
                    continue
                if w.done >= recycle or not w.proc.is_alive():
                    w.stop(kill=not w.proc.is_alive())
                    w = workers[k] = _Worker(ctx, released)
                while pending:
                    i = pending.popleft()
                    s, ex = items[i]
                    if s.spent or s.used >= student_timeout:
                        s.spent = True
                        results[i] = {"died": "not graded: the student's wall-clock budget "
                                              f"({student_timeout:g} s) was spent"}
                        continue
                    try:
                        w.conn.send((i, str(s.root) if s.root else None, ex, timeout, s.name))
                    except OSError:
                        pending.appendleft(i)
                        break
                    w.item, w.start = i, time.monotonic()
                    running[i] = w
                    break
            if not running:
                continue
            # wait for an answer, a death, or the next budget to run out
            now = time.monotonic()
            by_student: dict[int, list[_Worker]] = {}
            for i, w in running.items():
                by_student.setdefault(id(items[i][0]), []).append(w)
            left = min((student_timeout - items[ws[0].item][0].used
                        - sum(now - w.start for w in ws)) / len(ws) for ws in by_student.values())
            busy = list(running.values())
            ready = mp_wait([w.conn for w in busy] + [w.proc.sentinel for w in busy],
                            timeout=min(5.0, max(0.02, left)))
            for w in busy:
                if w.conn in ready:
                    try:
                        iid, verdict = w.conn.recv()
                    except (EOFError, OSError, ValueError):
                        w.proc.join(1)
                        finish(w, {"died": f"the grading process died (exit status "
                                           f"{w.proc.exitcode}) while grading this exercise"})
                        replace(w, kill=True)
                        continue
                    if iid == w.item:
                        finish(w, verdict)
                elif w.proc.sentinel in ready:
                    w.proc.join(1)
                    finish(w, {"died": f"the grading process died (exit status "
                                       f"{w.proc.exitcode}) while grading this exercise"})
                    replace(w, kill=True)
            # budgets
            now = time.monotonic()
            for ws in list(by_student.values()):
                ws = [w for w in ws if w.item is not None]
                if not ws:
                    continue
                s = items[ws[0].item][0]
                if s.used + sum(now - w.start for w in ws) < student_timeout:
                    continue
                s.spent = True
                for w in ws:
                    ran = now - w.start
                    finish(w, {"died": f"killed after {student_timeout:g} s, the student's "
                                       f"wall-clock budget (this exercise had run {ran:.0f} s)"})
                    replace(w, kill=True)
    finally:
        for w in workers:
            w.stop(kill=w.item is not None)
    return results


# ------------------------------------------------------------------------------ the class
def _owner_bound(verdict: dict) -> bool:
    """Whether a verdict tells of the student it was graded for, not only of the bytes: it died
    (that student's budget spent, the item killed, its worker dead) or a limit stopped a test
    (that student's cgroup; the test's time, run out beside that student's other items)."""
    return "died" in verdict or bool(verdict.get("limits")) or _killed(verdict)


def _killed(verdict: dict) -> bool:
    """Whether a signal killed a submission's process in one of the verdict's tests (the
    kernel's OOM killer in the student's cgroup sends SIGKILL and nothing is printed)."""
    return any(KILLED_BY in t.get("message", "") for t in verdict.get("tests", []))


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


def _csv_cell(text: str) -> str:
    """A gradebook cell a spreadsheet shows as text: one that starts with =, +, -, @, a tab or a
    carriage return (a student's folder or zip named ``=HYPERLINK(...)``) would be read as a
    formula, and run when the gradebook is opened; it gets a leading ``'``. The reports show the
    name without it (escaped by `report.safe`, as here)."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def _max_scores(names: list[str]) -> dict[str, float]:
    """An exercise's maximum as the grader counts it here (GPU tests skipped: no Hopper assumed),
    for a student none of whose gradings of it came back."""
    out = {}
    for ex in names:
        try:
            out[ex] = sum(c.points for c in runner.collect(ex) if not c.gpu)
        except Exception:  # noqa: BLE001 - a test file that does not load
            out[ex] = 0.0
    return out


def grade_class(class_dir: Path, out: Path, jobs: int | None = None, only: list[str] | None = None,
                timeout: int = runner.DEFAULT_TEST_TIMEOUT,
                student_timeout: float = DEFAULT_STUDENT_TIMEOUT, dedup: bool = True,
                quiet: bool = False, recycle: int = RECYCLE) -> dict:
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
    runner.seed_salt()                 # made here, once, if the tree has none: the workers read it
    with tempfile.TemporaryDirectory(prefix="grade-class-") as work:
        work = Path(work)
        students = collect(class_dir, work, names)
        from .budget import assign_uids
        assign_uids([s.name for s in students])   # no two students share a uid (or a cgroup)
        t_collect = time.monotonic() - t0
        # tasks: one per distinct (exercise, submission bytes); every student keeps its key
        keys: dict[tuple[str, str], str] = {}
        tasks: dict[str, tuple[Student, str]] = {}
        for s in students:
            if s.refused:
                continue
            for ex in names:
                if ex in s.refused_ex:
                    continue
                k = content_key(s.root, ex, timeout, s.name) if dedup else f"{s.name}\0{ex}"
                keys[s.name, ex] = k
                tasks.setdefault(k, (s, ex))
        rank = {s.name: i for i, s in enumerate(students)}
        order = sorted(tasks, key=lambda k: (tasks[k][1] not in HEAVY, rank[tasks[k][0].name],
                                             tasks[k][1]))
        t1 = time.monotonic()
        _warm(names)
        t_warm = time.monotonic() - t1

        def progress(done: int, total: int) -> None:
            if not quiet and (done % 50 == 0 or done == total):
                print(f"  graded {done}/{total} items ({time.monotonic() - t0:.0f} s)",
                      file=sys.stderr, flush=True)

        got = run_items([tasks[k] for k in order], jobs, timeout, student_timeout, released,
                        progress, recycle)
        verdicts = dict(zip(order, got))
        # (verdict, whose grading it is) per student and exercise; a verdict bound to its owner's
        # circumstances is graded again for each other student who shares its bytes
        mine = {who_ex: (verdicts[k], tasks[k][0].name) for who_ex, k in keys.items()}
        again = [(s, ex) for s in students for ex in names
                 if (s.name, ex) in mine and mine[s.name, ex][1] != s.name
                 and _owner_bound(mine[s.name, ex][0])]
        if again:
            for (s, ex), v in zip(again, run_items(again, jobs, timeout, student_timeout,
                                                   released, None, recycle)):
                mine[s.name, ex] = (v, s.name)
        maxes = _max_scores(names)
        # the maximum of an exercise a student's grading never reached: what the others' show
        ex_max = {ex: max([v["max_score"] for (_, e), (v, _) in mine.items()
                           if "died" not in v and e == ex] or [maxes[ex]]) for ex in names}
        timing = {ex: {"items": 0, "seconds": 0.0, "max_item": 0.0} for ex in names}
        for (s_name, ex), (v, who) in mine.items():
            if "died" not in v and who == s_name:          # each grading counted once
                t = timing[ex]
                t["items"] += 1
                t["seconds"] += v.get("seconds", 0.0)
                t["max_item"] = max(t["max_item"], v.get("seconds", 0.0))
        rows = []
        for s in students:
            status, exjs = [], []
            if s.refused:
                status.append(s.refused)
            for ex in names:
                v, owner = mine.get((s.name, ex), ({"died": s.refused or "not graded"}, s.name))
                if ex in s.refused_ex:
                    v = {"died": f"refused: {s.refused_ex[ex]}"}
                if "died" in v:
                    died = report.safe(v["died"]).strip()
                    if not s.refused:
                        status.append(f"{ex}: {(died.splitlines() or [''])[0]}")
                    exjs.append({"name": ex, "score": 0.0, "max_score": ex_max[ex],
                                 "error": died, "tests": [], "graded": False})
                else:
                    err = report.safe(v.get("error") or "").strip().splitlines()
                    if err:
                        status.append(f"{ex}: {err[0][:120]}")
                    for lim in v.get("limits", [])[:1]:
                        test, _, named = lim.partition(": ")
                        status.append(f"{ex}: stopped by the {named} in {test}")
                    exjs.append({**v, "graded": True,
                                 **({"same_bytes_as": owner} if owner != s.name else {})})
            total = sum(e["score"] for e in exjs)
            mx = sum(e["max_score"] for e in exjs)
            complete = not s.refused and all(e["graded"] for e in exjs)
            row = {"student": s.name, **{e["name"]: e["score"] for e in exjs}, "total": total,
                   "max": mx,
                   "status": report.safe("; ".join(status), one_line=True) or "ok",
                   "complete": complete}
            rows.append(row)
            shown = report.safe(s.name, one_line=True)
            rep = {"student": shown, "entry": report.safe(s.entry.name, one_line=True),
                   "status": row["status"],
                   "score": total, "max_score": mx, "exercises": exjs}
            graded = [e for e in exjs if e["graded"]]
            if graded:
                rep["summary"] = report.summary(_results(graded), released)
            (out / "reports" / f"{s.name}.json").write_text(report.dumps(rep))
            txt = [f"student: {shown}   ({rep['entry']})", f"status:  {row['status']}",
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
            w.writerow([_csv_cell(c) for c in (report.safe(r["student"], one_line=True),
                                               *[_fmt(r[ex]) for ex in names],
                                               _fmt(r["total"]), _fmt(r["max"]), r["status"])])
    seconds = time.monotonic() - t0
    timing_doc = {"wall_seconds": round(seconds, 1), "jobs": jobs, "cores": os.cpu_count(),
                  "students": len(students), "items": len(tasks) + len(again), "dedup": dedup,
                  "unpack_and_stage_seconds": round(t_collect, 2), "warm_seconds": round(t_warm, 2),
                  "exercises": {ex: {"items": t["items"], "seconds": round(t["seconds"], 1),
                                     "mean": round(t["seconds"] / t["items"], 2) if t["items"] else 0,
                                     "max_item": round(t["max_item"], 1)}
                                for ex, t in timing.items()}}
    (out / "timing.json").write_text(json.dumps(timing_doc, indent=1) + "\n")
    from .budget import cleanup
    cleanup()                                          # the students' cgroups, now empty
    return {"rows": rows, "exercises": names, "seconds": seconds, "students": len(students),
            "distinct": len(tasks), "regraded": len(again),
            "complete": all(r["complete"] for r in rows),
            "timing": timing_doc}


def summary_table(res: dict) -> str:
    names = res["exercises"]
    short = [n.split("_", 1)[0] + "_" + n.split("_", 1)[1][:6] for n in names]
    who = {id(r): report.safe(r["student"], one_line=True) for r in res["rows"]}
    w = max([len(n) for n in who.values()] + [7])
    lines = [f"{'student':<{w}}  " + " ".join(f"{s:>9}" for s in short) + "      total  status"]
    for r in res["rows"]:
        lines.append(f"{who[id(r)]:<{w}}  " + " ".join(f"{_fmt(r[n]):>9}" for n in names)
                     + f"  {_fmt(r['total']):>4}/{_fmt(r['max']):<4}  {r['status'][:80]}")
    tm = res.get("timing", {})
    lines.append(f"{res['students']} students, {res['distinct']} gradings"
                 f"{'' if tm.get('dedup', True) else ' (no dedup)'}"
                 + (f" and {res['regraded']} again (same bytes, but a verdict that died, hit a "
                    "limit or was killed by a signal)" if res.get("regraded") else "")
                 + f", {res['seconds']:.0f} s wall"
                 + (f" with {tm['jobs']} workers" if tm else ""))
    if tm:
        lines.append("worker-seconds by exercise: " + ", ".join(
            f"{ex} {t['seconds']:.0f} s ({t['items']} x {t['mean']:.2f})"
            for ex, t in tm["exercises"].items()))
    return "\n".join(lines)


# ------------------------------------------------------------------------------ a generated class
PATTERN = ("source", "stub", "wrong", "zip")
CLASSMATE_CHEATS = ("cheat_budget_", "cheat_isolation_")     # what a class is graded to survive


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


def _names(header_value: str | None) -> set[str]:
    return {x.strip() for x in (header_value or "").split(",") if x.strip()}


def _collect(ex: str, tries: int = 3, warn: bool = False) -> list:
    """runner.collect, tried again when the import fails: a test module that draws its values
    afresh at import may draw ones it cannot use, and a failed import is not kept, so without
    this every worker would draw again per item and some students would get the failure."""
    for k in range(tries):
        try:
            return runner.collect(ex)
        except Exception as e:
            if warn:
                print(f"grade-class: importing the tests of {ex} failed ({type(e).__name__}: "
                      f"{str(e)[:200]}){'; trying again' if k < tries - 1 else ''}",
                      file=sys.stderr)
            if k == tries - 1:
                raise
    return []


def expected_scores(kind: str, wrong_header: dict | None, names: list[str] | None = None
                    ) -> dict[str, float | None]:
    """What the grader here should give such a student, per exercise: the source every CPU test's
    points (public and hidden; GPU tests are skipped without a Hopper GPU), the stub 0, a
    known-wrong file its exercise's CPU points less those of the tests its ``# loses:`` line
    names (``all``: every one, ``none``: none). None where that cannot be known: a ``# loses:``/``# may-lose:`` name that is not one of
    the exercise's CPU tests as collected here (the wrong file and the tests disagree), or a CPU
    test that may or may not be lost."""
    out: dict[str, float | None] = {}
    for ex in names or runner.exercises():
        try:
            every = _collect(ex, tries=5)
        except Exception:  # noqa: BLE001 - the tests do not load: nothing can be expected
            out[ex] = None
            continue
        cases = [c for c in every if not c.gpu]
        full = sum(c.points for c in cases)
        if kind == "stub":
            out[ex] = 0.0
        elif wrong_header and wrong_header.get("exercise") == ex:
            cpu = {c.name: c.points for c in cases}
            gpu = {c.name for c in every if c.gpu}
            loses, may = _names(wrong_header.get("loses")), _names(wrong_header.get("may-lose"))
            loses = set(cpu) if loses == {"all"} else set() if loses == {"none"} else loses
            if (loses | may) - set(cpu) - gpu or may & set(cpu):
                out[ex] = None
            else:
                out[ex] = full - sum(cpu[t] for t in loses if t in cpu)
        else:
            out[ex] = full
    return out


def make_class(dest: Path, n: int, wrong: list[str] | None = None, zip_every: bool = True,
               unique: bool = True) -> dict[str, dict]:
    """N students in a known pattern, student i by i % 4: the source's submission files (full
    marks), the released stubs (zero: ``source.strip``, what ``release`` writes), the source with
    one known-wrong file from ``exercises/wrong`` (cycling through them, or through ``wrong`` by
    stem; the cheats that reach the classmates, ``cheat_budget_*`` (a process bomb) and
    ``cheat_isolation_*`` (a reader of other folders), first, so that every class of 8 or more
    students holds them beside correct students), and the source flat in a zip with one
    top-level folder. With `unique` (the default)
    every file a student hands in ends in a comment line naming the student, so no two students'
    files are byte-identical (dedup cannot help; the tests do not read comments). Returns
    {student: {"kind", "wrong" (stem or None), "expected" (expected_scores)}}."""
    dest.mkdir(parents=True, exist_ok=True)
    ws = sorted(((p, h) for p, h in _wrong_headers() if wrong is None or p.stem in wrong),
                key=lambda ph: not ph[0].stem.startswith(CLASSMATE_CHEATS))
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
                if unique:
                    text = text.rstrip("\n") + f"\n# handed in by {name} (generated by make_class)\n"
                target = root / rel if kind == "zip" else root / "exercises" / ex / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text)
        if kind == "zip":
            with zipfile.ZipFile(dest / f"{name}.zip", "w") as z:
                for f in sorted(root.rglob("*")):
                    z.write(f, f"{root.name}/{f.relative_to(root)}")
            shutil.rmtree(root.parent)
        plan[name] = {"kind": kind, "wrong": w[0].stem if w else None,
                      "expected": expected_scores("stub" if kind == "stub" else "source",
                                                  w[1] if w else None)}
    return plan


if __name__ == "__main__":   # python -m exercises.grading.grade_class make-class DEST N
    if len(sys.argv) == 4 and sys.argv[1] == "make-class":
        for k, v in make_class(Path(sys.argv[2]), int(sys.argv[3])).items():
            print(k, v["kind"], v["wrong"] or "", json.dumps(v["expected"]))
    else:
        sys.exit("usage: python -m exercises.grading.grade_class make-class DEST N")
