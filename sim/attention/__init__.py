"""Attention forward schedules, one module per variant (names shared with kernels/)."""
from __future__ import annotations

from dataclasses import replace
from importlib import import_module

import simpy

from ..config import AttentionConfig, check_attention, largest_block_n
from ..cta import make_units
from ..hardware import Hardware
from ..memo import on_disk
from ..trace import Trace
from .cta import AttentionCTA

VARIANTS = ("sequential", "fa2", "pipelined", "ws", "ws_pingpong", "overlap", "fa3", "overlap3")
BLACKWELL_VARIANTS = ("fa4",)   # need tensor memory (the `b200` preset)


def module(variant: str):
    if variant not in VARIANTS + BLACKWELL_VARIANTS:
        raise ValueError(f"unknown attention variant {variant!r}: expected one of "
                         f"{', '.join(VARIANTS + BLACKWELL_VARIANTS)}")
    return import_module(f"{__name__}.{variant}")


def prepare(cfg: AttentionConfig, hw: Hardware) -> AttentionConfig:
    """Resolve tile defaults, apply what the variant fixes (sequential: 1 stage; overlap3: the
    widest block that fits its registers), and check every limit."""
    mod = module(cfg.variant)
    cfg = cfg.resolved()
    if hasattr(mod, "check"):                   # a schedule with limits of its own (fa4)
        return mod.check(cfg, hw)
    if getattr(mod, "STAGES", None):
        cfg = replace(cfg, stages=mod.STAGES)
    if getattr(mod, "SHRINK_BLOCK_N", False):
        cfg = replace(cfg, block_n=largest_block_n(cfg, hw, mod.LIVE_S, mod.LIVE_P, mod.WARP_SPECIALIZED))
    check_attention(cfg, hw, mod.LIVE_S, mod.LIVE_P, mod.WARP_SPECIALIZED)
    return cfg


def ctas_per_sm(cfg: AttentionConfig, hw: Hardware) -> int:
    attr = getattr(module(cfg.variant), "CTAS_PER_SM", 1)
    return getattr(hw, attr) if isinstance(attr, str) else attr


@on_disk
def simulate(cfg: AttentionConfig, hw: Hardware, n_blocks: int, masked_blocks: int = 0,
             trace: Trace | None = None) -> tuple[float, Trace]:
    """Run the CTAs one SM holds at once, each over `n_blocks` K/V blocks; return (clk, trace).
    `cfg` must come from `prepare`."""
    if n_blocks < 1:
        raise ValueError(f"a CTA needs at least one K/V block, got {n_blocks}")
    env, trace = simpy.Environment(), trace or Trace()
    units = make_units(env, trace=trace, hw=hw)
    mod = module(cfg.variant)
    n_ctas = ctas_per_sm(cfg, hw)
    procs = []
    for c in range(n_ctas):
        cta = AttentionCTA(env, hw, cfg, trace, n_blocks, masked_blocks,
                           name=f"cta{c}." if n_ctas > 1 else "", units=units)
        procs += [env.process(role) for role in mod.roles(cta)]
    env.run(until=simpy.AllOf(env, procs))
    return env.now, trace
