"""The submission's side of a grading session: import the submission's files, call what the
grader asks for, step the generators it returns, and send back plain values.

Requests (JSON, see `codec`):
  ``{"op": "call", "target": "module:function", "args": [...], "kwargs": {...}}`` ->
      ``{"value": v, "args": [args, kwargs]}`` (the arguments as the call left them, where they
      encode: every call sends them back, so no call can tell the grader's check of them from a
      graded call), or ``{"gen": id}`` when the call made a generator, or ``{"raise": [type,
      traceback]}``;
  ``{"op": "next", "gen": id, "send": v}`` -> ``{"yield": v}``, ``{"return": v}`` or ``{"raise":
      ...}``; ``{"op": "close", "gen": id}`` -> ``{"value": null}``.
While a call runs, a CTA (`cta.CTA`) sends ``{"req": ...}`` and waits for the grader's answer.
Nothing here is trusted by the grader: it only carries the submission's answers.

At the first call (`guard`) every module of the submission is imported, and from then on the
process runs only the code it has: an audit hook refuses every further import, compile, exec or
eval, marshalled or new code object, zip import, program start and foreign-library lookup, and a
seccomp filter refuses execve. After its import, a session computes with its own functions, the
standard library and numpy, and nothing it unpacks or builds then runs. Its import is not
guarded: code run there can load a program the submission carries (a copy of the course's model,
packed, through an import hook of its own, and hidden from `sys.modules`) and call it later, and
a copy pasted in as plain source needs no loading at all. So the guard does not keep a carried
model out; the tests do, where it matters: ch05's predictions must come at a formula's speed (a
hidden batch within a CPU-time budget the grader counts from /proc), and ch00 asks for the
model's cost rules themselves, so a copy of those is the answer by design. The grader's adapter
sandboxes (a kernel's compiler builds code) have no guard.

`echo_shared` (a one-shot run, ``sandbox.run_untrusted(..., shared=...)``) is how the grader sees
whether a function changed its array arguments without asking the submission: the arrays are
views of a memory file the grader reads itself after the process is gone, made before the
submission is imported, so no patch of this module or of the codec can hand the function copies.
"""
import importlib
import inspect
import os
import sys
import traceback

from . import cta, seccomp
from .codec import decode, encode

# the standard library a submission's functions may use once the guard is on (`guard`): loaded
# here, before it (a zygote loads them once), since no module is loaded after it
for _name in ("bisect", "collections", "copy", "dataclasses", "decimal", "enum", "fractions",
              "functools", "heapq", "itertools", "math", "numbers", "operator", "random", "re",
              "statistics", "string", "typing", "numpy"):
    try:
        importlib.import_module(_name)
    except ImportError:
        pass
del _name

# where the grader's adapters sit beside this package (a kernel's trusted sandbox), no guard: the
# compiler they run builds code; the submission there is only the kept kernel (`kernel_source`)
_ADAPTERS = any(n.endswith(".py") for n in os.listdir(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
_OWN = {}          # the submission's modules: name -> the exception its import raised, or None
_add_hook, _import = sys.addaudithook, importlib.import_module   # as they were before any import
_REFUSED_CALLS = ("os.exec", "os.posix_spawn", "os.spawn", "os.system", "os.fork",
                  "os.forkpty", "subprocess.Popen", "ctypes.", "zipimport.", "pty.spawn")


def guard(own=()):
    """Import the submission's modules (`own`; a failure is kept and raised where one is
    called), then install an audit hook for the rest of the process: from now on no module is
    imported or loaded (an import, a marshalled or compiled code object, exec/eval, a new code
    object, a zip import), no program started (`_no_exec` too), no foreign library opened or
    symbol looked up. The submission computes its answers with the code it was imported with,
    the standard library and numpy loaded above. What holds is "after its import": the import
    itself runs unguarded (but for sockets), and may load a program the submission carries (a
    copy of the course's model) and keep it out of `sys.modules` for its calls; that is for the
    tests to catch (the module docstring says where). A module its import loaded from outside
    the installed trees and left in `sys.modules` (one it wrote out itself) fails every call of
    it. Idempotent."""
    if _OWN.get(None) or _ADAPTERS:
        return
    _OWN[None] = True
    _no_sockets()                   # before the submission's code runs: its import included
    _no_autoreap()
    before = set(sys.modules)
    roots = tuple(os.path.join(os.path.realpath(p), "") for p in sys.path[1:])
    for name in own:
        try:
            _import(name)
            _OWN[name] = None
        except BaseException as e:  # noqa: BLE001 - raised again where the module is called
            _OWN[name] = e
    loaded = [m for m in set(sys.modules) - before - set(own)
              if not _installed(sys.modules.get(m), roots)]
    if loaded:                      # its import loaded a program of its own beside its modules
        e = PermissionError("the submission may not import %s (only its own files and the "
                            "installed packages)" % ", ".join(sorted(loaded)[:5]))
        for name in own:
            _OWN[name] = e

    def hook(event, args, _err=PermissionError, _calls=_REFUSED_CALLS,
             _code=frozenset(("exec", "compile", "marshal.loads", "marshal.load",
                              "code.__new__", "function.__new__"))):
        if event == "import":
            raise _err("the submission may not import %s (no module is loaded once its own "
                       "are: only those and what was loaded before them)" % (args[0],))
        if event in _code:
            raise _err("the submission may not execute code it builds (%s)" % (event,))
        if event.startswith(_calls):
            raise _err("the submission may not do this (%s)" % (event,))
        if event == "object.__setattr__" and getattr(args[0], "__name__", "") == "hook":
            raise _err("the submission may not change the guard")
        if event == "open" and isinstance(args[0], str) and args[0].endswith("/mem"):
            raise _err("the submission may not open %s" % (args[0],))
    _no_exec()
    _add_hook(hook)


# syscall numbers by seccomp_data.arch: x86_64, i386, aarch64
_EXEC_CALLS = {0xC000003E: (59, 322), 0x40000003: (11, 358), 0xC00000B7: (221, 281)}
# socket, and io_uring_setup/enter/register (a ring opens and connects sockets by itself)
_SOCKET_CALLS = {0xC000003E: (41, 425, 426, 427), 0x40000003: (102, 359, 425, 426, 427),
                 0xC00000B7: (198, 425, 426, 427)}


def _no_sockets():
    """No socket for the submission, from before its modules are imported: an audit hook
    refuses Python's, and a seccomp filter the socket syscall itself and io_uring, whose rings
    open and connect sockets without it (a foreign-function call included). A session talks to
    the grader over the pipes it was started with; a socket could only reach something else:
    where there is no network namespace (a container without unshare), an oracle on the host or
    the internet that computes the answers."""
    def hook(event, args, _err=PermissionError):
        if event in ("socket.__new__", "socket.connect", "socket.bind", "socket.sendto",
                     "socket.sendmsg", "socket.getaddrinfo", "socket.gethostbyname"):
            raise _err("the submission may not open a network connection (%s)" % (event,))
    _add_hook(hook)
    _seccomp_deny(_SOCKET_CALLS)


# sigaction and rt_sigaction (x86_64 and x32's), and i386's signal; SIGCHLD is 17 on all three
_SIGACTION_CALLS = {0xC000003E: (13, 512), 0x40000003: (48, 67, 174), 0xC00000B7: (134,)}
_SIGCHLD = 17


def _no_autoreap():
    """No process of the submission's sets SIGCHLD's action, from before its modules are
    imported (a seccomp filter: Python's ``signal.signal`` and a foreign-function call alike).
    A child whose parent ignores SIGCHLD (or sets SA_NOCLDWAIT) is reaped by the kernel when it
    exits, and its CPU time is added to no one's count: a helper forked at import could do a
    submission's work and vanish before each reading of `sandbox.Session.cpu_s`. With the
    action left alone, every ended process is waited for by its parent or the sandbox's reaper
    and counted there."""
    _seccomp(seccomp.argument_program(_SIGACTION_CALLS, _SIGCHLD))


def _no_exec():
    """A seccomp filter on this process and what it forks: execve and execveat fail (EPERM), so
    no program starts, whatever route the call takes (a foreign-function pointer the submission
    resolved while its module was imported included). Where the kernel takes no filter, the
    audit hook alone refuses the ways Python starts programs."""
    _seccomp_deny(_EXEC_CALLS)


def _seccomp_deny(calls):
    """The syscalls `calls` names (arch: numbers) fail with EPERM in this process and what it
    forks (`seccomp`); where the kernel takes no filter, the audit hooks alone refuse."""
    _seccomp(seccomp.program(calls))


def _seccomp(prog):
    """Install the filter `prog` on this process and what it forks, where the kernel takes one."""
    if not sys.platform.startswith("linux"):
        return
    try:
        seccomp.install(prog)
    except Exception:  # noqa: BLE001 - no filter here: the audit hooks still refuse
        pass


def _installed(mod, roots):
    """Whether a module was loaded from the interpreter's own trees (the standard library,
    site-packages, the grader's visible copies: the path past the submission's folder) or is
    built in; not one the submission wrote out, or made, itself."""
    spec = getattr(mod, "__spec__", None)
    origin = getattr(spec, "origin", None)
    if origin in ("built-in", "frozen"):
        return True
    if not isinstance(origin, str) or not os.path.isabs(origin):
        return False
    origin = os.path.realpath(origin)
    return origin.startswith(roots)


def _own_modules():
    """The submission's module names: the .py files of its folder (the path's first entry), as
    the session found them (before any of its code ran)."""
    try:
        return sorted(n[:-3] for n in os.listdir(sys.path[0])
                      if n.endswith(".py") and n[:-3].isidentifier())
    except OSError:
        return []


def _call(msg, gens):
    mod_name, _, fn_name = msg["target"].partition(":")
    if _OWN.get(mod_name) is not None:
        raise _OWN[mod_name]
    fn = getattr(importlib.import_module(mod_name), fn_name)
    args = decode(msg.get("args", []), cta.build)
    kwargs = decode(msg.get("kwargs", {"d": []}), cta.build)
    out = fn(*args, **kwargs)
    if inspect.isgenerator(out):
        gens.append(out)
        return {"gen": len(gens) - 1}
    reply = {"value": encode(out)}
    try:
        reply["args"] = encode([args, kwargs])
    except (TypeError, ValueError):        # a CTA or another object the codec does not carry
        pass
    return reply


def _next(msg, gens):
    gen = gens[msg["gen"]]
    try:
        token = gen.send(decode(msg.get("send")))
    except StopIteration as stop:
        return {"return": encode(stop.value)}
    return {"yield": encode(token, cta._hook)}


def _close(msg, gens):
    gens[msg["gen"]].close()
    return {"value": None}


def handle(msg, gens):
    op = msg.get("op") if isinstance(msg, dict) else None
    try:
        return {"call": _call, "next": _next, "close": _close}[op](msg, gens)
    except BaseException as e:  # noqa: BLE001 - the submission's failure is the answer
        if isinstance(e, KeyError) and op not in ("call", "next", "close"):
            return {"raise": ["ValueError", f"unknown request {op!r}"]}
        return {"raise": [type(e).__name__, traceback.format_exc(limit=12)[-8000:]]}


def main(channel):
    cta.CHANNEL = channel
    gens = []
    own = _own_modules()
    while True:
        msg = channel.recv()
        if msg is None:
            return
        if not _OWN and isinstance(msg, dict) and msg.get("op") == "call":
            guard(own)                  # the first call: the submission's modules are loaded
        channel.send(handle(msg, gens))


def echo_shared(p):
    """Call ``p["target"]`` on arguments whose arrays (``{"shm": [dtype, shape, offset]}``) are
    read from the shared memory file; return the value, and write the arrays back there as the
    call left them. The submission gets plain arrays of its own (not views of the file, which
    it could tell from the grader's by their ``.base``): what it does to its arguments is what it
    does to any array. Only the standard library and numpy run before its module is imported."""
    import mmap

    import numpy as np
    mm = mmap.mmap(p["shared_fd"], p["size"]) if p["size"] else None
    given = []

    def view(tag, body):
        if tag != "shm":
            return None
        dtype, shape, offset = body
        n = 1
        for d in shape:
            n *= int(d)
        shm = np.frombuffer(mm, dtype=dtype, count=n, offset=int(offset)).reshape(shape)
        own = shm.copy()
        given.append((shm, own))
        return own

    args = decode(p["args"], view)
    kwargs = decode(p["kwargs"], view)
    mod_name, _, fn_name = p["target"].partition(":")
    guard(_own_modules())                                        # the submission runs from here
    if _OWN.get(mod_name) is not None:
        raise _OWN[mod_name]
    fn = getattr(importlib.import_module(mod_name), fn_name)
    value = encode(fn(*args, **kwargs))
    for shm, own in given:
        shm[...] = own
    return value
