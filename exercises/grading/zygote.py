"""Warm sandboxes: each run's worker forked from a process that has already imported what every
run needs, instead of a fresh interpreter that imports it again.

A `Zygote` is the sandbox's reaper (``sandbox_worker.zygote``) started once per view: the same
``unshare`` PID and mount namespace, the same allow-list masks, the same copies of the visible
trees, as root. It imports its ``preload`` list (numpy, the remote side ``course_remote.serve``,
an exercise's heavy modules such as Triton and torch: the grader's code, never a submission's)
and then serves runs: ``sandbox._launch(..., zygote=preload)`` makes the run's folder under the
zygote's, and hands the zygote the run's settings and its pipe ends (over a ``SOCK_SEQPACKET``
socket, as fds); the zygote forks the worker, which gets a mount and IPC namespace of its own
(an empty ``/dev/shm``), joins the student's cgroup, sets its rlimits, becomes the student's uid
and only then imports the submission. When the worker ends, the zygote kills every process below
it before it reads the next request, and reports the run's status on the run's status pipe, as a
reaper does. So every run (every test) still starts from a process in which no submission code
has ever run, and what one run leaves in memory, in a file or in a process dies with it.

One zygote serves one run at a time; `acquire` finds an idle one of the same view (visible
trees, environment, namespaces, hidden paths, preload) or starts another. A zygote lives as long
as the process that started it (a grade-class worker: all the students that worker grades, each
run under its student's uid and cgroup), and ends when that process closes its socket or exits.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
from pathlib import Path

READY_TIMEOUT_S = 300.0           # importing torch on a loaded host can take a while
PREFIX = "sandbox-z-"             # a zygote's folder: PREFIX<pid of the process that owns it>-...


class ZygoteFailed(RuntimeError):
    """The zygote did not start, or went away."""


class Zygote:
    def __init__(self, key: tuple, visible: list[Path], env: dict[str, str], prefix: list[str],
                 hide: list[str], allow_list: bool, preload: tuple[str, ...], uid_drop: bool):
        from . import sandbox
        self.key, self.busy, self.runs = key, False, 0
        self.owner = os.getpid()
        self.top = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{self.owner}-"))
        self.proc: subprocess.Popen | None = None
        self.sock: socket.socket | None = None
        try:
            os.chmod(self.top, 0o711)
            self.vis_paths = []
            for i, v in enumerate(visible):
                dest = self.top / "visible" / str(i)
                dest.parent.mkdir(mode=0o755, exist_ok=True)
                sandbox._copy_visible(Path(v), dest)
                self.vis_paths.append(str(dest))
            (self.top / "runs").mkdir(mode=0o711)
            home = self.top / "home"                  # HOME while preloading: root's, 0700
            home.mkdir(mode=0o700)
            self.masks, self.unreachable = sandbox._view(self.top, hide, allow_list, prefix)
            python, stdlib, site = sandbox._python_paths()
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            self.sock = ours
            zenv = {**env, "HOME": str(home), "TMPDIR": str(home)}
            cfg = {"sock_fd": theirs.fileno(), "masks": self.masks,
                   "masks_required": bool(self.unreachable) and uid_drop, "uid": None,
                   "env": zenv, "path": [*self.vis_paths, *stdlib, *site],
                   "preload": list(preload)}
            self.proc = subprocess.Popen(
                prefix + [python, "-I", "-S", "-c", sandbox.WORKER_SOURCE, "zygote",
                          json.dumps(cfg)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                pass_fds=(theirs.fileno(),), cwd=str(self.top), env=zenv,
                start_new_session=True)
            theirs.close()
            ours.settimeout(READY_TIMEOUT_S)
            try:
                msg = ours.recv(1 << 20)
            except OSError as e:
                raise ZygoteFailed(f"the zygote did not report ready: {e}") from None
            ours.settimeout(None)
            if not msg:
                raise ZygoteFailed(f"the zygote exited while starting ({self.proc.poll()})")
            self.status = json.loads(msg.decode("utf-8"))
            if not self.status.get("ok"):
                raise ZygoteFailed("the zygote could not start: "
                                   + "; ".join(self.status.get("notes", [])))
        except BaseException:
            self.close()
            raise

    def run_dir(self) -> Path:
        """A fresh folder for one run (its work/ is made by the caller)."""
        self.runs += 1
        d = self.top / "runs" / str(self.runs)
        d.mkdir(mode=0o711)
        return d

    def fork(self, req: dict, fds: dict[str, int]) -> None:
        """Ask for a worker: `req` (JSON: the worker's settings) and the run's fds by role
        (payload_fd, result_fd, control_fd, status_fd, out_fd, shared_fd)."""
        names = list(fds)
        data = json.dumps({**req, "fds": names}).encode("utf-8")
        try:
            socket.send_fds(self.sock, [data], [fds[n] for n in names])
        except OSError as e:
            raise ZygoteFailed(f"the zygote went away: {e}") from None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def forget(self) -> None:
        """In a process forked from the owner: drop our copy of the socket, touch nothing else."""
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()                 # EOF: the zygote kills what is left and exits
            self.sock = None
        if self.proc is not None and self.owner == os.getpid():
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                from .sandbox_worker import kill_tree
                kill_tree(self.proc.pid)
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        from .sandbox import _make_writable
        _make_writable(self.top)
        shutil.rmtree(self.top, ignore_errors=True)


_POOL: dict[tuple, list[Zygote]] = {}
_LOCK = threading.Lock()
_ENDING: set[int] = set()                     # processes whose exit ends their zygotes


def acquire(key: tuple, start) -> Zygote:
    """An idle zygote of view `key` (marked busy), or a new one from `start()`. A zygote
    inherited from the process this one was forked from is never used (its socket is shared)."""
    with _LOCK:
        for z in [z for zs in _POOL.values() for z in zs if z.owner != os.getpid()]:
            z.forget()                       # a fork of the process that owns these: not ours
        for k in list(_POOL):
            _POOL[k] = [z for z in _POOL[k] if z.owner == os.getpid()]
        zs = _POOL.setdefault(key, [])
        for z in list(zs):
            if not z.alive():
                zs.remove(z)
                z.close()
            elif not z.busy:
                z.busy = True
                return z
    z = start()
    z.busy = True
    with _LOCK:
        _POOL.setdefault(key, []).append(z)
        if os.getpid() not in _ENDING:        # at this process's exit, also a pool worker's
            import multiprocessing.util
            multiprocessing.util.Finalize(None, close_all, exitpriority=10)
            _ENDING.add(os.getpid())
    return z


def release(z: Zygote) -> None:
    z.busy = False


def discard(z: Zygote) -> None:
    with _LOCK:
        zs = _POOL.get(z.key, [])
        if z in zs:
            zs.remove(z)
    z.close()


def close_all() -> None:
    """End this process's zygotes and remove their folders: at its exit (a multiprocessing
    finalizer, which a pool's worker runs too); a process that leaves with ``os._exit`` calls it
    first, or its zygotes notice the closed socket and their folders stay (`remove_left_by`)."""
    with _LOCK:
        zs = [z for v in _POOL.values() for z in v if z.owner == os.getpid()]
        _POOL.clear()
    for z in zs:
        z.close()


def remove_left_by(pid: int) -> int:
    """Remove the folders of the zygotes that process `pid` started (it is gone: killed, or
    ended with ``os._exit``, so its zygotes' folders outlived it); how many."""
    from .sandbox import _make_writable
    n = 0
    for d in Path(tempfile.gettempdir()).glob(f"{PREFIX}{int(pid)}-*"):
        _make_writable(d)
        shutil.rmtree(d, ignore_errors=True)
        n += 1
    return n


__all__ = ["Zygote", "ZygoteFailed", "acquire", "close_all", "discard", "release",
           "remove_left_by"]
