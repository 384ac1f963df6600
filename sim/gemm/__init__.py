"""GEMM schedules, one module per variant (names shared with kernels/)."""
from __future__ import annotations

import math
from dataclasses import replace
from importlib import import_module

import simpy

from ..config import DTYPES, GemmConfig, check_gemm
from ..hardware import Hardware
from ..memo import on_disk
from ..trace import Trace
from .cta import GemmCTA

VARIANTS = ("sequential", "pipelined", "ws", "ws_pingpong")


def module(variant: str):
    if variant not in VARIANTS:
        raise ValueError(f"unknown GEMM variant {variant!r}: expected one of {', '.join(VARIANTS)}")
    return import_module(f"{__name__}.{variant}")


def prepare(cfg: GemmConfig, hw: Hardware) -> GemmConfig:
    """Fill the variant's tile defaults (fields left None) and check every limit."""
    mod = module(cfg.variant)
    filled = {k: v for k, v in mod.DEFAULTS.items() if getattr(cfg, k) is None}
    if cfg.persistent is None:
        filled["persistent"] = mod.PERSISTENT
    if cfg.aligned is None:
        el = DTYPES.get(cfg.dtype, 2)
        filled["aligned"] = (cfg.k * el) % 128 == 0 and (cfg.n * el) % 128 == 0
    cfg = replace(cfg, **filled)
    if getattr(mod, "STAGES", None):
        cfg = replace(cfg, stages=mod.STAGES)
    rows = cfg.block_m // cfg.consumers if mod.COOPERATIVE else cfg.block_m
    check_gemm(cfg, hw, rows, mod.WARP_SPECIALIZED, mod.COOPERATIVE)
    if cfg.stages < getattr(mod, "MIN_STAGES", 1):
        raise ValueError(f"{cfg.variant} keeps one wgmma group in flight, which still reads the "
                         f"slot before the one being filled: stages must be >= {mod.MIN_STAGES}, "
                         f"got {cfg.stages}")
    return cfg


def tiles(cfg: GemmConfig) -> int:
    """Output tiles of the whole problem (a pingpong tile is one consumer's)."""
    return math.ceil(cfg.m / cfg.block_m) * math.ceil(cfg.n / cfg.block_n)


def tiles_per_cta(cfg: GemmConfig, hw: Hardware) -> list[int]:
    """How many output tiles each CTA of the launch walks. Persistent (kernels/gemm/common.py
    `grid`): min(tiles, SMs) CTAs, tile t to CTA t mod that; otherwise one CTA per tile."""
    n = tiles(cfg)
    if not cfg.persistent:
        return [1] * n
    ctas = min(n, hw.sms)
    return [len(range(c, n, ctas)) for c in range(ctas)]


@on_disk
def simulate(cfg: GemmConfig, hw: Hardware, n_tiles: int, k_blocks: int,
             trace: Trace | None = None) -> tuple[float, Trace]:
    """One CTA over `n_tiles` tiles of `k_blocks` blocks; (clk, trace)."""
    if n_tiles < 1 or k_blocks < 1:
        raise ValueError(f"a CTA needs >= 1 tile and >= 1 k-block, got {n_tiles}, {k_blocks}")
    env, trace = simpy.Environment(), trace or Trace()
    mod = module(cfg.variant)
    cta = GemmCTA(env, hw, cfg, trace, n_tiles, k_blocks, mod.COOPERATIVE)
    procs = [env.process(role) for role in mod.roles(cta)]
    env.run(until=simpy.AllOf(env, procs))
    return env.now, trace
