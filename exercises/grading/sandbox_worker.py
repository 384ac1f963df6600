"""The child side of ``sandbox.run_untrusted``: the reaper and the worker bootstrap.

This file is never imported by the untrusted child and is never read by it from disk: the
parent passes its source text with ``python -I -S -c SOURCE MODE CONFIG``. ``sandbox.py`` imports
it only for the process-tree helpers (``descendants``, ``kill_tree``) it shares.

* ``reaper`` (trusted; runs as the grader's user, as pid 1 of a new PID namespace when
  ``unshare`` works): becomes a child subreaper, masks the grader's directories in its private
  mount namespace (when it has one), forks the worker with rlimits set and the uid dropped, waits
  for it (or for the parent's "kill" on the control pipe), then SIGKILLs every process below it
  until none is left, and only then writes its status (JSON) on the status pipe.
* ``worker`` (untrusted from the moment the submission is imported): sets ``sys.path``, reads the
  payload frame, calls ``module:function(payload)`` and writes the JSON result frame.

Only the standard library; no ``from __future__`` (``-c`` source must stand alone). The seccomp
filter's pieces are ``remote/seccomp.py``'s: imported here when the grader imports this file, and
as ``-c`` source they come first (``sandbox.WORKER_SOURCE``).
"""
import json
import os
import signal
import struct
import sys
import time

try:
    from .remote.seccomp import install, program
except ImportError:         # run as ``-c``: remote/seccomp.py's source came before this file's
    pass

HEADER = struct.Struct(">Q")          # frames: 8-byte big-endian length, then UTF-8 JSON


# --- process trees (used by the reaper, and by the parent as a last resort) -------------------

def _proc_table():
    table = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return table
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as f:
                data = f.read()
            rest = data[data.rindex(b")") + 2:].split()
            table[int(name)] = (int(rest[1]), rest[0].decode())
        except (OSError, ValueError, IndexError):
            continue
    return table


def descendants(root):
    """[(pid, state)] of every process below `root` (by the ppid chains in /proc)."""
    table = _proc_table()
    children = {}
    for pid, (ppid, state) in table.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = [], list(children.get(root, ()))
    while todo:
        pid = todo.pop()
        out.append((pid, table[pid][1]))
        todo.extend(children.get(pid, ()))
    return out


def _reap(statuses):
    """waitpid(-1, WNOHANG) until nothing is left to reap; True when we have no children."""
    while True:
        try:
            pid, st = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return True
        if pid == 0:
            return False
        statuses[pid] = st


def kill_tree(root, reap=False, everyone=False, statuses=None, deadline_s=10.0):
    """SIGKILL every process below `root`, again and again until none is found.

    reap: we are `root` (the subreaper): reap what we killed (the orphans reparent to us, so a
    process forked during a scan is found on the next one). everyone: we are pid 1 of a PID
    namespace: kill(-1) reaches every process in it. Returns the number of pids signalled.
    """
    statuses = {} if statuses is None else statuses
    killed = set()
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        live = [pid for pid, state in descendants(root) if state != "Z"]   # counted before
        if everyone:
            try:
                os.kill(-1, signal.SIGKILL)
            except OSError:
                pass
        for pid in live:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except OSError:
                pass
        none_left = _reap(statuses) if reap else True
        if not live and none_left and not [p for p, s in descendants(root)]:
            break
        if reap and not live:
            try:                               # only zombies on their way: wait for them
                pid, st = os.waitpid(-1, 0)
                statuses[pid] = st
            except ChildProcessError:
                pass
            continue
        time.sleep(0.005)
    return len(killed)


# --- reaper -----------------------------------------------------------------------------------

def _libc():
    import ctypes
    return ctypes, ctypes.CDLL(None, use_errno=True)


MS_NOSUID, MS_NODEV, MS_BIND, MS_REC = 2, 4, 4096, 16384
MNT_DETACH = 2


def _mount(libc, ctypes, src, target, fstype, flags, data):
    enc = (lambda s: s.encode() if s is not None else None)
    if libc.mount(enc(src), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)) != 0:
        e = ctypes.get_errno()
        raise OSError(e, "mount %s on %s: %s" % (src, target, os.strerror(e)))


def apply_masks(masks):
    """Cover each directory in `masks` ([dir, [names to keep]], top-down) with an empty tmpfs,
    then bind the kept entries back (through O_PATH fds opened before the cover; a kept link is
    made again): the child sees only what it needs below a masked directory. Only in our private
    mount namespace (unshare --mount-proc makes it, with private propagation), so the host's
    mounts are untouched.
    """
    ctypes, libc = _libc()
    for entry in masks:
        d, keep = entry[0], entry[1]
        opts = entry[2] if len(entry) > 2 else "mode=0755,size=64k"
        held = []
        for name in keep:
            src = os.path.join(d, name)
            if os.path.islink(src):                  # a kept name that is a link: made again
                held.append((name, os.readlink(src), False))
                continue
            held.append((name, os.open(src, os.O_PATH | os.O_NOFOLLOW), os.path.isdir(src)))
        _mount(libc, ctypes, "tmpfs", d, "tmpfs", MS_NOSUID | MS_NODEV, opts)
        for name, fd, isdir in held:
            dst = os.path.join(d, name)
            if isinstance(fd, str):
                os.symlink(fd, dst)
                continue
            if isdir:
                os.mkdir(dst, 0o755)
            else:
                open(dst, "wb").close()
            _mount(libc, ctypes, "/proc/self/fd/%d" % fd, dst, None, MS_BIND | MS_REC, None)
            os.close(fd)


CLONE_NEWNS, CLONE_NEWIPC = 0x00020000, 0x08000000
MS_RDONLY = 1

# the kernel keyring calls (add_key, request_key, keyctl) by audit arch: a uid's keyrings (its
# persistent one above all) outlive a run, so a run of a student could leave data for the next
KEYRING_SYSCALLS = {0xC000003E: (248, 249, 250),          # x86_64 (x32 numbers too, bit 30 off)
                    0x40000003: (286, 287, 288),          # i386
                    0xC00000B7: (217, 218, 219)}          # aarch64


def seccomp_probe():
    """Whether a seccomp filter can be installed here and refuses keyctl (in a forked child)."""
    if not sys.platform.startswith("linux"):
        return False
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            ctypes, libc = _libc()
            install(program(KEYRING_SYSCALLS))
            libc.syscall.restype = ctypes.c_long
            nr = {"x86_64": 250, "aarch64": 219, "i686": 288}.get(os.uname().machine)
            if nr is not None and libc.syscall(ctypes.c_long(nr), ctypes.c_long(0)) == -1 \
                    and ctypes.get_errno() == 1:
                code = 0
        except BaseException:  # noqa: BLE001 - any failure: no filter here
            pass
        os._exit(code)
    _, st = os.waitpid(pid, 0)
    return os.WIFEXITED(st) and os.WEXITSTATUS(st) == 0


def _mask_cgroups(libc, ctypes):
    """An empty read-only tmpfs over /sys/fs/cgroup (only in a mount namespace of the run's own,
    after the worker joined its cgroup): the student's cgroup outlives a run, and its counters
    (peak memory ...) must not carry anything from one run to the next."""
    if os.path.isdir("/sys/fs/cgroup"):
        _mount(libc, ctypes, "tmpfs", "/sys/fs/cgroup", "tmpfs",
               MS_NOSUID | MS_NODEV | MS_RDONLY | 8, "mode=0555,size=4k")   # 8: MS_NOEXEC


def _child(cfg, keep_fds):
    """In the forked child: new session, rlimits, fds, cwd, uid; then exec the worker, or (forked
    from a zygote, ``cfg["worker"]``) become it without an exec."""
    import resource
    os.setsid()
    for procs in cfg.get("cgroup_procs", []):      # the student's cgroup: "0" is this process
        try:
            with open(procs, "w") as f:
                f.write("0")
        except OSError as e:                       # removed by another grader's cleanup meanwhile
            os.write(2, ("[sandbox] not in the student's cgroup (%s): rlimits only\n" % e).encode())
    ctypes, libc = _libc()
    if cfg.get("private_ipc"):
        # a zygote's children share its mount and IPC namespaces: each gets its own, with an
        # empty /dev/shm, so nothing one run leaves there (or in a SysV segment) meets the next
        if libc.unshare(CLONE_NEWNS | CLONE_NEWIPC) != 0:
            raise OSError(ctypes.get_errno(), "unshare of the run's mount and IPC namespaces")
        _mount(libc, ctypes, "tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV,
               "mode=1777,size=64m")
    for name, value in cfg["rlimits"]:
        soft, hard = value if isinstance(value, list) else (value, value)
        resource.setrlimit(getattr(resource, name), (soft, hard))
    if cfg.get("out_fd") is not None:              # forked: the run's own output pipe
        os.dup2(cfg["out_fd"], 1)
        os.dup2(cfg["out_fd"], 2)
    top = max(256, max(keep_fds) + 1)
    for fd in range(3, top):
        if fd not in keep_fds:
            try:
                os.close(fd)
            except OSError:
                pass
    for fd in keep_fds:
        os.set_inheritable(fd, True)
    if cfg.get("work_bytes") and ("worker" not in cfg or cfg.get("private_ipc")):
        _work_on_tmpfs(libc, ctypes, cfg)          # a mount namespace of the run's own
        _mask_cgroups(libc, ctypes)
    os.chdir(cfg["work"])
    if cfg["uid"] is not None:
        os.setgroups([])
        os.setresgid(cfg["gid"], cfg["gid"], cfg["gid"])
        os.setresuid(cfg["uid"], cfg["uid"], cfg["uid"])
    libc.prctl(38, 1, 0, 0, 0)                             # PR_SET_NO_NEW_PRIVS
    libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)            # PR_SET_PDEATHSIG (after setuid)
    if cfg.get("seccomp"):
        install(program(KEYRING_SYSCALLS))         # fails the start where it cannot be had
    os.umask(0o077)
    if "worker" not in cfg:
        os.execve(cfg["python"], cfg["argv"], cfg["env"])
    os.environ.clear()
    os.environ.update(cfg["env"])
    if "tempfile" in sys.modules:                  # the zygote's TMPDIR, cached by its warm-up
        sys.modules["tempfile"].tempdir = None
    worker(cfg["worker"])


def _work_on_tmpfs(libc, ctypes, cfg):
    """The run's folder (``work/``: cwd, HOME, TMPDIR) as a tmpfs of ``work_bytes``, owned by the
    run's uid, holding what the parent put there (the submission's files, empty ``tmp/``): all a
    run writes together is bounded, not each file alone (RLIMIT_FSIZE). Only in a mount
    namespace of the run's own (the reaper's, or the one a zygote's child makes)."""
    work = cfg["work"]
    files = {}
    for name in os.listdir(work):
        path = os.path.join(work, name)
        if os.path.isfile(path) and not os.path.islink(path):
            with open(path, "rb") as f:
                files[name] = f.read()
    uid = cfg["uid"] if cfg["uid"] is not None else os.geteuid()
    gid = cfg["gid"] if cfg["gid"] is not None else os.getegid()
    _mount(libc, ctypes, "tmpfs", work, "tmpfs", MS_NOSUID | MS_NODEV,
           "mode=0700,size=%d,uid=%d,gid=%d" % (cfg["work_bytes"], uid, gid))
    for name, data in files.items():
        with open(os.path.join(work, name), "wb") as f:
            f.write(data)
        os.chown(os.path.join(work, name), uid, gid)
    os.mkdir(os.path.join(work, "tmp"), 0o700)
    os.chown(os.path.join(work, "tmp"), uid, gid)


def _start(cfg):
    """The reaper's and the zygote's first steps: a child subreaper, the masks. (status, ok)"""
    status = {"subreaper": False, "pid_namespace": os.getpid() == 1, "masked": [],
              "notes": []}
    ctypes, libc = _libc()
    status["subreaper"] = libc.prctl(36, 1, 0, 0, 0) == 0     # PR_SET_CHILD_SUBREAPER
    if cfg["masks"]:
        try:
            apply_masks(cfg["masks"])
            status["masked"] = [m[0] for m in cfg["masks"]]
        except OSError as e:
            status["notes"].append("masking failed: %s" % e)
            if cfg["uid"] is not None and cfg["masks_required"]:
                status["notes"].append("not run: the interpreter is not reachable by the "
                                       "dropped uid without the masks")
                return status, False
    return status, True


def _run(cfg, status, closing):
    """Fork the worker (`_child`), wait for it or for "kill" (or EOF) on the control pipe, then
    SIGKILL every process below us until none is left; the outcome goes into `status`."""
    keep = [cfg["payload_fd"], cfg["result_fd"]] + (
        [cfg["shared_fd"]] if cfg.get("shared_fd") is not None else []) + (
        [cfg["out_fd"]] if cfg.get("out_fd") is not None else [])
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        try:
            for fd in closing:
                os.close(fd)
            _child(cfg, keep)
        except BaseException as e:  # noqa: BLE001 - report any failure to start
            os.write(2, ("[sandbox] the worker could not start: %r\n" % (e,)).encode())
        os._exit(127)
    for fd in keep:
        os.close(fd)
    import select
    statuses = {}
    ctrl = cfg["control_fd"]
    status.update(wait_status=None, killed=0, stopped_by_parent=False)
    while pid not in statuses:
        ready, _, _ = select.select([ctrl], [], [], 0.02)
        if ready:                          # "kill" from the parent, or EOF: the parent is gone
            status["stopped_by_parent"] = True
            break
        _reap(statuses)
    status["killed"] = kill_tree(os.getpid(), reap=True, everyone=status["pid_namespace"],
                                 statuses=statuses)
    status["wait_status"] = statuses.get(pid)
    status["left"] = [p for p, s in descendants(os.getpid())]


def reaper(cfg):
    out = os.fdopen(cfg["status_fd"], "w")
    status, ok = _start(cfg)
    if ok:
        _run(cfg, status, [cfg["status_fd"]])
    out.write(json.dumps(status))
    out.close()


def zygote(cfg):
    """A reaper that serves many runs: it imports ``cfg["preload"]`` (the grader's own modules:
    numpy, the remote side; never a submission's) once, then for each request on its socket
    (JSON and the run's pipe ends, passed as fds) forks a fresh worker from that state, exactly
    as the reaper does (`_run`): the worker becomes the run's uid in the run's cgroup, with its
    own mount and IPC namespaces, and is killed with every process below it before the next
    request is read. Nothing a worker does reaches the zygote: it never runs submission code,
    and it is root where the workers are not (a worker cannot signal or trace it)."""
    import importlib
    import socket
    sock = socket.socket(fileno=cfg["sock_fd"])
    base, ok = _start(cfg)
    os.environ.clear()
    os.environ.update(cfg["env"])
    sys.path[:] = list(cfg["path"])
    base["preloaded"], base["preload_failed"] = [], []
    if ok:
        for name in cfg["preload"]:                # "module" or "module:function" (a warm-up)
            try:
                mod, _, fn = name.partition(":")
                m = importlib.import_module(mod)
                if fn:
                    getattr(m, fn)()
                base["preloaded"].append(name)
            except Exception as e:  # noqa: BLE001 - the worker imports it itself (and fails there)
                base["preload_failed"].append("%s: %r" % (name, e))
    base["ok"] = ok
    sock.send(json.dumps(base).encode("utf-8"))
    while ok:
        try:
            msg, fds, _flags, _addr = socket.recv_fds(sock, 1 << 20, 8)
        except OSError:
            break
        if not msg:
            break                          # the grader closed the socket: we are done
        req = json.loads(msg.decode("utf-8"))
        run = dict(zip(req["fds"], fds))
        run_cfg = {**req, **run, "masks": [], "private_ipc": base["pid_namespace"]}
        run_cfg["worker"] = dict(req["worker"], payload_fd=run["payload_fd"],
                                 result_fd=run["result_fd"], shared_fd=run.get("shared_fd"))
        status = {k: base[k] for k in ("subreaper", "pid_namespace", "masked")}
        status["notes"] = list(base["notes"])
        _run(run_cfg, status, [sock.fileno(), run["status_fd"], run["control_fd"]])
        with os.fdopen(run["status_fd"], "w") as out:
            out.write(json.dumps(status))
        os.close(run["control_fd"])
    kill_tree(os.getpid(), reap=True, everyone=base["pid_namespace"])


# --- worker (the untrusted process) -----------------------------------------------------------

def _read_frame(fd, limit):
    def exactly(n):
        buf = bytearray()
        while len(buf) < n:
            chunk = os.read(fd, min(1 << 20, n - len(buf)))
            if not chunk:
                raise EOFError("the frame ended early")
            buf += chunk
        return bytes(buf)
    (n,) = HEADER.unpack(exactly(HEADER.size))
    if n > limit:
        raise ValueError("frame of %d bytes is over the limit" % n)
    return json.loads(exactly(n).decode("utf-8"))


def _write_frame(fd, obj):
    data = json.dumps(obj).encode("utf-8")
    data = HEADER.pack(len(data)) + data
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


class Channel:
    """The worker's end of a session: frames in from the parent, frames out to it."""

    def __init__(self, rfd, wfd):
        self._r, self._w = rfd, wfd

    def recv(self):
        """The parent's next message, or None when it closed the session."""
        try:
            return _read_frame(self._r, 1 << 40)
        except EOFError:
            return None

    def send(self, obj):
        _write_frame(self._w, obj)


def serve(cfg):
    """Session mode: ``module:function(channel)`` serves the parent until it closes the pipe."""
    import importlib
    import traceback
    channel = Channel(cfg["payload_fd"], cfg["result_fd"])
    try:
        mod_name, _, func_name = cfg["entry"].partition(":")
        getattr(importlib.import_module(mod_name), func_name)(channel)
    except BaseException:  # noqa: BLE001 - tell the parent, if it still listens
        try:
            channel.send({"ended": traceback.format_exc(limit=20)[-20000:]})
        except OSError:
            pass
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(0)


def worker(cfg):
    sys.path[:] = [p for p in cfg["path"]]
    sys.argv = [cfg["entry"]]
    if cfg.get("session"):
        serve(cfg)
    payload = _read_frame(cfg["payload_fd"], 1 << 40)
    os.close(cfg["payload_fd"])
    if cfg.get("shared_fd") is not None and isinstance(payload, dict):
        payload["shared_fd"] = cfg["shared_fd"]        # its number in this process
    result_fd = os.dup(cfg["result_fd"])
    os.close(cfg["result_fd"])
    import importlib
    import traceback
    try:
        mod_name, _, func_name = cfg["entry"].partition(":")
        func = getattr(importlib.import_module(mod_name), func_name)
        value = func(payload)
        try:
            msg = {"ok": True, "value": value}
            _write_frame(result_fd, msg)
        except (TypeError, ValueError) as e:
            _write_frame(result_fd, {"ok": False, "error": "the result is not JSON data: %s" % e})
    except BaseException:  # noqa: BLE001 - the submission's failure is the result
        _write_frame(result_fd, {"ok": False, "error": traceback.format_exc(limit=20)[-20000:]})
    os.close(result_fd)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(0)                  # no atexit handlers or threads of the submission after this


if __name__ == "__main__":
    _cfg = json.loads(sys.argv[2])
    {"reaper": reaper, "worker": worker, "zygote": zygote}[sys.argv[1]](_cfg)
