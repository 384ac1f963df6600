"""Run the graders: the tests run here, the submission's code in a sandbox.

Layout of one grading run: the *grader tree* is the ``exercises/`` package this file belongs to
(the instructor's source with its ``hidden/`` tests, or a student's released copy with public
tests only). For each exercise ``chNN_*`` the runner imports that exercise's test modules from
the grader tree (once per process: the references they compute at import are computed once), and
binds a `Student` to the submission's files (those named in the exercise's ``exercise.json``,
taken from ``PATH``). Each test then runs in this process; whenever it needs the submission it
asks the student's sandbox session (`student.py`), so every assertion, and every reference value,
stays on the grader's side, where the submission cannot reach it.

A submission that hangs, crashes, floods its output or exits loses only the test it was in: the
session ends (`SubmissionFailed` in the test), the next test starts a fresh one. Every test gets a
fresh sandbox process (the session is closed after each; the next is forked from a warm zygote
that never ran submission code: `zygote`), so no test is answered from state an earlier test
left in the submission's process.

Per student (`identity`, the student's name in ``grade-class``, ``--student`` for ``grade``): the
sandboxes run under a uid of the student's own (`budget.student_uid`) and in its cgroup where the
host allows one, and every NumPy generator the test modules hold (``RNG`` ...) is reseeded before
each test from the identity, the sha256 of the submission's files, the test's name and the
course's secret salt (`seed_salt`, `seed_identity`), and the hidden test modules are imported once
per (student, files) with their ``random.SystemRandom()`` draws seeded the same way
(`_seeded_import`), so each student draws hidden values of its own, the same ones again in a
regrade of the same files, and new ones for any other file (`seed`): values a submission learned
and wrote into the next are not the next one's. Each test has a
deadline (``--timeout``, or its ``@pytest.mark.timeout``) that bounds the submission's time.
"""
from __future__ import annotations

import ast
import importlib.util
import inspect
import os
import sys
import tempfile
import time
import traceback
from concurrent.futures import ProcessPoolExecutor
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path

from .source import submission_files
from .student import Student

PACKAGE = Path(__file__).resolve().parents[1]          # .../exercises
ROOT = PACKAGE.parent                                   # the repo root (sim/ lives here)
DEFAULT_TEST_TIMEOUT = 120                              # seconds per test
# A submission file's size: 4x the largest solution file (7.4 KB), room for a student's comments,
# not for a packed copy of the whole course's model (the engine, the cost rules and simpy: ~53 KB
# zipped, 70 KB as base64). What one schedule needs, stripped of its docstrings, fits (ch05's
# `ws` and simpy's core: 20 KB packed): the size is no defence against a carried model; the tests
# are (ch05's formula-speed test).
SUBMISSION_MAX_BYTES = 32 << 10
CURRENT: ContextVar[Student | None] = ContextVar("student", default=None)


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
    isolation: str = ""              # which isolation was in force (`sandbox.Isolation.summary`)
    limits: list = field(default_factory=list)   # limits that stopped the submission, named
    not_installed: str = ""          # what a released copy lacks to grade it (left out of the max)

    @property
    def score(self) -> float:
        return sum(t.score for t in self.tests)

    @property
    def max_score(self) -> float:
        return sum(t.points for t in self.tests if t.outcome != "skipped")


# --- collection ----------------------------------------------------------------------------------

@dataclass
class Case:
    """One test function of an exercise, with what its marks say."""
    nodeid: str
    name: str
    fn: object
    points: float
    hidden: bool
    gpu: bool
    timeout: float | None
    doc: str


_modules: dict[Path, object] = {}


def _import(path: Path, identity: str = ""):
    """Import a test module from the grader tree, with pytest's assertion rewriting (the failure
    messages a student reads), once per process; a hidden test module once per student
    (`identity`), its import-time draws seeded from the student (`_seeded_import`)."""
    path = path.resolve()
    if identity and path.parent.name == "hidden":
        return _seeded_import(path, identity)
    if path not in _modules:
        src = path.read_text(encoding="utf-8")
        tree = ast.parse(src, str(path))
        try:
            from _pytest.assertion.rewrite import rewrite_asserts
            rewrite_asserts(tree, src.encode(), str(path), None)
        except ImportError:  # pragma: no cover - plain asserts still fail, with less detail
            pass
        name = "grader_" + "_".join(path.with_suffix("").parts[-3:])
        spec = importlib.util.spec_from_loader(name, loader=None, origin=str(path))
        mod = importlib.util.module_from_spec(spec)
        mod.__file__ = str(path)
        sys.modules[name] = mod
        exec(compile(tree, str(path), "exec"), mod.__dict__)   # noqa: S102 - the grader's own tests
        _modules[path] = mod
    return _modules[path]


_seeded: dict[tuple[Path, str], object] = {}


def _seeded_import(path: Path, identity: str):
    """The hidden test module `path` imported for `identity`: while it runs, every
    ``random.SystemRandom()`` it makes is a ``random.Random`` seeded from (identity, file, how
    many it made before), so the values it draws at import (a hidden block count, a hidden
    hardware preset) are the student's own and the same in a regrade."""
    import itertools
    import random
    key = (path, identity)
    if key not in _seeded:
        for old in [k for k in _seeded if k[0] == path]:
            del _seeded[old]                      # one student's copy at a time
        real, made = random.SystemRandom, itertools.count()
        rel = "/".join(path.parts[-3:])
        random.SystemRandom = lambda *a: random.Random(seed(identity, rel, next(made)))
        try:
            src = path.read_text(encoding="utf-8")
            tree = ast.parse(src, str(path))
            try:
                from _pytest.assertion.rewrite import rewrite_asserts
                rewrite_asserts(tree, src.encode(), str(path), None)
            except ImportError:  # pragma: no cover
                pass
            name = "grader_seeded_" + "_".join(path.with_suffix("").parts[-3:])
            spec = importlib.util.spec_from_loader(name, loader=None, origin=str(path))
            mod = importlib.util.module_from_spec(spec)
            mod.__file__ = str(path)
            sys.modules[name] = mod
            exec(compile(tree, str(path), "exec"), mod.__dict__)   # noqa: S102 - the grader's own tests
        finally:
            random.SystemRandom = real
        _seeded[key] = mod
    return _seeded[key]


def _marks(fn) -> dict:
    out = {}
    for m in getattr(fn, "pytestmark", []):
        out[m.name] = m.args
    return out


def collect(ex: str, tree: Path = PACKAGE, identity: str = "") -> list[Case]:
    """The tests of exercise `ex`: its ``test_*.py``, then ``hidden/test_*.py``, in file order
    (the hidden ones imported for `identity` when one is given: `_seeded_import`)."""
    folder = tree / ex
    files = sorted(folder.glob("test_*.py")) + sorted((folder / "hidden").glob("test_*.py"))
    cases = []
    for path in files:
        mod = _import(path, identity)
        hidden = path.parent.name == "hidden"
        for name, fn in vars(mod).items():
            if not (name.startswith("test_") and inspect.isfunction(fn)):
                continue
            marks = _marks(fn)
            rel = path.relative_to(tree).as_posix()
            cases.append(Case(f"{rel}::{name}", name, fn, float(marks.get("points", (0,))[0]),
                              hidden, "gpu" in marks,
                              float(marks["timeout"][0]) if "timeout" in marks else None,
                              (fn.__doc__ or "").strip().split("\n")[0]))
    return cases


# --- running -------------------------------------------------------------------------------------

_HOPPER: list = []


def kernels_installed() -> bool:
    """Whether triton and torch import here: the Gluon and tl exercises need them."""
    return all(importlib.util.find_spec(m) is not None for m in ("triton", "torch"))


def hopper() -> bool:
    """Is there a Hopper GPU here? (asked once, only when a gpu test is to run)."""
    if not _HOPPER:
        ok = False
        if not os.environ.get("EXERCISES_ASSUME_NO_GPU"):
            try:
                import torch
                ok = bool(torch.cuda.is_available() and torch.cuda.get_device_capability(0)[0] == 9)
            except ImportError:
                ok = False
        _HOPPER.append(ok)
    return _HOPPER[0]


def _outcome(exc: BaseException) -> tuple[str, str]:
    from _pytest.outcomes import Failed, Skipped
    if isinstance(exc, Skipped):
        return "skipped", str(exc.msg)
    if isinstance(exc, Failed):
        return "failed", str(exc.msg)
    if isinstance(exc, AssertionError):
        return "failed", (str(exc) or "assertion failed") + "\n" + _where(exc)
    return "failed", "".join(traceback.format_exception(exc, limit=-3))[-4000:]


def _where(exc: BaseException) -> str:
    tb = traceback.extract_tb(exc.__traceback__)
    return "\n".join(f"  {f.filename.split('/exercises/')[-1]}:{f.lineno} in {f.name}"
                     for f in tb[-2:])


# The secret of the per-student draws: the instructor's alone (never released: `release.SKIP`;
# carried by the Gradescope zip; git-ignored beside this file), made once on first use.
SALT_FILE = PACKAGE / "grading" / "SEED_SALT"
_salt_read: dict[Path, str] = {}


def seed_salt() -> str:
    """The salt of every per-student seed: ``EXERCISES_SEED_SALT`` where set, else the contents
    of `SALT_FILE`, written the first time it is needed from the system's entropy, so that a
    regrade with the same file draws the same values. Without it a student could compute the
    seeds, and so the hidden values, from their own name. A released copy has none and no hidden
    tests: ""."""
    env = os.environ.get("EXERCISES_SEED_SALT", "")
    if env:
        return env
    if released():
        return ""
    if SALT_FILE not in _salt_read:
        if not SALT_FILE.exists():
            _write_salt(SALT_FILE)
        _salt_read[SALT_FILE] = SALT_FILE.read_text(encoding="ascii").strip()
    return _salt_read[SALT_FILE]


def _write_salt(path: Path) -> None:
    """A fresh secret in `path`, readable by its owner alone; the first of processes racing to
    write it wins (a hard link never replaces a file), so all of them read one salt."""
    import secrets
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, (secrets.token_hex(32) + "\n").encode("ascii"))
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)
        print(f"exercises: wrote a new seed salt to {path}: keep it (the Gradescope zip carries "
              "it); a regrade without it draws other hidden values", file=sys.stderr)
    except FileExistsError:
        pass
    finally:
        tmp.unlink()


def seed(identity: str, *key) -> int:
    """The seed of `identity`'s draws for `key` (the test, the generator's name): the same for
    one student in every run, different between students; the course's secret salt
    (`seed_salt`) keeps a student from computing their own or another's."""
    import hashlib
    text = "\x00".join([seed_salt(), identity, *map(str, key)])
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def _digest_files(files: dict) -> str:
    """sha256 over the submission files' names and bytes (a link's target, a missing file)."""
    import hashlib
    h = hashlib.sha256()
    for rel in sorted(files):
        f = Path(files[rel])
        if f.is_symlink():
            h.update(b"L" + rel.encode() + b"\0" + os.readlink(f).encode("utf-8", "replace"))
        elif f.is_file():
            with open(f, "rb") as fh:
                data = fh.read(SUBMISSION_MAX_BYTES + 1)
            h.update(b"F" + rel.encode() + b"\0" + hashlib.sha256(data).digest())
        else:
            h.update(b"M" + rel.encode() + b"\0")
    return h.hexdigest()


def submission_digest(ex: str, sub: Path | None, tree: Path = PACKAGE) -> str:
    """The digest of the files of exercise `ex` that `sub` hands in (`_digest_files`)."""
    return _digest_files({rel: (sub / rel if sub is not None else Path("/nonexistent") / rel)
                          for rel in submission_files(tree / ex)})


def seed_identity(identity: str, digest: str) -> str:
    """What a student's draws are seeded from (`seed`): the student and the bytes handed in. A
    regrade of the same files draws the same values; any other file (one that holds answers to
    the values a former submission drew) draws new ones. "" (no per-student draws) without an
    identity."""
    return f"{identity}\0{digest}" if identity else ""


def seeded(ex: str, tree: Path = PACKAGE) -> bool:
    """Whether a student's grading of `ex` draws values of its own (`seed`): the exercise has
    hidden test modules (imported per student: `_seeded_import`) or a test module holds a NumPy
    Generator or a `random.Random` (reseeded per student before each test: `reseed`)."""
    import random

    import numpy as np
    if any((tree / ex / "hidden").glob("test_*.py")):
        return True
    for path in sorted((tree / ex).glob("test_*.py")):
        mod = _import(path)
        if any(isinstance(v, (np.random.Generator, random.Random)) for v in vars(mod).values()):
            return True
    return False


def reseed(case: Case, identity: str) -> None:
    """Reseed every NumPy Generator and `random.Random` the test modules of `case` hold."""
    import random

    import numpy as np
    mod = sys.modules.get(getattr(case.fn, "__module__", ""), None)
    mods = [m for m in [*_modules.values(), *_seeded.values()] if m is mod or
            Path(getattr(m, "__file__", "")).parent in (Path(case.fn.__code__.co_filename).parent,
                                                        Path(case.fn.__code__.co_filename).parent.parent)]
    for m in mods:
        for name, obj in list(vars(m).items()):
            if isinstance(obj, np.random.Generator):
                setattr(m, name, np.random.default_rng(seed(identity, case.nodeid, name)))
            elif isinstance(obj, random.Random):
                obj.seed(seed(identity, case.nodeid, name))


def structured_limit(outcome) -> str:
    """The limit that stopped a sandbox run (`Outcome.measured_limit`: from what the sandbox
    measured, never from text the run wrote); "" for no run or none."""
    return outcome.measured_limit if outcome is not None else ""


def _limit_of(exc: BaseException, student: Student) -> str:
    """The limit that stopped the submission in a failed test: the structured outcome of the
    sandbox session that ended (carried by the exception chain), or the test's deadline passed
    on the grader's clock. A message's text never names a limit: the submission writes it."""
    from .sandbox import SessionEnded
    from .student import TIME_RAN_OUT, SubmissionFailed
    if getattr(student, "grader_limit", ""):         # counted by the grader (`ModelCallLimit`):
        return student.grader_limit                 # the model's run may carry it as text only
    seen, todo = set(), [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen or len(seen) > 50:
            continue
        seen.add(id(e))
        if isinstance(e, SessionEnded):
            named = structured_limit(e.outcome)
            if named:
                return named
        if (type(e) is SubmissionFailed and str(e) == TIME_RAN_OUT and student.deadline
                and time.monotonic() >= student.deadline):
            return "wall-clock limit (the test's time)"
        todo += [e.__cause__, e.__context__]
    return ""


def _close_session(student: Student):
    """End the student's live session, if any, and return its measured outcome (None if none)."""
    session = getattr(student, "_session", None)
    if session is None:
        return None
    out = session.close(kill=True)
    student.output, student.isolation = out.output, out.isolation
    student._session = None
    return out


def run_case(case: Case, student: Student, timeout: float) -> tuple[str, str]:
    """Run one test against `student`: (outcome, message). The limit that stopped the
    submission, if one did, is left in ``student.stopped_by`` (`_limit_of`)."""
    from _pytest.outcomes import OutcomeException
    student.stopped_by = student.grader_limit = ""
    params = inspect.signature(case.fn).parameters
    unknown = set(params) - {"tmp_path"}
    if unknown:
        return "failed", f"the grader's test asks for fixtures it cannot have: {sorted(unknown)}"
    token = CURRENT.set(student)
    if student.identity:
        sid = getattr(student, "seed_identity", "") or seed_identity(
            student.identity, _digest_files(student.files))
        reseed(case, sid)
    student.deadline = time.monotonic() + (case.timeout or timeout)
    try:
        with tempfile.TemporaryDirectory(prefix="case-") as tmp:
            case.fn(**({"tmp_path": Path(tmp)} if "tmp_path" in params else {}))
        return "passed", ""
    except (Exception, OutcomeException) as e:  # noqa: BLE001 - the test's verdict
        try:
            student.stopped_by = (_limit_of(e, student)
                                  or structured_limit(_close_session(student)))
        except Exception:  # noqa: BLE001 - no limit named
            student.stopped_by = ""
        return _outcome(e)
    finally:
        student.deadline = None
        student.close()                 # a fresh sandbox for the next test
        CURRENT.reset(token)


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


def adapters(ex: str, tree: Path = PACKAGE) -> tuple[Path, ...]:
    """The exercise's files that run on the submission's side (``_*.py`` beside its tests)."""
    return tuple(sorted(p for p in (tree / ex).glob("_*.py") if p.name != "__init__.py"))


def _linked(root: Path, path: Path) -> Path | None:
    """The first symlink on the way from `root` down to `path` (the file included), if any."""
    here = root
    for part in path.relative_to(root).parts:
        here = here / part
        if here.is_symlink():
            return here
    return None


def unisolated() -> str:
    """Why this host would run a submission as root (`sandbox.root_without_isolation`), unless
    EXERCISES_ALLOW_UNISOLATED is set; "" where grading is safe. Nothing is graded then."""
    from .sandbox import root_without_isolation
    return "" if os.environ.get("EXERCISES_ALLOW_UNISOLATED") else root_without_isolation()


def anonymous_owner() -> str:
    """Who a grading without a student's name runs as: a student of its own (no name can hold
    a NUL), so that two such gradings at once, or one beside a named student's, never share a
    uid, its process count or its cgroup (a process bomb in one would stop the other's
    sessions from starting)."""
    import secrets
    return "\0anonymous\0" + secrets.token_hex(8)


def student_for(ex: str, sub: Path | None, tree: Path = PACKAGE,
                root: Path | None = None, identity: str = "", owner: str = "") -> Student:
    """The submission's files of exercise `ex` in folder `sub` (found under `root`). A symlink on
    the way to a file (the file or a folder above it, up to `root`) is refused: what it reaches
    is not the student's upload. As root its sessions run under the uid of `owner` (the
    student's name, or a grading's `anonymous_owner`; a fresh one where neither is given)."""
    from .sandbox import Refused
    files = {}
    for rel in submission_files(tree / ex):
        if sub is None or not ((sub / rel).is_file() or (sub / rel).is_symlink()):
            continue
        link = _linked(root or sub, sub / rel) if (sub / rel).is_relative_to(root or sub) \
            else sub / rel
        if link is not None:
            raise Refused(f"submission file {rel!r} refused: {link} is a symbolic link")
        size = (sub / rel).stat().st_size
        if size > SUBMISSION_MAX_BYTES:
            raise Refused(f"submission file {rel!r} refused: {size} bytes, over the limit of "
                          f"{SUBMISSION_MAX_BYTES} bytes for a submission file")
        files[rel] = sub / rel
    limits = {"max_file_bytes": SUBMISSION_MAX_BYTES}
    if os.geteuid() == 0:
        from .budget import student_uid
        uid = student_uid(owner or identity or anonymous_owner())
        limits.update(uid=uid, gid=uid)
    return Student(files, adapters(ex, tree), memory_bytes=4 << 30, identity=identity,
                   limits=limits)


def run_exercise(ex: str, submission_root: Path | None, test_timeout: int = DEFAULT_TEST_TIMEOUT,
                 keyword: str | None = None, test: str | None = None,
                 identity: str = "", owner: str = "") -> ExerciseResult:
    t0 = time.monotonic()
    result = ExerciseResult(ex)
    sub = find_submission(submission_root, ex) if submission_root else None
    seed_id = seed_identity(identity, submission_digest(ex, sub))
    try:
        cases = collect(ex, identity=seed_id)
    except Exception:  # noqa: BLE001 - a broken grader tree: say so, score nothing
        result.error = "the exercise's tests did not load:\n" + traceback.format_exc(limit=-4)
        return result
    if keyword:
        cases = [c for c in cases if keyword in c.name]
    if test:
        cases = [c for c in cases if c.name == test]
    if released() and not kernels_installed():
        from .release import needs_kernels
        if needs_kernels(PACKAGE / ex):
            result.not_installed = "requirements-kernels.txt"
            result.tests = [TestResult(c.nodeid, c.name, c.points, "skipped",
                                       "needs requirements-kernels.txt (triton, torch)",
                                       hidden=c.hidden, gpu=c.gpu, doc=c.doc) for c in cases]
            return result
    from .report import safe
    from .sandbox import Refused
    unsafe = unisolated()
    if unsafe:
        result.error = "not graded: " + unsafe
        return result
    try:
        student = student_for(ex, sub, root=submission_root, identity=identity, owner=owner)
        student.seed_identity = seed_id
    except Refused as e:
        student = None
        refused = str(e)
    try:
        for c in cases:
            tr = TestResult(c.nodeid, c.name, c.points, hidden=c.hidden, gpu=c.gpu, doc=c.doc)
            if c.gpu and not hopper():
                tr.outcome, tr.message = "skipped", "needs a Hopper (sm_90a) GPU; none here"
            elif student is None:
                tr.outcome, tr.message = "failed", refused
            else:
                try:
                    tr.outcome, tr.message = run_case(c, student, test_timeout)
                except Refused as e:                      # a submission file refused at start
                    tr.outcome, tr.message = "failed", str(e)
                if student.isolation is not None and not result.isolation:
                    result.isolation = student.isolation.summary()
                if tr.outcome == "failed" and getattr(student, "stopped_by", ""):
                    result.limits.append(f"{c.name}: {student.stopped_by}")
            tr.message = safe(tr.message)
            result.tests.append(tr)
    finally:
        if student is not None:
            student.close()
    result.error = safe(result.error)
    result.seconds = time.monotonic() - t0
    return result


def _run_one(args) -> ExerciseResult:
    return run_exercise(*args)


def warm(names: list[str]) -> None:
    """Import the exercises' tests here, before forking workers: their references are computed
    once and shared."""
    for n in names:
        collect(n)


def grade(submission_root: Path | None, only: list[str] | None = None, jobs: int | None = None,
          test_timeout: int = DEFAULT_TEST_TIMEOUT, keyword: str | None = None,
          test: str | None = None, identity: str = "") -> list[ExerciseResult]:
    names = exercises()
    if only:
        unknown = sorted(set(only) - set(names))
        if unknown:
            raise SystemExit(f"unknown exercise(s) {', '.join(unknown)}; expected {', '.join(names)}")
        names = [n for n in names if n in only]
    jobs = jobs or max(1, min(len(names), os.cpu_count() or 1))
    owner = identity or anonymous_owner()       # one grading, one budget: all its exercises
    args = [(n, submission_root, test_timeout, keyword, test, identity, owner) for n in names]
    if jobs == 1 or len(names) == 1:
        return [_run_one(a) for a in args]
    warm(names)
    import multiprocessing
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as pool:
        return list(pool.map(_run_one, args))


__all__ = ["CURRENT", "ExerciseResult", "TestResult", "exercises", "grade", "released",
           "run_exercise"]
