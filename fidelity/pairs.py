"""A schedule beside its kernel: the steps each one takes, in order, and their diff.

A schedule in `sim/` and its kernel in `kernels/` share their step names (acquire, wait_turn, qk,
pass_turn, release, softmax, rescale, pack, pv, mma, epilogue, ...), the waits included: `wait_q`
(the Q tile), `wait_qk` (the scores: `warpgroup_mma_wait`), `wait_pv` (P·V, and the release of its
V slot), `wait_mma` (a GEMM's k-step), the releases of ring slots. `steps(fn)` reads a function's source and lists the calls to
those names in order, one line each, indented by loop depth — the skeleton a reader compares. A
ring step names its ring (`acquire k`: the model's `cta.acquire(me, cta.k, j)`, the kernel's
`k.acquire(j)`). An `if` on a compile-time switch (``if TURNS:``, ``if t.ONE_RELEASE:``) is decided
with the switches given, so the listing is the kernel as that variant compiles it.

The switches have one spelling: the model's keyword (``one_release``, the name in
`AttentionConfig.switches` and the launcher's ``softmax=``) is the kernel's constexpr upper-cased
(``ONE_RELEASE``, a field of `kernels/attention/tile.py`'s `Tile`); `kernel_switches` makes one
from the other. One model call has no kernel step: `issued` (the time a warp spends issuing its
wgmmas), which the kernel spends inside its `qk` and `pv`; it is not listed.

`attention_pairs` and `gemm_pairs` are the pairs the tests hold to the same steps (the chapters
set them side by side: `notebooks/course.py`, `steps_beside`).
"""
from __future__ import annotations

import ast
import inspect
import re
import textwrap
from pathlib import Path
from typing import NamedTuple

STEPS = ("wait", "wait_q", "load_q", "produce", "acquire", "wait_turn", "qk", "wait_qk",
         "pass_turn", "release", "softmax", "rescale", "pack", "pv", "wait_pv", "mma", "wait_mma",
         "epilogue")
RINGS = ("k", "v", "ab")  # attention's two, the GEMM's one
_RING = re.compile(r"\b(?:cta\.)?(k|v|ab)(?:_full|_empty|_ring|_desc)?\b")


ROOT = Path(__file__).resolve().parents[1]


class Source(NamedTuple):
    """A function named in a file of the repository, read without importing it (a kernel's
    module imports triton; its source is plain Python)."""
    path: str
    name: str


def _function(fn) -> ast.FunctionDef:
    if isinstance(fn, Source):
        tree = ast.parse((ROOT / fn.path).read_text())
        return next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == fn.name)
    fn = getattr(fn, "fn", fn)                 # a @gluon.jit function wraps the Python one
    return ast.parse(textwrap.dedent(inspect.getsource(fn))).body[0]


def _call(node: ast.AST) -> ast.Call | None:
    """The outermost call of a statement's value (through `yield`, `yield from`, assignment)."""
    value = getattr(node, "value", None)
    while isinstance(value, (ast.Yield, ast.YieldFrom, ast.Await)):
        value = value.value
    return value if isinstance(value, ast.Call) else None


def _name(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")


def _line(call: ast.Call) -> str:
    """`acquire k`, `release v`, `wait q_full`, `qk`, ... (the ring a ring step works on)."""
    name = _name(call)
    if name in ("acquire", "release", "produce"):
        receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
        if isinstance(receiver, ast.Name) and receiver.id in RINGS:        # k.acquire(j)
            return f"{name} {receiver.id}"
        for arg in call.args:
            m = _RING.search(ast.unparse(arg))
            if m:
                return f"{name} {m.group(1)}"
    if name == "wait" and call.args:
        barrier = ast.unparse(call.args[-2] if len(call.args) > 2 else call.args[0])
        return f"wait {barrier.removeprefix('cta.')}"
    return name


class _Fields(ast.NodeTransformer):
    """``t.ONE_RELEASE`` -> ``ONE_RELEASE``: a switch read off an aggregate is the switch."""
    def visit_Attribute(self, node):
        return ast.copy_location(ast.Name(id=node.attr, ctx=ast.Load()), node)


def _decide(test: ast.expr, switches: dict) -> bool | None:
    """The value of an `if` test made only of the given switches and constants, else None."""
    test = ast.fix_missing_locations(_Fields().visit(ast.parse(ast.unparse(test), mode="eval")))
    names = {n.id for n in ast.walk(test) if isinstance(n, ast.Name)}
    if not names or not names <= set(switches):
        return None
    return bool(eval(compile(test, "<switch>", "eval"), {}, dict(switches)))


def steps(fn, **switches) -> list[str]:
    """The shared steps `fn` calls, in source order, indented four spaces per loop."""
    out: list[str] = []

    def walk(body, depth):
        for node in body:
            if isinstance(node, (ast.For, ast.While)):
                # the loop's own index: the last name of its target (`for j, tile_id in ...`)
                names = [n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)] \
                    if isinstance(node, ast.For) else ["..."]
                target = names[-1]
                out.append("    " * depth + f"for {target}:")
                walk(node.body, depth + 1)
            elif isinstance(node, ast.If):
                taken = _decide(node.test, switches)
                if taken is None:
                    walk(node.body, depth)
                    walk(node.orelse, depth)
                else:
                    walk(node.body if taken else node.orelse, depth)
            else:
                call = _call(node)
                if call is not None and _name(call) in STEPS:
                    out.append("    " * depth + _line(call))

    walk(_function(fn).body, 0)
    return out


# the kernel's constexprs that the model spells as keywords (the others are the kernel's own)
SHARED_SWITCHES = ("turns", "fence", "rescale_early", "one_release", "named_turns")


def kernel_switches(model_switches: dict, **own) -> dict:
    """The kernel's switches for a model's: each shared keyword upper-cased, plus the kernel's
    ``own`` (``HOISTED``'s value, ``SEQUENTIAL``, ...)."""
    return {k.upper(): v for k, v in model_switches.items() if k in SHARED_SWITCHES} | own


def attention_pairs() -> dict[str, tuple]:
    """variant -> (the model's consumer or producer, its switches, the kernel's, the kernel's
    switches): `steps(model, **model_switches) == steps(kernel, **kernel_switches)`."""
    from sim.attention import overlap, persistent, ws, ws_pingpong
    kernel_ws = Source("kernels/attention/ws.py", "consumer")
    kernel_overlap = Source("kernels/attention/overlap.py", "consumer")
    # the shipped kernels: FENCE on, fa3's turns on mbarriers, the other switches off
    shipped = {"producer": True, "turns": True, "fence": True, "rescale_early": False,
               "one_release": False, "named_turns": False}

    def overlapped(**switches):
        model = shipped | switches
        return (overlap.consumer, {k: v for k, v in model.items() if k != "named_turns"},
                kernel_overlap, kernel_switches(model, HOISTED="hoisted"))

    return {
        "ws": (ws.consumer, {}, kernel_ws, kernel_switches({"turns": False}, SEQUENTIAL=False)),
        "ws_pingpong": (ws_pingpong.consumer, {}, kernel_ws,
                        kernel_switches({"turns": True}, SEQUENTIAL=False)),
        "ws producer": (ws.producer, {}, Source("kernels/attention/ws.py", "producer"), {}),
        # overlap_kernel: single_partition, in-line rings; fa3_kernel: warp_specialized, turns
        "overlap": overlapped(producer=False, turns=False),
        "fa3": overlapped(),
        # the schedule switches (AttentionConfig.switches; the kernel's softmax= names)
        "fa3+rescale_early": overlapped(rescale_early=True),
        "fa3+no_turns": overlapped(turns=False),
        "fa3+one_release": overlapped(one_release=True),
        "fa3+named_turns": overlapped(named_turns=True),
        # fa3_kernel(PERSISTENT=True): fa3's loop once per tile (the shared O buffer's turns,
        # `if O_BUFS < CONSUMERS`, listed on both sides)
        "fa3 persistent": (persistent.consumer, {"turns": True},
                           Source("kernels/attention/persistent.py", "consumer"),
                           {"FENCE": True, "TURNS": True}),
        "fa3 persistent+no_turns": (persistent.consumer, {"turns": False},
                                    Source("kernels/attention/persistent.py", "consumer"),
                                    {"FENCE": True, "TURNS": False}),
        "fa3 persistent+no_turns+one_release": (
            persistent.consumer, {"turns": False, "one_release": True},
            Source("kernels/attention/persistent.py", "consumer"),
            {"FENCE": True, "TURNS": False, "ONE_RELEASE": True}),
    }


def gemm_pairs() -> dict[str, tuple]:
    """variant -> (the model's consumer or producer, its switches, the kernel's, its switches)."""
    from sim.gemm import pipelined, ws, ws_pingpong
    return {"pipelined": (pipelined.consumer, {},
                          Source("kernels/gemm/pipelined.py", "consumer"), {}),
            "ws": (ws.consumer, {}, Source("kernels/gemm/ws.py", "consumer"), {}),
            "ws_pingpong": (ws_pingpong.consumer, {},
                            Source("kernels/gemm/ws_pingpong.py", "consumer"), {}),
            "ws producer": (ws.producer, {}, Source("kernels/gemm/ws.py", "producer"), {})}
