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

Only the standard library; no ``from __future__`` (``-c`` source must stand alone).
"""
import json
import os
import signal
import struct
import sys
import time

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
    then bind the kept entries back (through O_PATH fds opened before the cover): the child sees
    only what it needs below a masked directory. Only in our private mount namespace (unshare
    --mount-proc makes it, with private propagation), so the host's mounts are untouched.
    """
    ctypes, libc = _libc()
    for entry in masks:
        d, keep = entry[0], entry[1]
        opts = entry[2] if len(entry) > 2 else "mode=0755,size=64k"
        held = []
        for name in keep:
            src = os.path.join(d, name)
            held.append((name, os.open(src, os.O_PATH | os.O_NOFOLLOW), os.path.isdir(src)))
        _mount(libc, ctypes, "tmpfs", d, "tmpfs", MS_NOSUID | MS_NODEV, opts)
        for name, fd, isdir in held:
            dst = os.path.join(d, name)
            if isdir:
                os.mkdir(dst, 0o755)
            else:
                open(dst, "wb").close()
            _mount(libc, ctypes, "/proc/self/fd/%d" % fd, dst, None, MS_BIND | MS_REC, None)
            os.close(fd)


def _child(cfg, keep_fds):
    """In the forked child: new session, rlimits, fds, cwd, uid; then exec the worker."""
    import resource
    os.setsid()
    for procs in cfg.get("cgroup_procs", []):      # the student's cgroup: "0" is this process
        try:
            with open(procs, "w") as f:
                f.write("0")
        except OSError as e:                       # removed by another grader's cleanup meanwhile
            os.write(2, ("[sandbox] not in the student's cgroup (%s): rlimits only\n" % e).encode())
    for name, value in cfg["rlimits"]:
        soft, hard = value if isinstance(value, list) else (value, value)
        resource.setrlimit(getattr(resource, name), (soft, hard))
    top = max(256, max(keep_fds) + 1)
    for fd in range(3, top):
        if fd not in keep_fds:
            try:
                os.close(fd)
            except OSError:
                pass
    for fd in keep_fds:
        os.set_inheritable(fd, True)
    os.chdir(cfg["work"])
    ctypes, libc = _libc()
    if cfg["uid"] is not None:
        os.setgroups([])
        os.setresgid(cfg["gid"], cfg["gid"], cfg["gid"])
        os.setresuid(cfg["uid"], cfg["uid"], cfg["uid"])
    libc.prctl(38, 1, 0, 0, 0)                             # PR_SET_NO_NEW_PRIVS
    libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)            # PR_SET_PDEATHSIG (after setuid)
    os.umask(0o077)
    os.execve(cfg["python"], cfg["argv"], cfg["env"])


def reaper(cfg):
    status = {"subreaper": False, "pid_namespace": os.getpid() == 1, "masked": [],
              "notes": [], "wait_status": None, "killed": 0, "stopped_by_parent": False}
    ctypes, libc = _libc()
    status["subreaper"] = libc.prctl(36, 1, 0, 0, 0) == 0     # PR_SET_CHILD_SUBREAPER
    out = os.fdopen(cfg["status_fd"], "w")
    if cfg["masks"]:
        try:
            apply_masks(cfg["masks"])
            status["masked"] = [m[0] for m in cfg["masks"]]
        except OSError as e:
            status["notes"].append("masking failed: %s" % e)
            if cfg["uid"] is not None and cfg["masks_required"]:
                status["notes"].append("not run: the interpreter is not reachable by the "
                                       "dropped uid without the masks")
                out.write(json.dumps(status))
                out.close()
                return
    keep = [cfg["payload_fd"], cfg["result_fd"]] + (
        [cfg["shared_fd"]] if cfg.get("shared_fd") is not None else [])
    pid = os.fork()
    if pid == 0:
        try:
            os.close(cfg["status_fd"])
            _child(cfg, keep)
        except BaseException as e:  # noqa: BLE001 - report any failure to start
            os.write(2, ("[sandbox] the worker could not start: %r\n" % (e,)).encode())
        os._exit(127)
    for fd in keep:
        os.close(fd)
    import select
    statuses = {}
    ctrl = cfg["control_fd"]
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
    out.write(json.dumps(status))
    out.close()


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
    {"reaper": reaper, "worker": worker}[sys.argv[1]](_cfg)
