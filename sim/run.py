"""Run one SM's CTAs with roles the caller writes, and log what every role does.

`simulate(cfg, hw, roles=None, on_event=None, ...)` builds the CTAs one SM holds as the model
does (`sim.attention.simulate`, `sim.gemm.simulate`) and runs them: the variant's own roles, or for
attention roles the caller supplies in place of the producer and/or the consumers. It returns a
`Run`: the cycle count, the `Trace`, whether the roles finished (or why not: a deadlock, a role
that raised, a time limit) and the *event log*.

The event log is what a checker needs to judge a schedule without holding live model objects:
plain tuples of strings, numbers and tile tags, in the order the model did them (events at the
same clock keep that order), so they can be pickled, sent over a pipe or written to a file.
Setting a hook only observes: a run's timing is the same with one as without. The events:

====================  ============================================  ==============================
kind                  fields after the kind                         when
====================  ============================================  ==============================
``expect``            t, barrier, nbytes                            mbarrier.arrive.expect_tx; the
                                                                    ``arrive`` it includes follows
``arrive``            t, barrier                                    one arrival on the barrier
``complete_tx``       t, barrier, nbytes                            the copy engine's bytes land
``complete``          t, barrier, phase                             the barrier's phase `phase`
                                                                    (0, 1, 2, ...) completes
``wait``              t0, t1, actor, barrier, parity                a role's ``wait`` returned
``tma``               t, actor, op, barrier, tile, nbytes           a TMA copy is issued
``landed``            t, actor, op, barrier, tile, nbytes           its bytes land (before their
                                                                    ``complete_tx``)
``wgmma``             t, actor, op, tile, count                     a wgmma group is issued
                                                                    (``count`` instructions)
====================  ============================================  ==============================

Barrier names are the model's: ``k.full[0]``, ``v.empty[1]``, ``q_full``, ``turn[0]``,
``bar.sync``, prefixed with ``cta0.``, ``cta1.`` ... where an SM holds several CTAs. A tile is
``(what, j)``, e.g. ``("kv", 3)`` for K/V block 3. Waits inside the model's own ``wait_turn`` are
not logged (their barrier's events are). `EVENTS` maps each kind to its field names.

A role the caller supplies gets a `RoleView`, not the CTA: the calls a schedule's role makes (wait
on a barrier, expect and arrive, a TMA copy, the GEMMs, the softmax steps) and nothing that would
write the schedule for it (the CTA's one-call ``produce`` / ``load``, ``wait_turn``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import simpy

from . import attention, gemm
from .config import AttentionConfig, GemmConfig
from .cta import CTA, make_units
from .engine import MBarrier
from .hardware import Hardware
from .trace import Trace
from .views import RoleView

EVENTS: dict[str, tuple[str, ...]] = {
    "expect": ("t", "barrier", "nbytes"),
    "arrive": ("t", "barrier"),
    "complete_tx": ("t", "barrier", "nbytes"),
    "complete": ("t", "barrier", "phase"),
    "wait": ("t0", "t1", "actor", "barrier", "parity"),
    "tma": ("t", "actor", "op", "barrier", "tile", "nbytes"),
    "landed": ("t", "actor", "op", "barrier", "tile", "nbytes"),
    "wgmma": ("t", "actor", "op", "tile", "count"),
}


def event_dict(event: tuple) -> dict:
    """One event as a dict: {"kind": ..., and its fields by name (`EVENTS`)}."""
    kind, *values = event
    return {"kind": kind, **dict(zip(EVENTS[kind], values, strict=True))}


@dataclass
class Run:
    """What one `simulate` returns."""
    clk: float                  # SM clock when the run stopped (when the last role finished)
    finished: bool              # every role ran to its end
    error: str                  # why not ("" if finished): deadlock, a role raised, time limit
    trace: Trace
    events: list[tuple] = field(default_factory=list)
    config: AttentionConfig | GemmConfig | None = None     # the config as prepared for the run


# --- the run -------------------------------------------------------------------------------------
def _observe(cta, hook) -> None:
    """Hand `hook` to the CTA and to every barrier it holds (directly, in rings, in turns)."""
    cta.on_event = hook
    seen: set[int] = set()

    def visit(x, depth=0):
        if id(x) in seen or depth > 2:
            return
        seen.add(id(x))
        if isinstance(x, MBarrier):
            x.on_event = hook
        elif isinstance(x, (list, tuple)):
            for y in x:
                visit(y, depth + 1)
        elif hasattr(x, "full") and hasattr(x, "empty"):        # a ring
            visit(x.full, depth + 1)
            visit(x.empty, depth + 1)
        elif hasattr(x, "bar") and hasattr(x, "n"):             # the turns
            visit(x.bar, depth + 1)

    for v in vars(cta).values():
        visit(v)


def _build_attention(cfg, hw, env, trace, n_blocks, masked_blocks, roles):
    if cfg.persistent:
        raise ValueError("simulate(): persistent fa3 walks a tile list; run it with "
                         "sim.attention.persistent.simulate(cfg, hw, tiles)")
    mod = attention.module(cfg.variant)
    n_ctas = attention.ctas_per_sm(cfg, hw)
    units = make_units(env, hw, trace)
    ctas, gens = [], []
    for c in range(n_ctas):
        cta = attention.AttentionCTA(env, hw, cfg, trace, n_blocks, masked_blocks,
                                     name=f"cta{c}." if n_ctas > 1 else "", units=units)
        ctas.append(cta)
        if roles is None:
            gens += list(mod.roles(cta))
            continue
        unknown = set(roles) - {"producer", "consumer"}
        if unknown:
            raise ValueError(f"roles are 'producer' and 'consumer', not {sorted(unknown)}")
        view = RoleView(cta)
        if "producer" in roles:
            if roles["producer"] is not None:
                gens.append(roles["producer"](view))
        elif hasattr(mod, "producer"):
            gens.append(mod.producer(cta))
        consumer = roles.get("consumer")
        for w in range(cfg.consumers):
            gens.append(consumer(view, w) if consumer else mod.consumer(cta, w))
    return ctas, gens


def simulate(cfg: AttentionConfig | GemmConfig, hw: Hardware, roles: dict | None = None,
             on_event=None, *, n_blocks: int = 8, masked_blocks: int = 0, n_tiles: int = 1,
             k_blocks: int = 8, limit_clk: float | None = None, record: bool = True) -> Run:
    """Run the CTAs one SM holds of `cfg`'s variant on `hw` and log what they do.

    Attention: each CTA walks `n_blocks` K/V blocks (the last `masked_blocks` masked). GEMM: one
    CTA walks `n_tiles` tiles of `k_blocks` k-blocks. `cfg` is prepared here (tile defaults, what
    the variant fixes, every limit checked); `Run.config` is the result.

    `roles` (attention only): ``{"producer": f, "consumer": g}`` runs ``f(view)`` as the producer
    warpgroup and ``g(view, w)`` as consumer warpgroup w, each a SimPy generator over a
    `RoleView`; a role left out is the variant's own, one given as None is not run.

    `on_event(event)` is called with each event as it happens (`EVENTS`); `record` keeps them in
    `Run.events` too. The run stops at a deadlock, when a role raises, or past `limit_clk`; it
    never raises for those, `Run.finished` and `Run.error` say what happened."""
    env, trace = simpy.Environment(), Trace()
    if isinstance(cfg, GemmConfig):
        if roles is not None:
            raise ValueError("roles are supplied for attention schedules only")
        if n_tiles < 1 or k_blocks < 1:
            raise ValueError(f"a CTA needs >= 1 tile and >= 1 k-block, got {n_tiles}, {k_blocks}")
        cfg = gemm.prepare(cfg, hw)
        mod = gemm.module(cfg.variant)
        cta = gemm.GemmCTA(env, hw, cfg, trace, n_tiles, k_blocks, mod.COOPERATIVE)
        ctas, gens = [cta], list(mod.roles(cta))
    else:
        if n_blocks < 1:
            raise ValueError(f"a CTA needs at least one K/V block, got {n_blocks}")
        cfg = attention.prepare(cfg, hw)
        ctas, gens = _build_attention(cfg, hw, env, trace, n_blocks, masked_blocks, roles)

    events: list[tuple] = []
    hook = None
    if on_event is not None and record:
        def hook(ev):
            events.append(ev)
            on_event(ev)
    elif record:
        hook = events.append
    elif on_event is not None:
        hook = on_event
    if hook is not None:
        for cta in ctas:
            _observe(cta, hook)

    error, finished = "", False
    try:
        done = simpy.AllOf(env, [env.process(g) for g in gens])
        while not done.triggered:
            nxt = env.peek()
            if nxt == float("inf"):
                error = ("deadlock: every role waits on a barrier that never completes "
                         f"(t={env.now:.0f})")
                break
            if limit_clk is not None and nxt > limit_clk:
                error = f"not finished after {limit_clk:.0f} clk (a role loops forever?)"
                break
            env.step()
        finished = done.triggered and done.ok
        if done.triggered and not done.ok:
            exc = done.value
            error = f"a role raised {type(exc).__name__}: {exc}"
            if isinstance(exc, Exception):
                done.defused = True
    except Exception as e:  # noqa: BLE001 - a role (or a barrier it misused) raised
        error = f"{type(e).__name__}: {e}"
    return Run(env.now, finished, error, trace, events, cfg)


# --- one step alone ------------------------------------------------------------------------------
def measure_wgmma(hw: Hardware, rows: int, n: int, k: int, dtype: str = "fp16",
                  a_from_smem: bool = True) -> float:
    """Tensor-pipe cycles of one warpgroup's wgmma group (rows × n × k) run alone in the model."""
    env, trace = simpy.Environment(), Trace()
    cta = CTA(env, hw, trace, dtype, 1)
    env.run(cta.wgmma(0, "gemm", rows, n, k, a_from_smem, None))
    return trace.busy_time("tensor")


def measure_softmax(hw: Hardware, rows: int, block_n: int, masked: bool = False) -> float:
    """Cycles of one warpgroup's online softmax of a rows × block_n score tile run alone."""
    cfg = attention.prepare(AttentionConfig(variant="ws", headdim=64, block_m=rows,
                                            block_n=block_n, consumers=1, stages=1), hw)
    env, trace = simpy.Environment(), Trace()
    cta = attention.AttentionCTA(env, hw, cfg, trace, n_blocks=1, masked_blocks=int(masked))
    env.run(env.process(cta.softmax(0, 0)))
    return env.now
