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

`echo_shared` (a one-shot run, ``sandbox.run_untrusted(..., shared=...)``) is how the grader sees
whether a function changed its array arguments without asking the submission: the arrays are
views of a memory file the grader reads itself after the process is gone, made before the
submission is imported, so no patch of this module or of the codec can hand the function copies.
"""
import importlib
import inspect
import traceback

from . import cta
from .codec import decode, encode


def _call(msg, gens):
    mod_name, _, fn_name = msg["target"].partition(":")
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
    while True:
        msg = channel.recv()
        if msg is None:
            return
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
    fn = getattr(importlib.import_module(mod_name), fn_name)    # the submission runs from here
    value = encode(fn(*args, **kwargs))
    for shm, own in given:
        shm[...] = own
    return value
