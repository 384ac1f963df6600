"""The grader's side of a submission: its code runs in a sandbox session, never here.

`Student(files)` holds one submission's files. `student.module("ring.py")` is a stand-in for the
submission's module: calling one of its functions sends the call to the submission's process and
returns what came back, decoded as plain data (`remote.codec`); a function that makes a generator
returns a generator here that steps the submission's, so it can be a role the grader's model runs
(``simulate(..., roles={"producer": student.module("producer.py").producer})``) or be used with
``yield from``. A `sim.RoleView` passed as an argument reaches the submission as a stand-in CTA
(`remote.cta`) whose every call this side carries out on the real view, so the run, its clock and
its event log stay in the grader's process.

Every answer is untrusted data: decoded with the codec's limits, checked by the tests. A session
that ends (a crash, an exit, a hang past the test's deadline) raises `SubmissionFailed` in the
test; the next use starts a fresh one. The runner closes the session after every test, so no test
is answered from what an earlier one handed over.

A kernel exercise's adapters (``_compile.py``, ``_gpu.py``, ``_run_kernel.py``: the grader's code
that compiles, launches or interprets a kernel) never share a process with the submission's
module-level code: a call to an adapter (``student.call("_compile:...")``) runs in a fresh sandbox
of its own that holds the adapters and, for each submission file, only what `kernel_source` keeps
of it (the jit functions, constants and Triton imports), so nothing the submission does at import
(rebinding the compile helper, ``torch.full``, the runner, posing as a ``triton.runtime.jit``
object) exists there. What comes back was computed by the grader's code.
"""
from __future__ import annotations

import dataclasses
import itertools
import shutil
import tempfile
import time
from pathlib import Path

from .kernel_source import KernelRefused, kernel_module
from .remote import codec
from .remote.codec import Ref
from .sandbox import Session, SessionEnded, run_untrusted
from .source import preload

REMOTE = Path(__file__).resolve().parent / "remote"
ENTRY = "course_remote.serve:main"
PRELOAD = ("numpy", "course_remote.serve")     # what every session imports before the submission
CTA_CALLS = ("now", "wg", "tile", "delay", "expect", "arrive", "tma_copy", "load_q", "release",
             "qk", "pv")
CTA_STEPS = ("wait", "acquire", "softmax", "rescale", "pack", "epilogue")
_support_dirs: dict = {}


# named as a limit (the runner lists it with the others, grade-class never reuses such a verdict)
TIME_RAN_OUT = ("the test's time ran out while the submission computed\n"
                "stopped by the wall-clock limit (the test's time)")


class SubmissionFailed(AssertionError):
    """The submission's process failed to answer (the message says how); the test fails."""


# Each call a role makes on its CTA, and each step it yields, is carried out by the grader's model
# in the grader's own process and leaves events there: a 60-byte request costs the grader about
# a kilobyte, so a role that makes millions of calls grows the grader (not its sandbox) by
# gigabytes. A right role makes at most about 2,500 in the longest run a test makes (48 blocks,
# three consumers); a session is stopped past eight times that.
MODEL_CALLS = 20_000


class ModelCallLimit(SubmissionFailed):
    """A session made more calls into the grader's model than any right role needs."""

    limit = (f"model-call limit ({MODEL_CALLS} calls and steps a session into the grader's "
             "model)")


class CPUBudget(SubmissionFailed):
    """A batch of calls took more CPU in the submission's processes than the test allows
    (`Student.timed_calls`: counted by the grader from /proc, never the submission's word)."""


# how often a counted batch reads the session's CPU (a read scans /proc: a few milliseconds)
CPU_READ_EVERY = 50


class SubmissionRaised(AssertionError):
    """The submission's code raised; the message carries its traceback."""


def support_dir(adapters: tuple[Path, ...] = ()) -> Path:
    """A private folder holding what a sandbox gets besides the submission: `course_remote/`
    (this package's `remote/`) and the exercise's adapter files (made once per process)."""
    key = tuple(str(a) for a in adapters)
    if key not in _support_dirs:
        d = Path(tempfile.mkdtemp(prefix="grader-support-"))
        shutil.copytree(REMOTE, d / "course_remote",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        for a in adapters:
            shutil.copyfile(a, d / Path(a).name)
        _support_dirs[key] = d
    return _support_dirs[key]


class _View:
    """A RoleView the submission holds a stand-in of: its barriers and rings by name, and the
    events its calls made."""

    def __init__(self, view, vid: int):
        self.view, self.vid, self.events = view, vid, []
        self.rings = {r.name: r for r in (view.k, view.v)}
        self.bars = {b.name: b for r in (view.k, view.v) for b in (*r.full, *r.empty)}
        self.bars[view.q_full.name] = view.q_full
        self.bars.update({b.name: b for b in view.turns.bar})

    def static(self) -> dict:
        v = self.view
        ring = lambda r: {"name": r.name, "stages": r.stages, "full": [b.name for b in r.full],
                          "empty": [b.name for b in r.empty]}
        return {"view": self.vid, "cfg": _fields(v.cfg), "n_blocks": v.n_blocks, "el": v.el,
                "producer_name": v.producer_name, "k": ring(v.k), "v": ring(v.v),
                "q_full": v.q_full.name,
                "turns": {"n": v.turns.n, "bar": [b.name for b in v.turns.bar]}}

    def decode(self, data):
        def hook(tag, body):
            if tag == "bar" and body in self.bars:
                return self.bars[body]
            if tag == "ring" and body in self.rings:
                return self.rings[body]
            if tag in ("bar", "ring"):
                raise TypeError(f"no {tag} named {body!r} in this CTA")
            return None
        return codec.decode(data, hook)


def _limit_named(kind: str, tb: str, limits: dict) -> str:
    """The limit a raised error says the submission ran into ("" for any other error)."""
    if kind == "MemoryError":
        return f"memory limit ({limits.get('memory_bytes') or limits.get('data_bytes')} bytes)"
    if kind == "BlockingIOError" and "Resource temporarily unavailable" in tb:
        return f"process limit ({limits.get('max_processes')} processes)"
    if "No space left on device" in tb:
        return f"folder-size limit ({limits.get('max_work_bytes')} bytes written in all)"
    return ""


def _fields(obj) -> dict:
    """A dataclass's fields and the properties its class defines, as plain data."""
    out = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    for name in dir(type(obj)):
        if isinstance(getattr(type(obj), name, None), property):
            try:
                out[name] = getattr(obj, name)
            except Exception:  # noqa: BLE001, S112 - a property that needs more than the fields
                continue
    return {k: (_fields(v) if dataclasses.is_dataclass(v) else v) for k, v in out.items()
            if v is None or isinstance(v, (bool, int, float, str)) or dataclasses.is_dataclass(v)}


class Student:
    """One submission: its files (name -> path; a missing file fails the tests that use it),
    what the sandbox gets besides them (`adapters`), and the limits of its process."""

    def __init__(self, files: dict[str, Path], adapters: tuple[Path, ...] = (),
                 memory_bytes: int | None = 2 << 30, timeout_s: float = 120.0,
                 env: dict[str, str] | None = None, identity: str = "",
                 limits: dict | None = None):
        self.files = {k: Path(v) for k, v in files.items()}
        self.adapters = tuple(adapters)
        self.memory_bytes = memory_bytes
        self.timeout_s = timeout_s
        self.env = dict(env or {})
        self.identity = identity                # who it is (seeds its hidden values: `seed`)
        self.limits = dict(limits or {})        # sandbox limits of this student (its own uid ...)
        self.isolation = None                   # what the last session had in force
        self.trusted = False                    # holds only the kept kernel (adapters may run)
        self.memo: dict = {}                    # what tests computed from this submission
        self.deadline: float | None = None     # the running test's; the runner sets it
        self._session: Session | None = None
        self._views: dict[int, _View] = {}
        self._ids = itertools.count()
        self.output = ""                        # what the last ended session printed
        self.grader_limit = ""                  # a limit the grader's side counted this test
        self._model_calls = 0                   # this session's calls into the grader's model

    # --- the session --------------------------------------------------------------------------
    def _live(self) -> Session:
        if self._session is None or not self._session.alive:
            # forked from a warm process (`zygote`) that ran these first; the adapters' own
            # warm-up (exercise.json's "preload") only where they are, beside the kept kernel
            warm = PRELOAD + (tuple(preload(self.adapters[0].parent))
                              if self.trusted and self.adapters else ())
            t0 = time.monotonic()
            self._session = Session(ENTRY, [support_dir(self.adapters if self.trusted else ())],
                                    self.files, memory_bytes=self.memory_bytes, env=self.env,
                                    zygote=warm, **self.limits)
            if self.deadline is not None:      # the grader's start-up (a cold zygote's warm-up)
                self.deadline += time.monotonic() - t0   # is not the submission's time
            self._views = {}
            self._model_calls = 0
        return self._session

    def _model_call(self) -> None:
        """Count one call or step of the submission's into the grader's model (`MODEL_CALLS`)."""
        self._model_calls += 1
        if self._model_calls > MODEL_CALLS:
            self._stop(ModelCallLimit, ModelCallLimit.limit,
                       f"the submission made more than {MODEL_CALLS} calls and steps into the "
                       "grader's model in one session (a right role makes a few thousand)")

    def _stop(self, exc: type[SubmissionFailed], limit: str, why: str) -> None:
        """End the session at a limit the grader counted and raise `exc`; the runner names
        `limit` in the student's status (`_limit_of` reads ``grader_limit``)."""
        self.grader_limit = limit
        self.close()
        raise exc(f"{why}\nstopped by the {limit}")

    def close(self) -> None:
        if self._session is not None:
            out = self._session.close(kill=True)
            self.output, self.isolation = out.output, out.isolation
            self._session = None

    def _ask(self, msg: dict) -> dict:
        left = (self.deadline - time.monotonic()) if self.deadline else self.timeout_s
        if left <= 0:
            self.close()
            raise SubmissionFailed(TIME_RAN_OUT)
        session = self._live()
        try:
            reply = session.request(msg, left)
            while isinstance(reply, dict) and "req" in reply:
                self._model_call()
                reply = session.request(self._serve(reply), max(0.1, self.deadline - time.monotonic()
                                                                if self.deadline else left))
        except SessionEnded as e:
            self.output = e.outcome.output if e.outcome else ""
            if e.outcome is not None:
                self.isolation = e.outcome.isolation
            limit = e.outcome.limit if e.outcome is not None else ""
            raise SubmissionFailed(f"the submission's process failed: {e}"
                                   + (f"\nstopped by the {limit}" if limit else "")) from None
        if not isinstance(reply, dict) or not (len(reply) == 1 or set(reply) == {"value", "args"}):
            self.close()
            raise SubmissionFailed(f"the submission's process sent a malformed answer: "
                                   f"{str(reply)[:200]}")
        if "raise" in reply:
            kind, tb = (reply["raise"] + ["", ""])[:2] if isinstance(reply["raise"], list) else \
                ("?", str(reply["raise"]))
            limit = _limit_named(str(kind), str(tb), session._c.limits)
            raise SubmissionRaised(f"the submission raised {kind}:\n{str(tb)[-4000:]}"
                                   + (f"\nstopped by the {limit}" if limit else ""))
        return reply

    # --- CPU counted by the grader ----------------------------------------------------------------
    def timed_calls(self, target: str, calls: list[tuple], budget_s: float | None = None,
                    what: str = "") -> tuple[list, float]:
        """(the values of ``target(*args)`` for each `args` in `calls`, the CPU seconds they took):
        the calls made one after another in this submission's session, as every call is made,
        and their CPU counted by the grader: the session's process tree as the kernel counts it
        (`sandbox.Session.cpu_s`: the worker, every process it started, the ended ones too),
        read before the first and every `CPU_READ_EVERY` calls. A first call of ``calls[0]``
        starts the session and imports the submission before the count starts. Past `budget_s`
        the session is stopped and `CPUBudget` raised, the limit named (`what` says what the
        budget is for)."""
        calls = [tuple(args) for args in calls]
        if not calls:
            return [], 0.0
        self.call(target, *calls[0])
        session = self._session
        start = session.cpu_s()
        used, values = 0.0, []
        for i, args in enumerate(calls):
            values.append(self.call(target, *args))
            if (i + 1) % CPU_READ_EVERY and i + 1 < len(calls):
                continue
            if self._session is not session:
                raise SubmissionFailed("the submission's session ended during the counted calls")
            used = session.cpu_s() - start
            if budget_s is not None and used > budget_s:
                self._stop(CPUBudget, f"CPU-time budget ({budget_s:.3f} s of CPU in the "
                           f"submission's processes for {len(calls)} calls"
                           + (f": {what}" if what else "") + ")",
                           f"after {i + 1} of {len(calls)} calls the submission's processes had "
                           f"used {used:.3f} s of CPU, over the budget of {budget_s:.3f} s for "
                           f"all {len(calls)}")
        return values, used

    def alike(self, files: dict[str, Path]) -> Student:
        """Other files (the grader's own, e.g. to measure what serving a batch of calls costs)
        in a sandbox like this submission's: the same limits, uid and cgroup, adapters,
        environment and deadline. Close it when done."""
        other = Student(files, self.adapters, self.memory_bytes, self.timeout_s, self.env,
                        self.identity, self.limits)
        other.deadline = self.deadline
        return other

    # --- what the submission's CTA asks for ----------------------------------------------------
    def _serve(self, req: dict) -> dict:
        try:
            view = self._views[req["view"]]
            method = req["req"]
            if method not in CTA_CALLS:
                raise TypeError(f"a role has no call {method!r}")
            args = view.decode(req.get("args", []))
            if not isinstance(args, list):
                raise TypeError("malformed arguments")
            if method == "now":
                return {"value": view.view.now}
            if method in ("expect", "arrive"):
                bar = args[0] if args else None
                if not hasattr(bar, "arrive"):
                    raise TypeError(f"expected one of this CTA's barriers, got {bar!r}")
                getattr(bar, method)(*args[1:])
                return {"value": None}
            out = getattr(view.view, method)(*args)
            if method in ("qk", "pv", "delay"):
                view.events.append(out)
                return {"value": codec.encode(Ref("event", len(view.events) - 1))}
            return {"value": codec.encode(out)}
        except (TypeError, ValueError, KeyError, IndexError) as e:
            kind = "ValueError" if isinstance(e, ValueError) else "TypeError"
            return {"raise": [kind, f"{type(e).__name__}: {e}"]}
        except Exception as e:  # noqa: BLE001 - the model refused the call (misuse)
            return {"raise": ["GraderError", f"{type(e).__name__}: {e}"]}

    def _encode_arg(self, obj):
        from sim import RoleView
        if isinstance(obj, RoleView):
            vid = next(self._ids)
            self._views[vid] = _View(obj, vid)
            return {"cta": codec.encode(self._views[vid].static())}
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            return {"rec": codec.encode(_fields(obj))}
        return None

    # --- calls ---------------------------------------------------------------------------------
    def call(self, target: str, *args, **kwargs):
        """`target` ("module:function") called with `args` in the submission's process: its
        value, or a generator that steps the submission's generator. A call to one of the
        exercise's adapters runs in a fresh sandbox holding only the kept kernel (`kernel`)."""
        if not self.trusted and target.partition(":")[0] in {a.stem for a in self.adapters}:
            k = self.kernel()
            try:
                return k.call(target, *args, **kwargs)
            finally:
                k.close()
                self.isolation = k.isolation
                shutil.rmtree(k._kernel_dir, ignore_errors=True)
        self._live()
        before = set(self._views)
        msg = self._call_request(target, args, kwargs)
        views = [v for k, v in self._views.items() if k not in before]
        reply = self._ask(msg)
        if "gen" in reply:
            return self._drive(reply["gen"], views, self._session)
        if "value" in reply:
            return codec.decode(reply["value"])
        raise SubmissionFailed(f"an unexpected answer to a call: {str(reply)[:200]}")

    def _call_request(self, target: str, args: tuple, kwargs: dict) -> dict:
        """The request of a call: every call's, the argument check's too (`call_in_session`)."""
        return {"op": "call", "target": target,
                "args": codec.encode(list(args), self._encode_arg),
                "kwargs": codec.encode(kwargs, self._encode_arg)}

    def call_in_session(self, target: str, *args, **kwargs):
        """(value, args, kwargs) of a call made as every call is made: in the submission's
        session, after the calls before it, on the serving path up to the function, with the
        arguments sent back as the call left them. So a function cannot tell this call from a
        graded one; the echo is the session's word (a serving loop the submission patched could
        lie), which `call_echo` checks in a process of its own. The request is a graded call's,
        byte for byte: every call's answer carries its arguments back (`serve._call`)."""
        self._live()
        reply = self._ask(self._call_request(target, args, kwargs))
        try:
            value = codec.decode(reply["value"])
            after = codec.decode(reply["args"])
        except (KeyError, TypeError, ValueError):
            after = None
        if not (isinstance(after, list) and len(after) == 2):
            raise SubmissionFailed(f"an unexpected answer to a call: {str(reply)[:200]}")
        return (value, *after)

    def call_echo(self, target: str, *args, **kwargs):
        """(value, args, kwargs) of a call, the arguments as the call left them. The call runs in
        a fresh sandbox where every array argument is a view of a memory file (`serve.
        echo_shared`); the arrays handed back are read from that file here, after the run, so
        what the function did to them shows whatever the submission's process reports."""
        import numpy as np
        buf = bytearray()

        def lay(obj):
            if isinstance(obj, np.ndarray) and obj.dtype.name in codec.DTYPES:
                off = -(-len(buf) // 64) * 64
                buf.extend(b"\0" * (off - len(buf)))
                buf.extend(np.ascontiguousarray(obj).tobytes())
                return {"shm": [obj.dtype.name, list(obj.shape), off]}
            return None
        enc_args, enc_kwargs = codec.encode(list(args), lay), codec.encode(kwargs, lay)
        left = (self.deadline - time.monotonic()) if self.deadline else self.timeout_s
        if left <= 0:
            raise SubmissionFailed(TIME_RAN_OUT)
        out = run_untrusted(ENTRY.replace(":main", ":echo_shared"),
                            {"target": target, "args": enc_args, "kwargs": enc_kwargs,
                             "size": len(buf)}, [support_dir()], self.files, timeout_s=left,
                            shared=bytes(buf) or b"\0", memory_bytes=self.memory_bytes,
                            env=self.env, zygote=PRELOAD, **self.limits)
        self.output, self.isolation = out.output, out.isolation
        if not out.ok:
            raise SubmissionFailed(f"the submission's process failed: {out.error[-4000:]}"
                                   + (f"\nstopped by the {out.limit}" if out.limit else ""))
        after = out.shared

        def back(tag, body):
            if tag != "shm":
                return None
            dtype, shape, off = body
            n = int(np.prod(shape, dtype=np.int64))
            return np.frombuffer(after, dtype=dtype, count=n, offset=off).reshape(shape).copy()
        return (codec.decode(out.value), codec.decode(enc_args, back),
                codec.decode(enc_kwargs, back))

    def _drive(self, gid, views, session):
        """Step the submission's generator `gid`; each step it yields is done here by the
        model (on the view it was handed) before the next."""
        view = views[0] if views else None
        send = None
        while True:
            if self._session is not session:
                raise SubmissionFailed("the submission's process ended during this generator")
            self._model_call()
            reply = self._ask({"op": "next", "gen": gid, "send": send})
            if "return" in reply:
                return codec.decode(reply["return"])
            if "yield" not in reply:
                raise SubmissionFailed(f"an unexpected answer while stepping: {str(reply)[:200]}")
            yield from self._step(view, reply["yield"])

    def _step(self, view: _View | None, token):
        if view is not None and isinstance(token, dict) and "tok" in token:
            kind, args = token["tok"] if isinstance(token["tok"], list) else (None, None)
            if kind in CTA_STEPS:
                args = view.decode(args)
                yield from getattr(view.view, kind)(*args)
                return
        if view is not None and isinstance(token, dict) and "ref" in token:
            ref = codec.decode(token)
            if ref.kind == "event" and 0 <= ref.id < len(view.events):
                yield view.events[ref.id]
                return
        raise TypeError(f"the role yielded {str(token)[:120]}: a role yields only what cta.qk, "
                        "cta.pv and cta.delay return, and `yield from`s cta.wait, cta.acquire, "
                        "cta.softmax, cta.rescale, cta.pack and cta.epilogue")

    def variant(self, env: dict[str, str] | None = None, gpu: bool = False) -> Student:
        """The same submission in a session of its own, with `env` (and without the address-space
        cap for a GPU: CUDA maps far more address space than it uses; the data limit stays)."""
        other = Student(self.files, self.adapters, None if gpu else self.memory_bytes,
                        self.timeout_s, env, self.identity,
                        {**self.limits, **({"data_bytes": self.limits.get("data_bytes", 8 << 30)}
                                           if gpu else {})})
        other.deadline = self.deadline
        return other

    def kernel(self) -> Student:
        """This submission as the grader compiles it: a Student (a fresh sandbox when used)
        whose files are what `kernel_source.kernel_module` keeps of each submission file, with
        the exercise's adapters beside them. A file the grader will not compile fails the test
        (`SubmissionFailed`, naming the line and the rule)."""
        d = Path(tempfile.mkdtemp(prefix="grader-kernel-"))
        files = {}
        for name, path in self.files.items():
            try:
                text = path.read_text(encoding="utf-8")
                (d / name).write_text(kernel_module(text, name) if name.endswith(".py") else text,
                                      encoding="utf-8")
            except (KernelRefused, SyntaxError, UnicodeDecodeError, OSError) as e:
                shutil.rmtree(d, ignore_errors=True)
                raise SubmissionFailed(f"{name}: {e}") from None
            files[name] = d / name
        k = Student(files, self.adapters, self.memory_bytes, self.timeout_s, self.env,
                    self.identity, self.limits)
        k.deadline, k.trusted, k._kernel_dir = self.deadline, True, d
        return k

    _kernel_dir: Path | None = None

    def module(self, file: str) -> SubmissionModule:
        return SubmissionModule(self, file)


class SubmissionModule:
    """The submission file `file` as the grader uses it: ``m.f(*args)`` calls ``f`` there."""

    def __init__(self, student: Student, file: str):
        if file not in student.files:
            raise FileNotFoundError(f"submission file {file} is missing")
        self._student, self._name = student, Path(file).stem

    def __getattr__(self, fn: str):
        if fn.startswith("_"):
            raise AttributeError(fn)
        return lambda *args, **kwargs: self._student.call(f"{self._name}:{fn}", *args, **kwargs)

    def echo(self, fn: str, *args, **kwargs):
        """Call `fn`; (its value, args, kwargs), the arguments as it left them."""
        return self._student.call_echo(f"{self._name}:{fn}", *args, **kwargs)

    def echo_in_session(self, fn: str, *args, **kwargs):
        """Call `fn` as every call is made (`Student.call_in_session`); (its value, args,
        kwargs), the arguments as it left them."""
        return self._student.call_in_session(f"{self._name}:{fn}", *args, **kwargs)


__all__ = ["CPUBudget", "Student", "SubmissionFailed", "SubmissionModule", "SubmissionRaised",
           "support_dir"]
