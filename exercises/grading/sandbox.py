"""Run untrusted submission code in its own process: trusted checker, untrusted code.

``run_untrusted(entry, payload, visible, files, ...)`` runs ``module:function(payload)`` from the
submission in a child process and returns an :class:`Outcome` holding what the function returned
(plain JSON data). The grader does every assertion itself, on ``Outcome.value``; nothing the child
writes (stdout, files, its environment) can set a verdict.

What the child gets
  * a fresh private directory (``work/``: cwd, HOME, TMPDIR) holding copies of the submission
    ``files`` only — regular files, flat names; a symlink, fifo, device, socket, directory, a name
    with ``/`` or ``..``, or a file over ``max_file_bytes`` is refused (:class:`Refused`);
  * copies of the ``visible`` directories (a student release: ``sim/`` ...), read-only to it;
  * ``python -I -S`` (no PYTHON* variables, no user site, no cwd on the path, no ``site``, so no
    ``.pth`` file runs — the editable install of this repository would map ``exercises`` back to
    the grader's tree) and ``sys.path`` = [work, the visible copies, the stdlib, site-packages];
  * a scrubbed environment (PATH, LANG, HOME/TMPDIR in work, one BLAS thread, ``env`` extras);
  * rlimits: address space (``memory_bytes``), CPU seconds, file size, open files, no core dumps,
    and the number of processes when the uid is dropped; a wall-clock timeout in the parent.

The result comes back over a pipe inherited by fd (8-byte length + UTF-8 JSON, at most
``max_result_bytes``; never unpickled); stdout and stderr share one pipe, kept up to
``max_output_bytes`` (the rest is read and dropped, ``output_truncated`` says so).

Isolation (``Outcome.isolation`` says which was in force)
  * always: a reaper process (``sandbox_worker.reaper``) that is ``PR_SET_CHILD_SUBREAPER``:
    a double-forked, ``setsid`` grandchild reparents to it, not to init. When the worker exits,
    times out or the parent goes away (control pipe), the reaper SIGKILLs every process below
    it (``/proc`` ppid chains, repeated until none is left), reaps them, and only then reports;
  * as root, where ``unshare --pid --fork --mount-proc --kill-child`` works (probed once; the
    environment variable ``EXERCISES_NO_NAMESPACES`` acts as a container without it): the reaper
    is pid 1 of a new PID namespace (``kill(-1)`` reaches all; if the reaper dies the kernel kills
    the namespace) with its own mount namespace and ``/proc``. The default view is an allow-list
    (`_mask_plan`): every directory on the way to what the child needs (the interpreter, its
    stdlib and site-packages, this run's directory), but the system's top-level ones, is covered
    by an empty tmpfs with only the next needed name bound back, and so are the grader's
    repository, the temp dir and every other top-level directory (`default_hide`): nothing beside
    the venv, no classmate's folder, no home. ``/usr`` and ``/usr/local`` are allow-lists too
    (`LISTED_DIRS`): only their bin, sbin, lib*, libexec, include and share (in /usr/local also
    the CUDA and driver folders) and the needed paths are bound back, so a checkout under
    /usr/src or /usr/local/<name> is out of view. ``/dev/shm`` is a private tmpfs, and so is
    ``/sys/fs/cgroup`` (an empty read-only tmpfs, laid after the worker joined its cgroup: the
    student's cgroup and its counters outlive a run);
  * where the kernel takes a seccomp filter (probed once): the worker and everything it starts
    get ``add_key``/``request_key``/``keyctl`` refused (EPERM): a uid's kernel keyrings outlive
    its runs. ``Isolation.keyring`` says whether it was in force;
  * as root: the worker runs as ``uid``/``gid`` (default ``nobody``; the runner gives each
    student a uid of its own, `budget.student_uid`), no supplementary groups,
    ``PR_SET_NO_NEW_PRIVS``, and where the host lets the grader make cgroups, in the student's
    cgroup (`budget.student_cgroup`: a CPU quota, a process count and memory for all of that
    student's processes together). Off root nothing is dropped (``isolation.uid`` is None).
  * ``Outcome.isolation.summary()`` says which of these were in force (every report prints it);
    ``Outcome.limit`` names the limit that stopped a run.
  * ``zygote=(modules...)``: the run's worker is forked, not started: a warm reaper of the same
    view (`zygote.Zygote`, one per process and view, reused) imported those modules once and
    forks a worker per run, which unshares a mount and IPC namespace of its own (an empty
    ``/dev/shm``), joins the student's cgroup, sets the rlimits and drops to the run's uid before
    the submission is imported; the zygote kills everything below it before the next run.
    ``Isolation.forked`` says so. Without it, each run starts its own reaper and interpreter.

What the caller must do: keep grader-side secrets (solutions, hidden tests, reference data) in a
directory of mode 0700 (or below one) owned by the grader's user. With the uid drop the child can
read only what is world-readable; the mount masks hide ``hide`` on top of that, but only where a
namespace could be made. Off root (no uid drop, no namespaces) the child runs as the grader's
user and can read whatever that user can: there, only a container keeps secrets.
"""
from __future__ import annotations

import functools
import json
import math
import os
import shutil
import signal
import stat
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import sandbox_worker
from .remote import seccomp
from .sandbox_worker import HEADER, kill_tree

# the worker runs as ``python -c``: the seccomp filter's pieces first, then the worker itself
WORKER_SOURCE = (Path(seccomp.__file__).read_text(encoding="utf-8") + "\n"
                 + Path(sandbox_worker.__file__).read_text(encoding="utf-8"))
GRADER_ROOT = Path(__file__).resolve().parents[2]      # the repository holding exercises/
_MISSING = object()


class Refused(ValueError):
    """A submission file that is not copied in (the message says why)."""


@dataclass
class Isolation:
    subreaper: bool = False
    pid_namespace: bool = False
    masked: list[str] = field(default_factory=list)   # directories covered in the child's view
    uid: int | None = None                             # the uid the worker ran as (None: not dropped)
    gid: int | None = None
    cgroup: str = ""                                   # the student's cgroup (CPU, pids, memory)
    solution_readable: bool | None = None              # without a namespace: can the uid read it?
    forked: bool = False                               # forked by a warm zygote (`zygote.py`)
    work_bytes: int | None = None                      # the run's folder a tmpfs of this size
    network: bool = True                               # the host's network reachable
    keyring: bool = False                              # add_key/request_key/keyctl refused
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """One line for every report: which isolation was in force."""
        if self.pid_namespace and self.masked:
            how = "PID+mount namespace, allow-list view (only the submission, the visible copy, " \
                  "the interpreter)"
        elif self.uid is not None:
            how = ("no namespace: the solution is hidden only by file permissions"
                   + (" -- and they do NOT hide it" if self.solution_readable else ""))
        else:
            how = "no namespace and no uid drop: the submission can read what the grader can"
        who = f"uid {self.uid}" if self.uid is not None else "the grader's uid"
        budget = f"cgroup {self.cgroup}" if self.cgroup else "rlimits only (no cgroup)"
        folder = (f"its folder a tmpfs of {self.work_bytes >> 20} MiB" if self.work_bytes and
                  self.pid_namespace else "its writes bounded per file only")
        net = "the network reachable" if self.network else "no network"
        keys = ("the kernel keyring refused" if self.keyring else
                "the kernel keyring NOT refused (a uid's keys outlive its runs)")
        return f"{how}; {who}; {budget}; {folder}; {net}; {keys}"


@dataclass
class Outcome:
    value: Any = None              # what the entry returned (JSON data), when `has_value`
    has_value: bool = False
    error: str = ""                # why there is no value: the entry's traceback, or the channel's fault
    returncode: int | None = None  # the worker's exit status, or -signal
    timed_out: bool = False
    output: str = ""               # stdout + stderr, cut at max_output_bytes
    output_truncated: bool = False
    killed: int = 0                # processes the reaper had to kill after the run
    seconds: float = 0.0
    isolation: Isolation = field(default_factory=Isolation)

    limits: dict = field(default_factory=dict)   # the limits the run had
    shared: bytes | None = None                  # the shared bytes as the run left them
    oom_killed: bool = False                     # SIGKILLed by the OOM killer in its cgroup

    @property
    def ok(self) -> bool:
        return self.has_value and not self.timed_out

    def _signalled(self) -> str:
        """The limit whose kill the run's end shows: the OOM killer's mark, SIGXCPU, SIGXFSZ."""
        lim = self.limits
        if self.oom_killed:
            memory = lim.get('memory_bytes') or lim.get('data_bytes')
            return (f"memory limit ({memory or CGROUP_MEMORY} bytes resident, the student's "
                    "cgroup: killed by the OOM killer)")
        if self.returncode == -24:                      # SIGXCPU
            return f"CPU-time limit ({lim.get('cpu_s', '?')} s of CPU per process)"
        if self.returncode == -25:                      # SIGXFSZ
            return f"file-size limit ({lim.get('max_write_bytes', '?')} bytes)"
        return ""

    def _cut(self) -> str:
        """The output cut or the wall clock run out."""
        if self.output_truncated:
            return f"output limit ({self.limits.get('max_output_bytes', '?')} bytes kept)"
        if self.timed_out:
            return "wall-clock limit (the test's time)"
        return ""

    @property
    def measured_limit(self) -> str:
        """The limit that stopped the run, from what the sandbox measured alone (a kill's mark or
        signal, the reaper's count of processes, the output cut, the wall clock), never from text
        the run wrote: what a status or a report may name ("" when none did)."""
        procs = self.limits.get("max_processes")
        if not self._signalled() and procs and self.killed + 1 >= procs:
            return f"process limit ({procs} processes)"    # the run's tree as large as allowed
        return self._signalled() or self._cut()

    @property
    def limit(self) -> str:
        """The limit that stopped the run, named ("" when none did), with what the run's own
        error and output tell (a message to the student; `measured_limit` for the grader)."""
        lim = self.limits
        memory = lim.get('memory_bytes') or lim.get('data_bytes')
        if self._signalled():
            return self._signalled()
        text = self.error + self.output[-4000:]
        if "No space left on device" in text:
            return f"folder-size limit ({lim.get('max_work_bytes', '?')} bytes written in all)"
        if "MemoryError" in text or "Cannot allocate memory" in text or "memory.events" in text:
            return f"memory limit ({memory} bytes)"
        if "Resource temporarily unavailable" in text or "BlockingIOError" in text and "fork" in text:
            return f"process limit ({lim.get('max_processes', '?')} processes)"
        if "too large" in self.error or "over the limit" in self.error:
            import re
            return f"result-size limit ({re.findall(r'[0-9]+', self.error)[-1]} bytes)"
        return self._cut()


# --- environment probes ------------------------------------------------------------------------

_UNSHARE: list = []
_SECCOMP: list = []
CGROUP_MEMORY = 8 << 30       # a student's cgroup's memory where the run names no memory limit


def _unshare_prefix() -> list[str]:
    """The unshare command line when it works here (root only), else []: PID, mount and network
    namespaces (a run reaches no socket but its own loopback, which is down: it can neither send
    its hidden inputs out nor fetch answers), or PID and mount alone where a network namespace
    is refused (a run's `Isolation.network` says which)."""
    if not _UNSHARE:
        base = ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child"]
        if os.environ.get("EXERCISES_NO_NAMESPACES"):     # as a container without unshare
            _UNSHARE.append([])
            return []
        found = []
        if sys.platform.startswith("linux") and os.geteuid() == 0 and shutil.which("unshare"):
            for cmd in (base + ["--net"], base):
                try:
                    if subprocess.run(cmd + ["true"], capture_output=True,
                                      timeout=10).returncode == 0:
                        found = cmd
                        break
                except (OSError, subprocess.SubprocessError):
                    continue
        _UNSHARE.append(found)
    return _UNSHARE[0]


def root_without_isolation() -> str:
    """Why a session here would run the submission as root ("" where it would not): the grader
    is root, there is no mount namespace to bind the interpreter back, and a dir on the way to
    the interpreter, its stdlib or site-packages is one other users cannot enter (a pyenv under
    /root), so the uid drop cannot happen and the submission could read the salt and the hidden
    tests."""
    if os.geteuid() != 0 or _unshare_prefix():
        return ""
    _, unreachable = _view(Path(tempfile.gettempdir()), [], True, [])
    if not unreachable:
        return ""
    return (f"as root with no mount namespace, a student's uid cannot reach {unreachable[0]}: the "
            "submission would run as root and could read the hidden tests. Install the "
            "interpreter where other users can read it (a venv under /opt or /autograder), or "
            "grade where unshare works; EXERCISES_ALLOW_UNISOLATED=1 grades anyway")


def _seccomp_ok() -> bool:
    """Whether the keyring calls can be refused by a seccomp filter here (probed once)."""
    if not _SECCOMP:
        _SECCOMP.append(sandbox_worker.seccomp_probe())
    return _SECCOMP[0]


def _nobody() -> tuple[int, int]:
    import grp
    import pwd
    try:
        uid = pwd.getpwnam("nobody").pw_uid
    except KeyError:
        uid = 65534
    for name in ("nogroup", "nobody"):
        try:
            return uid, grp.getgrnam(name).gr_gid
        except KeyError:
            pass
    return uid, 65534


def _python_paths() -> tuple[str, list[str], list[str]]:
    """(interpreter, stdlib dirs, site-packages dirs), real paths."""
    python = os.path.realpath(sys.executable)
    paths = sysconfig.get_paths()
    stdlib = []
    for key in ("stdlib", "platstdlib"):
        p = os.path.realpath(paths[key])
        if p not in stdlib:
            stdlib.append(p)
    dyn = os.path.join(stdlib[0], "lib-dynload")
    if os.path.isdir(dyn):
        stdlib.append(dyn)
    site = []
    for key in ("purelib", "platlib"):
        p = os.path.realpath(paths[key])
        if p not in site:
            site.append(p)
    return python, stdlib, site


def _others_can_enter(d: str) -> bool:
    try:
        return bool(os.stat(d).st_mode & stat.S_IXOTH)
    except OSError:
        return False


def _readable_by_others(path: Path) -> bool:
    """Could a uid that is neither the owner nor in the group list `path` (every dir above it
    enterable by others, the dir itself readable by them)?"""
    p = os.path.realpath(path)
    parts = Path(p).parts
    for i in range(2, len(parts)):
        if not _others_can_enter(os.path.join(*parts[:i])):
            return False
    try:
        mode = os.stat(p).st_mode
    except OSError:
        return False
    return bool(mode & stat.S_IROTH and mode & stat.S_IXOTH)


def _mask_plan(needed: list[str], hide: list[str], allow_list: bool = True) -> list[list]:
    """[dir, [names to bind back]] top-down: an allow-list view. Each hidden dir, each dir on the
    way to a needed path (but the system's own top-level dirs, `SYSTEM_DIRS`, which hold the
    libraries), and each dir on the way that others cannot enter is covered; under a covered dir
    only the needed paths' next names survive, so nothing beside a needed path is seen (another
    checkout beside the venv, a classmate's folder beside the class's temp dir). /usr and
    /usr/local (`LISTED_DIRS`) are allow-lists too: covered, with what an interpreter and a
    compiler read there bound back (`LISTED_NAMES`) and the needed paths' next names, so a
    checkout under /usr/src or /usr/local/<name> is not seen; they are never needed whole (an
    interpreter whose prefix is /usr or /usr/local finds its bin/ and lib/ in the list)."""
    listed = [d for d in LISTED_DIRS if allow_list and os.path.isdir(d)
              and not os.path.islink(d)]
    needed = [n for n in needed if n not in listed]
    points = set(listed)
    for h in hide:
        h = os.path.realpath(h)
        if h != "/" and os.path.isdir(h):
            points.add(h)
    def inside_needed(d: str) -> bool:     # a needed dir is whole: nothing under it is covered
        return any(not os.path.relpath(d, m).startswith("..") for m in needed)

    for n in needed:
        parts = Path(n).parts
        for i in range(2, len(parts)):
            anc = os.path.join(*parts[:i])
            if inside_needed(anc):
                break
            if (allow_list and (parts[1] not in SYSTEM_DIRS or _beyond_listed(anc, listed))) \
                    or not _others_can_enter(anc):
                points.add(anc)
    plan = []
    for d in sorted(points, key=lambda p: (p.count(os.sep), p)):
        if any(os.path.relpath(d, a).split(os.sep)[0] not in kept
               for a, kept in plan if not os.path.relpath(d, a).startswith("..")):
            continue                       # already gone: under a masked dir, not bound back
        keep = set(_listed_names(d, listed)) if d in listed else set()
        for n in needed:
            rel = os.path.relpath(n, d)
            if not rel.startswith(".."):
                keep.add(rel.split(os.sep)[0])
        keep.discard(".")
        if any(n == d for n in needed):
            continue                       # a needed dir itself is never covered
        plan.append([d, sorted(keep)])
    if os.path.isdir("/dev/shm") and not os.path.islink("/dev/shm"):
        plan.append(["/dev/shm", [], "mode=1777,size=64m"])   # private: nothing passes between runs
    return plan


SYSTEM_DIRS = {"bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "sbin", "sys",
               "usr"}
# below these the view is an allow-list too: what an interpreter (its executable, libpython, the
# loader, the shared libraries, the stdlib where the prefix is one of these) and a compiler (the
# kernel exercises' adapters) read; the rest (/usr/src, /usr/games, /usr/local/src, a checkout
# at /usr/local/<name>) is covered
LISTED_DIRS = ("/usr", "/usr/local")
LISTED_NAMES = ("bin", "sbin", "lib", "lib32", "lib64", "libx32", "libexec", "include", "share")
# and in /usr/local, where hosts put the CUDA toolkit and the driver's libraries (the GPU tests'
# kernels load them): cuda, cuda-12.4, nvidia (a GPU image's libcuda.so.1 is in
# /usr/local/nvidia/lib64); and wherever the dynamic linker is told to look (`_linker_dirs`)
GPU_PREFIXES = ("cuda", "nvidia")
LINKER_CONF = "/etc/ld.so.conf"


def _linker_dirs() -> tuple[str, ...]:
    """The library directories the dynamic linker's configuration names (``ld.so.conf`` and the
    files its ``include`` lines glob), real paths: a driver's or toolkit's libraries in a place
    of the host's choosing (a GPU image's /usr/local/nvidia/lib64) stay loadable. Read once a
    configuration file (a mask plan asks for each name it weighs)."""
    return _linker_conf_dirs(LINKER_CONF)


@functools.lru_cache(maxsize=8)
def _linker_conf_dirs(conf: str, depth: int = 0) -> tuple[str, ...]:
    import glob
    out: list[str] = []
    try:
        lines = Path(conf).read_text(errors="replace").splitlines()
    except OSError:
        return out
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("include") and depth < 4:
            pattern = os.path.join(os.path.dirname(conf), line.split(None, 1)[1].strip())
            for inc in sorted(glob.glob(pattern)):
                out += _linker_conf_dirs(inc, depth + 1)
        elif line.startswith("/"):
            out.append(os.path.realpath(line))
    return tuple(out)


def _listed_names(d: str, listed: list[str]) -> list[str]:
    """The names `_mask_plan` binds back under the listed dir `d`: those of `LISTED_NAMES` that
    are there (in /usr/local also those starting with one of `GPU_PREFIXES`), and a listed dir
    below it (/usr/local, with its own list)."""
    try:
        here = os.listdir(d)
    except OSError:
        return []
    names = [n for n in here if _listed_name(d, n)]
    names += [os.path.basename(m) for m in listed if os.path.dirname(m) == d]
    return sorted(set(names))


def _listed_name(top: str, name: str) -> bool:
    """Whether the listed dir `top` binds back its entry `name`: one of `LISTED_NAMES`, in
    /usr/local one starting with one of `GPU_PREFIXES`, or one that holds a directory of the
    dynamic linker's configuration (`_linker_dirs`)."""
    if name in LISTED_NAMES or (top == "/usr/local" and name.startswith(GPU_PREFIXES)):
        return True
    entry = os.path.join(top, name)
    return any(d == entry or d.startswith(entry + os.sep) for d in _linker_dirs())


def _beyond_listed(d: str, listed: list[str]) -> bool:
    """Whether `d` is a listed dir, or lies below one outside the names it binds back (/usr/src,
    /usr/local/venv): a dir on the way to a needed path there is covered like any other."""
    for top in listed:
        rel = os.path.relpath(d, top)
        if rel == ".":
            return True
        if rel.startswith(".."):
            continue
        first = rel.split(os.sep)[0]
        if os.path.join(top, first) in listed:
            continue                       # /usr/local below /usr: its own list decides
        if not _listed_name(top, first):
            return True
    return False


def _model_engine() -> list[Path]:
    """simpy's package directory: the course's model runs on it, a submission never needs it
    (the model exercises' roles run in the grader's simulation through the remote view), and a
    copy of the model carried inside a submission must carry simpy too (one that does runs:
    ch05's formula-speed test is what stops it there)."""
    import importlib.util
    spec = importlib.util.find_spec("simpy")
    if spec is None or not spec.submodule_search_locations:
        return []
    return [Path(p) for p in spec.submodule_search_locations]


def default_hide() -> list[Path]:
    """What a session's mount namespace covers unless told otherwise: the grader's repository,
    the temp dir, simpy (`_model_engine`), and every other top-level directory but the system's
    (an allowlist, not a list of places the course might be: another checkout, a home, /work,
    /opt, /srv, /run's sockets). What the interpreter needs under them is bound back
    (`_mask_plan`)."""
    out = [GRADER_ROOT, Path(tempfile.gettempdir()), *_model_engine()]
    try:
        tops = sorted(os.listdir("/"))
    except OSError:
        tops = []
    for name in tops:
        path = Path("/") / name
        if name not in SYSTEM_DIRS and not path.is_symlink() and path.is_dir():
            out.append(path)
    return out


# --- files ---------------------------------------------------------------------------------------

def _copy_submission(name: str, src: Path, dest_dir: Path, max_bytes: int) -> None:
    if (not isinstance(name, str) or not name or "/" in name or "\\" in name or ".." in name
            or "\x00" in name or name.startswith(".")):
        raise Refused(f"submission file name {name!r} refused: a plain file name is expected "
                      "(no '/', no '..', not hidden)")
    try:
        st = os.lstat(src)
    except OSError as e:
        raise Refused(f"submission file {name!r}: cannot stat {src}: {e.strerror}") from None
    kinds = [(stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a fifo"),
             (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory")]
    for test, what in kinds:
        if test(st.st_mode):
            raise Refused(f"submission file {name!r} refused: {src} is {what}, not a regular file")
    if not stat.S_ISREG(st.st_mode):
        raise Refused(f"submission file {name!r} refused: {src} is not a regular file")
    fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        st2 = os.fstat(fd)                 # what we opened is what we checked (no swap since)
        if not stat.S_ISREG(st2.st_mode) or (st2.st_dev, st2.st_ino) != (st.st_dev, st.st_ino):
            raise Refused(f"submission file {name!r} refused: {src} changed while it was copied")
        if st2.st_size > max_bytes:
            raise Refused(f"submission file {name!r} refused: {st2.st_size} bytes, over the "
                          f"limit of {max_bytes}")
        data = b""
        while len(data) <= max_bytes:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            data += chunk
        if len(data) > max_bytes:
            raise Refused(f"submission file {name!r} refused: over the limit of {max_bytes} bytes")
    finally:
        os.close(fd)
    out = os.open(dest_dir / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(out, "wb") as f:
        f.write(data)


def _copy_visible(src: Path, dest: Path) -> None:
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".git"))
    for dirpath, dirnames, filenames in os.walk(dest):
        os.chmod(dirpath, 0o555)
        for f in filenames:
            p = os.path.join(dirpath, f)
            if not os.path.islink(p):
                os.chmod(p, 0o444)


def _make_writable(top: Path) -> None:
    for dirpath, dirnames, filenames in os.walk(top):
        try:
            os.chmod(dirpath, 0o700)
        except OSError:
            pass


# --- pipes ---------------------------------------------------------------------------------------

def _drain(fd: int, cap: int, sink: dict) -> None:
    """Read fd to EOF; keep the first `cap` bytes, drop the rest (and say so)."""
    kept = bytearray()
    dropped = 0
    with os.fdopen(fd, "rb", buffering=0) as f:
        while True:
            chunk = f.read(1 << 16)
            if not chunk:
                break
            room = cap - len(kept)
            if room > 0:
                kept += chunk[:room]
            dropped += max(0, len(chunk) - max(room, 0))
    sink["data"], sink["dropped"] = bytes(kept), dropped


def _read_result(fd: int, cap: int, sink: dict) -> None:
    """Read one frame (at most `cap` bytes of JSON); anything else is reported, not trusted."""
    buf = bytearray()
    with os.fdopen(fd, "rb", buffering=0) as f:
        while True:
            chunk = f.read(1 << 16)
            if not chunk:
                break
            buf += chunk
            if len(buf) > cap + HEADER.size:
                sink["error"] = f"the result is too large (over {cap} bytes); not read"
                return                      # closing the pipe: the writer gets EPIPE
    if not buf:
        sink["error"] = "no result came back (the worker died or exited before returning)"
        return
    if len(buf) < HEADER.size:
        sink["error"] = "malformed result: a truncated frame header"
        return
    (n,) = HEADER.unpack(bytes(buf[:HEADER.size]))
    if n > cap:
        sink["error"] = f"the result is too large ({n} bytes, over {cap})"
        return
    if len(buf) != HEADER.size + n:
        sink["error"] = (f"malformed result: the frame says {n} bytes, the pipe held "
                         f"{len(buf) - HEADER.size}")
        return
    try:
        msg = json.loads(bytes(buf[HEADER.size:]).decode("utf-8"))
    except (ValueError, RecursionError) as e:
        sink["error"] = f"malformed result: not JSON ({str(e)[:200]})"
        return
    if not isinstance(msg, dict) or not isinstance(msg.get("ok"), bool):
        sink["error"] = "malformed result: not a result message"
    elif msg["ok"] and "value" in msg:
        sink["value"] = msg["value"]
    elif not msg["ok"] and isinstance(msg.get("error"), str):
        sink["error"] = "the entry raised:\n" + msg["error"][-20000:]
    else:
        sink["error"] = "malformed result: not a result message"


def _write_payload(fd: int, data: bytes) -> None:
    try:
        with os.fdopen(fd, "wb", buffering=0) as f:
            f.write(HEADER.pack(len(data)) + data)
    except OSError:
        pass                                # the child went away: its outcome says why


# --- the run ---------------------------------------------------------------------------------

@dataclass
class _Child:
    """A started worker: its reaper process, the pipe ends the parent keeps, the drain threads."""
    proc: subprocess.Popen
    top: Path
    iso: Isolation
    t0: float
    payload_w: int
    result_r: int
    control_w: int
    threads: list
    out_sink: dict
    st_sink: dict
    fds: list
    limits: dict = field(default_factory=dict)
    oom_watch: tuple = ((), 0)        # (the cgroups' procs files, their OOM kills at the start)


def _view(top: Path, hide: list[str], allow_list: bool, prefix: list[str]
          ) -> tuple[list, list[str]]:
    """(masks, needed paths the dropped uid cannot reach without them) of a sandbox whose runs
    live under `top`."""
    python, stdlib, site = _python_paths()
    needed = [os.path.dirname(python), os.path.realpath(sys.prefix),
              os.path.realpath(sys.base_prefix), *stdlib, *site, str(top)]
    masks = _mask_plan(needed, [str(h) for h in hide], allow_list) if prefix else []
    unreachable = [n for n in needed if not all(
        _others_can_enter(os.path.join(*Path(n).parts[:i]))
        for i in range(2, len(Path(n).parts) + 1))]
    return masks, unreachable


def _launch(entry: str, visible, files: dict[str, Path], *, session: bool, memory_bytes,
            cpu_s, max_output_bytes, max_file_bytes, max_write_bytes, max_work_bytes,
            max_open_files, max_processes, env, hide, drop_privileges, uid, gid, namespaces,
            timeout_s, data_bytes, cpus, cgroup, zygote, shared_fd: int | None = None) -> _Child:
    if not isinstance(entry, str) or entry.count(":") != 1:
        raise ValueError(f"entry must be 'module:function', got {entry!r}")
    visible = [] if visible is None else [visible] if isinstance(visible, (str, Path)) else visible
    allow_list = hide is None              # the default view: an allow-list (`_mask_plan`)
    hide = [str(h) for h in (default_hide() if hide is None else hide)]
    iso = Isolation()
    root = os.geteuid() == 0
    if root and drop_privileges:
        nuid, ngid = _nobody()
        iso.uid = nuid if uid is None else uid
        iso.gid = ngid if gid is None else gid
    else:
        iso.notes.append("uid not dropped: " + ("the grader is not root" if not root
                                                else "drop_privileges=False"))
    prefix = _unshare_prefix() if namespaces else []
    iso.work_bytes = max_work_bytes if prefix else None
    iso.network = "--net" not in prefix
    iso.keyring = _seccomp_ok()
    if not iso.keyring:
        iso.notes.append("no seccomp filter here: the kernel keyring calls are not refused")
    if not prefix:
        iso.notes.append("no PID/mount namespace (" + ("namespaces=False" if not namespaces else
                         "unshare --pid --mount-proc does not work here") + "): subreaper only")
    base_env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "MPLBACKEND": "Agg",
                "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                "PYTHONHASHSEED": "0", **(env or {})}
    z = None
    if zygote is not None:
        from . import zygote as zyg
        key = (tuple(str(v) for v in visible), tuple(sorted(base_env.items())), tuple(prefix),
               tuple(hide), allow_list, tuple(zygote), iso.uid is not None)
        try:
            z = zyg.acquire(key, lambda: zyg.Zygote(key, visible, base_env, prefix, hide,
                                                     allow_list, tuple(zygote),
                                                     iso.uid is not None))
            iso.forked = True
        except zyg.ZygoteFailed as e:         # the run still runs, from a fresh interpreter
            iso.notes.append(f"no warm zygote ({e}): this run started its own interpreter")
    t0 = time.monotonic()                  # a cold zygote's start is not the run's time
    fds: list[int] = []
    top = Path(tempfile.mkdtemp(prefix="sandbox-")) if z is None else z.run_dir()
    try:
        os.chmod(top, 0o711)
        work = top / "work"
        work.mkdir(mode=0o700)
        (work / "tmp").mkdir(mode=0o700)
        for name, src in files.items():
            _copy_submission(name, Path(src), work, max_file_bytes)
        if z is None:
            vis_paths = []
            for i, v in enumerate(visible):
                dest = top / "visible" / str(i)
                dest.parent.mkdir(mode=0o755, exist_ok=True)
                _copy_visible(Path(v), dest)
                vis_paths.append(str(dest))
            masks, unreachable = _view(top, hide, allow_list, prefix)
        else:
            vis_paths, masks, unreachable = z.vis_paths, z.masks, z.unreachable
        if iso.uid is not None:
            for p in (work, work / "tmp"):
                os.chown(p, iso.uid, iso.gid)
        python, stdlib, site = _python_paths()
        if iso.uid is not None and unreachable and not prefix:
            iso.notes.append(f"uid not dropped: the dropped uid could not reach {unreachable[0]} "
                             "and no mount namespace is available to expose it")
            iso.uid = iso.gid = None
            for p in (work, work / "tmp"):
                os.chown(p, os.geteuid(), os.getegid())

        payload_r, payload_w = os.pipe()
        result_r, result_w = os.pipe()
        control_r, control_w = os.pipe()
        status_r, status_w = os.pipe()
        out_r, out_w = os.pipe()
        fds += [payload_r, payload_w, result_r, result_w, control_r, control_w, status_r,
                status_w, out_r, out_w]
        cpu = math.ceil(cpu_s if cpu_s is not None else timeout_s)
        rlimits = [["RLIMIT_CPU", [cpu, cpu + 1]], ["RLIMIT_FSIZE", max_write_bytes],
                   ["RLIMIT_NOFILE", max_open_files], ["RLIMIT_CORE", 0]]
        if memory_bytes is not None:
            rlimits.append(["RLIMIT_AS", memory_bytes])
        if data_bytes is not None:
            rlimits.append(["RLIMIT_DATA", data_bytes])
        cg_procs: list[str] = []
        if iso.uid is not None:
            rlimits.append(["RLIMIT_NPROC", max_processes])
            if cgroup:
                from .budget import student_cgroup
                iso.cgroup, cg_procs = student_cgroup(iso.uid, cpus, max_processes,
                                                      memory_bytes or data_bytes or CGROUP_MEMORY)
        if iso.cgroup and not iso.work_bytes:
            iso.notes.append("no mount namespace: /sys/fs/cgroup (the student's cgroup's "
                             "counters) is visible to the run")
        if os.path.isdir(GRADER_ROOT / "exercises"):
            iso.solution_readable = _readable_by_others(GRADER_ROOT / "exercises")
        # TRITON_HOME: Triton takes HOME's default at import, which a zygote did before the run
        child_env = {**base_env, "HOME": str(work), "TMPDIR": str(work / "tmp"),
                     "TRITON_HOME": str(work)}
        worker_cfg = {"entry": entry, "payload_fd": payload_r, "result_fd": result_w,
                      "session": session, "path": [str(work), *vis_paths, *stdlib, *site]}
        reaper_cfg = {"status_fd": status_w, "control_fd": control_r, "payload_fd": payload_r,
                      "result_fd": result_w, "work": str(work), "shared_fd": shared_fd,
                      "masks": masks, "masks_required": bool(unreachable),
                      "uid": iso.uid, "gid": iso.gid, "rlimits": rlimits, "python": python,
                      "cgroup_procs": cg_procs, "work_bytes": iso.work_bytes,
                      "env": child_env, "seccomp": iso.keyring}
        if z is None:
            reaper_cfg["argv"] = [python, "-I", "-S", "-c", WORKER_SOURCE, "worker",
                                  json.dumps(worker_cfg)]
            cmd = prefix + [python, "-I", "-S", "-c", WORKER_SOURCE, "reaper",
                            json.dumps(reaper_cfg)]
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out_w, stderr=out_w,
                                    pass_fds=(payload_r, result_w, control_r, status_w,
                                              *([shared_fd] if shared_fd is not None else [])),
                                    cwd=str(top), env={"PATH": child_env["PATH"],
                                                       "LANG": "C.UTF-8"},
                                    start_new_session=True)
        else:
            run_fds = {"payload_fd": payload_r, "result_fd": result_w, "control_fd": control_r,
                       "status_fd": status_w, "out_fd": out_w,
                       **({"shared_fd": shared_fd} if shared_fd is not None else {})}
            req = {k: v for k, v in reaper_cfg.items()
                   if k not in run_fds and k not in ("masks", "masks_required")}
            req["worker"] = {k: v for k, v in worker_cfg.items()
                             if k not in ("payload_fd", "result_fd")}
            z.fork(req, run_fds)
            proc = _Forked(z)
        for fd in (payload_r, result_w, control_r, status_w, out_w):
            os.close(fd)
            fds.remove(fd)
        out_sink: dict = {}
        st_sink: dict = {}
        threads = [threading.Thread(target=_drain, args=(out_r, max_output_bytes, out_sink),
                                    daemon=True),
                   threading.Thread(target=_drain, args=(status_r, 1 << 20, st_sink),
                                    daemon=True)]
        for fd in (out_r, status_r):
            fds.remove(fd)                  # the threads own (and close) these now
        for t in threads:
            t.start()
        if z is not None:
            proc.status_thread = threads[1]
        for fd in (payload_w, result_r, control_w):
            fds.remove(fd)                  # the _Child's fields own these: each closed once
        return _Child(proc, top, iso, t0, payload_w, result_r, control_w, threads, out_sink,
                      st_sink, fds, {"cpu_s": cpu, "memory_bytes": memory_bytes,
                                     "data_bytes": data_bytes, "max_processes": max_processes,
                                     "max_output_bytes": max_output_bytes,
                                     "max_write_bytes": max_write_bytes,
                                     "max_work_bytes": iso.work_bytes},
                      _oom_watch(cg_procs))
    except BaseException:
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass
        if z is not None:
            from . import zygote as zyg
            zyg.discard(z)
        _make_writable(top)
        shutil.rmtree(top, ignore_errors=True)
        raise


def _oom_watch(procs: list[str]) -> tuple:
    from .budget import oom_kills
    return (tuple(procs), oom_kills(procs) if procs else 0)


def _oom_killed(c: _Child, returncode: int | None) -> bool:
    """Whether a SIGKILL that ended the run came from the OOM killer of the student's cgroup
    (its count of OOM kills went up during the run)."""
    procs, before = c.oom_watch
    if returncode != -signal.SIGKILL or not procs:
        return False
    from .budget import oom_kills
    return oom_kills(list(procs)) > before


class _Forked:
    """A worker forked by a zygote, as `_finish` waits for it: it is over when the zygote has
    written the run's status (after killing everything the run left) and closed that pipe."""

    def __init__(self, z):
        self.z, self.pid, self.returncode = z, z.proc.pid, None
        self.status_thread: threading.Thread | None = None

    def wait(self, timeout: float | None = None) -> int:
        self.status_thread.join(timeout)
        if self.status_thread.is_alive():
            if not self.z.alive():              # the zygote died: nobody will write the status
                self.returncode = -9
                return self.returncode
            raise subprocess.TimeoutExpired("zygote run", timeout)
        self.returncode = 0
        return 0

    def kill(self) -> None:
        """The zygote did not end the run when told: end the zygote (and its runs)."""
        from . import zygote as zyg
        zyg.discard(self.z)


def _finish(c: _Child, outcome: Outcome, wait_s: float, deadline: bool = True) -> Outcome:
    """Wait up to `wait_s` for the worker to end, else have the reaper kill the tree; collect
    the status, the output and the isolation report into `outcome`; remove the run's files.
    `deadline`: `wait_s` is the run's time, so a run still going at its end timed out; not so
    for the grader's own kill (`Session.close(kill=True)`), which a loaded host may take longer
    than the wait to carry out."""
    try:
        try:
            c.proc.wait(timeout=max(0.1, wait_s))
        except subprocess.TimeoutExpired:
            outcome.timed_out = deadline
            try:
                os.write(c.control_w, b"k")  # the reaper kills the tree, then reports
            except OSError:
                pass
            try:
                c.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:   # the reaper is stuck: kill below it, then it
                kill_tree(c.proc.pid)
                c.proc.kill()
                c.proc.wait()
        for t in c.threads:
            t.join(timeout=10)
        try:
            status = json.loads(c.st_sink.get("data", b"{}") or b"{}")
        except ValueError:
            status = {}
        iso = c.iso
        iso.subreaper = bool(status.get("subreaper"))
        iso.pid_namespace = bool(status.get("pid_namespace"))
        iso.masked = list(status.get("masked", []))
        iso.notes += list(status.get("notes", []))
        outcome.isolation = iso
        outcome.limits = c.limits
        outcome.killed = int(status.get("killed", 0))
        ws = status.get("wait_status")
        if ws is not None:
            outcome.returncode = (os.WEXITSTATUS(ws) if os.WIFEXITED(ws)
                                  else -os.WTERMSIG(ws) if os.WIFSIGNALED(ws) else None)
        elif c.proc.returncode not in (0, None):
            iso.notes.append(f"the reaper ended with status {c.proc.returncode}")
        outcome.oom_killed = _oom_killed(c, outcome.returncode)
        if status.get("left"):
            iso.notes.append(f"processes still alive after the kill: {status['left']}")
        outcome.output = c.out_sink.get("data", b"").decode("utf-8", errors="replace")
        outcome.output_truncated = c.out_sink.get("dropped", 0) > 0
        outcome.seconds = time.monotonic() - c.t0
        return outcome
    finally:
        if isinstance(c.proc, _Forked):
            from . import zygote as zyg
            if c.st_sink.get("data") and c.proc.z.alive():
                zyg.release(c.proc.z)           # it reported the run over: ready for the next
            else:
                zyg.discard(c.proc.z)
        for fd in (*c.fds, c.control_w, c.payload_w, c.result_r):
            if fd >= 0:                     # -1: handed to a thread, which closes it
                try:
                    os.close(fd)
                except OSError:
                    pass
        c.fds, c.control_w, c.payload_w, c.result_r = [], -1, -1, -1
        _make_writable(c.top)
        shutil.rmtree(c.top, ignore_errors=True)


_LIMITS = dict(memory_bytes=2 << 30, cpu_s=None, max_output_bytes=1 << 20,
               max_file_bytes=16 << 20, max_write_bytes=64 << 20, max_work_bytes=256 << 20,
               max_open_files=256, max_processes=64, env=None, hide=None, drop_privileges=True,
               uid=None, gid=None,
               namespaces=True, data_bytes=None, cpus=1.0, cgroup=True, zygote=None)


def run_untrusted(entry: str, payload: object, visible: Path | list[Path] | None,
                  files: dict[str, Path], *, timeout_s: float = 60.0,
                  max_result_bytes: int = 64 << 20, shared: bytes | None = None,
                  **limits) -> Outcome:
    """Call ``entry`` ("module:function", importable from the submission files or the visible
    trees) with ``payload`` (JSON data) in an isolated child; see the module docstring.
    `limits` (defaults in `_LIMITS`): memory_bytes (None: no address-space cap, e.g. for CUDA),
    cpu_s, max_output_bytes, max_file_bytes, max_write_bytes, max_work_bytes (all the run writes
    in its folder together, where a mount namespace lets its folder be a tmpfs of that size),
    max_open_files, max_processes, env, hide, drop_privileges, uid, gid, namespaces.

    `shared`: bytes the child gets in a memory file (its fd number is ``payload["shared_fd"]``,
    the payload must be a dict) and may write; `Outcome.shared` holds them as the run left them,
    read here, after the child is gone: what the child did to them, whatever it says.

    Raises :class:`Refused` for a submission file that is not taken. Everything the child did is
    in the returned :class:`Outcome`; the child cannot raise in the caller.
    """
    unknown = set(limits) - set(_LIMITS)
    if unknown:
        raise TypeError(f"unknown limit(s) {sorted(unknown)}; expected {sorted(_LIMITS)}")
    mfd = None
    if shared is not None:
        mfd = os.memfd_create("grader-shared", 0)
        os.write(mfd, shared)
        payload = {**payload, "shared_fd": mfd}
    data = json.dumps(payload, allow_nan=True).encode("utf-8")
    try:
        c = _launch(entry, visible, files, session=False, timeout_s=timeout_s,
                    **{**_LIMITS, **limits}, shared_fd=mfd)
    except BaseException:
        if mfd is not None:
            os.close(mfd)
        raise
    res_sink: dict = {}
    writer = threading.Thread(target=_write_payload, args=(c.payload_w, data), daemon=True)
    reader = threading.Thread(target=_read_result, args=(c.result_r, max_result_bytes, res_sink),
                              daemon=True)
    c.payload_w = c.result_r = -1           # the threads own (and close) these now
    c.threads += [writer, reader]
    writer.start()
    reader.start()
    outcome = _finish(c, Outcome(), timeout_s - (time.monotonic() - c.t0))
    if mfd is not None:
        outcome.shared = os.pread(mfd, len(shared), 0)
        os.close(mfd)
    if "value" in res_sink:
        outcome.value, outcome.has_value = res_sink["value"], True
    else:
        outcome.error = res_sink.get("error", "no result came back")
    if outcome.timed_out:
        outcome.error = (f"timed out after {timeout_s:g} s (wall clock); " + outcome.error
                         if not outcome.has_value else f"timed out after {timeout_s:g} s")
    elif outcome.returncode is not None and outcome.returncode < 0 and not outcome.has_value:
        outcome.error += f" (the worker was killed by signal {-outcome.returncode})"
    return outcome


def _proc_times() -> dict[int, tuple[str, int, float, float]]:
    """pid -> (name, ppid, own CPU s, waited-for children's CPU s) of every process, from
    /proc/<pid>/stat (stat(5): fields 14-17 are utime, stime, cutime, cstime, in clock ticks;
    a thread group's own time holds its threads', the ended ones too)."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    try:
        names = os.listdir("/proc")
    except OSError:                        # no /proc here: nothing counted
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                data = f.read()
            rest = data[data.rindex(b")") + 2:].split()       # rest[0]: field 3, the state
            utime, stime, cutime, cstime = (int(x) / tick for x in rest[11:15])
            out[int(name)] = (data[data.index(b"(") + 1:data.rindex(b")")].decode(
                "utf-8", "replace"), int(rest[1]), utime + stime, cutime + cstime)
        except (OSError, ValueError, IndexError):
            continue
    return out


def _threads_cpu_s(pid: int) -> float:
    """The CPU seconds of `pid`'s live threads, to the nanosecond (/proc/<pid>/task/*/schedstat,
    whose first field is a thread's time on a CPU); 0 where the kernel keeps no schedstat."""
    total = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0.0
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat", "rb") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return total / 1e9


def _tree_cpu_s(root: int) -> float:
    """CPU seconds of the sandbox below `root` (`Session.cpu_s`). `root` is the sandbox's own
    process: its reaper (or zygote), or the ``unshare`` process whose one child is that reaper.
    Those are the grader's: only what they waited for counts (the orphans the reaper reaped);
    every process below them counts in full, with what it waited for. A process's own time is
    the larger of its stat(5) count (every thread's, the ended ones too, in 10 ms ticks) and its
    live threads' to the nanosecond: exact for a process whose threads all live (a session's
    worker), within a tick for one whose threads ended."""
    table = _proc_times()
    children: dict[int, list[int]] = {}
    for pid, (_name, ppid, _own, _waited) in table.items():
        children.setdefault(ppid, []).append(pid)
    trusted = {root}
    if root in table and table[root][0] == "unshare":
        trusted.update(children.get(root, ()))
    total, todo, seen = 0.0, [root], set()
    while todo:
        pid = todo.pop()
        if pid in seen or pid not in table:
            continue
        seen.add(pid)
        _name, _ppid, own, waited = table[pid]
        total += waited if pid in trusted else max(own, _threads_cpu_s(pid)) + waited
        todo.extend(children.get(pid, ()))
    return total


def _signal_note(out: Outcome) -> str:
    """The note that a signal ended the worker (its number), or nothing."""
    rc = out.returncode
    return f" (the worker was killed by signal {-rc})" if rc is not None and rc < 0 else ""


class SessionEnded(RuntimeError):
    """The worker of a `Session` is gone (it exited, crashed, sent garbage or ran out of time);
    the message says why, `outcome` holds its output and status."""

    def __init__(self, why: str, outcome: Outcome | None = None):
        super().__init__(why)
        self.outcome = outcome


class Session:
    """A worker that stays up for a conversation: ``entry`` ("module:function") is called with a
    channel (``recv()`` -> JSON data, ``send(data)``) and serves requests until the parent closes
    it. `request(msg, timeout_s)` sends one frame and returns the next frame the worker sends.

    Every frame from the worker is untrusted data (checked for size and form only). A worker that
    does not answer in time, exits, or sends a bad frame ends the session: `request` raises
    `SessionEnded`, and every process below it is killed. `close()` ends it on purpose.
    Same isolation and limits as `run_untrusted` (`timeout_s` here is the CPU-time cap).
    """

    def __init__(self, entry: str, visible, files: dict[str, Path], *, cpu_s: float = 600.0,
                 max_frame_bytes: int = 16 << 20, max_total_bytes: int = 128 << 20, **limits):
        unknown = set(limits) - set(_LIMITS)
        if unknown:
            raise TypeError(f"unknown limit(s) {sorted(unknown)}; expected {sorted(_LIMITS)}")
        self.max_frame_bytes = max_frame_bytes
        self.max_total_bytes = max_total_bytes     # all answers of the session together
        self.received = 0
        self._c = _launch(entry, visible, files, session=True, timeout_s=cpu_s,
                          **{**_LIMITS, **limits, "cpu_s": cpu_s})
        self.outcome: Outcome | None = None
        self.requests = 0

    @property
    def alive(self) -> bool:
        return self.outcome is None

    def request(self, msg: object, timeout_s: float) -> object:
        if self.outcome is not None:
            raise SessionEnded("the session has ended", self.outcome)
        data = json.dumps(msg, allow_nan=True).encode("utf-8")
        try:
            os.write(self._c.payload_w, HEADER.pack(len(data)))
            view = memoryview(data)
            while view:
                view = view[os.write(self._c.payload_w, view):]
        except OSError:
            self._end("the submission's process went away", died=True)
        self.requests += 1
        return self._read(time.monotonic() + timeout_s, timeout_s)

    def _read(self, deadline: float, timeout_s: float) -> object:
        import select

        def exactly(n: int) -> bytes:
            buf = bytearray()
            while len(buf) < n:
                left = deadline - time.monotonic()
                ready = select.select([self._c.result_r], [], [], max(0.0, left))[0] if left > 0 \
                    else []
                if not ready:
                    self._end(f"no answer within {timeout_s:g} s (wall clock)", timed_out=True)
                chunk = os.read(self._c.result_r, min(1 << 20, n - len(buf)))
                if not chunk:
                    self._end("the submission's process ended", died=True)
                buf += chunk
            return bytes(buf)

        (n,) = HEADER.unpack(exactly(HEADER.size))
        if n > self.max_frame_bytes:
            self._end(f"an answer of {n} bytes, over the limit of {self.max_frame_bytes}")
        self.received += n
        if self.received > self.max_total_bytes:
            self._end(f"answers of {self.received} bytes in all, over the limit of "
                      f"{self.max_total_bytes}")
        try:
            return json.loads(exactly(n).decode("utf-8"))
        except (ValueError, RecursionError) as e:
            self._end(f"an answer that is not JSON ({str(e)[:200]})")

    def cpu_s(self) -> float:
        """The CPU seconds (user + system) the session's processes have used so far, as the
        kernel counts them and the grader reads them from /proc: the worker and every process
        below it (its threads, and what its children that ended and were waited for used), and
        what the processes that ended and were reaped by the sandbox's reaper used (its counters
        of waited-for children). Not the reaper's own time, and nothing the submission reports:
        a helper it forked at import, or one that has exited since, counts as the worker does.
        The difference of two readings is what the session used between them."""
        if self.outcome is not None:
            raise SessionEnded("the session has ended", self.outcome)
        return _tree_cpu_s(self._c.proc.pid)

    def _end(self, why: str, timed_out: bool = False, died: bool = False):
        out = self.close(kill=True)
        out.timed_out = out.timed_out or timed_out
        note = _signal_note(out) if died else ""        # ended on its own: say what ended it
        out.error = why + note
        tail = out.output[-2000:]
        told = f"; its output ended with:\n{tail}" if tail.strip() else ""
        told += f"\n{note.strip()}" if told and note else note     # last: a cut message keeps it
        raise SessionEnded(why + told, out)

    def close(self, kill: bool = False) -> Outcome:
        """End the worker (closing its input; killing the tree if it lingers or `kill`)."""
        if self.outcome is not None:
            return self.outcome
        c = self._c
        if kill:
            try:
                os.write(c.control_w, b"k")
            except OSError:
                pass
        try:
            os.close(c.payload_w)              # EOF: a serving worker returns
        except OSError:
            pass
        c.payload_w = -1
        self.outcome = _finish(c, Outcome(), 0.1 if kill else 2.0, deadline=not kill)
        return self.outcome

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


__all__ = ["Isolation", "Outcome", "Refused", "Session", "SessionEnded", "run_untrusted"]
