"""Workload configurations and the limits they must respect.

Every check raises ``ValueError`` naming the limit, e.g. "ring of 3 stages × 88 KiB + Q 32 KiB =
296 KiB > 227 KiB shared memory per block" — the same limits the real kernels hit at compile time.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from .machine import KIB, Hardware

DTYPES = {"fp16": 2, "bf16": 2, "fp8": 1}        # bytes per element of Q/K/V or A/B

# Tiles and ring depths: the repository's one table (sim/tiles.json: in the model's folder,
# which carries every file the model reads), read here, by the kernels
# (kernels/attention/host.py) and, through this module, by fidelity. `TILES[table]["full" or
# "causal"][head_dim]` is a `Tile`; `TILES[table]["stages"]` the ring depth. Tables: "fa3"
# (FlashAttention-3's own tiles), "fa2" (FlashAttention-2's), "gluon" (our Gluon kernels').
TILES_FILE = Path(__file__).resolve().parent / "tiles.json"


class Tile(NamedTuple):
    block_m: int        # rows of Q per CTA
    block_n: int        # rows of K/V per block
    consumers: int      # consumer warpgroups


def read_tiles(path: Path = TILES_FILE) -> dict[str, dict]:
    """tiles.json as {table: {part: {head_dim: Tile}, other key: its value}}."""
    raw = json.loads(path.read_text())
    return {name: {part: ({int(d): Tile(**t) for d, t in value.items()}
                          if isinstance(value, dict) else value)
                   for part, value in table.items()}
            for name, table in raw.items() if isinstance(table, dict)}


TILES = read_tiles()


def tile(table: str, head_dim: int, causal: bool = False, part: str | None = None) -> Tile:
    """The tile `table` runs at `head_dim` (the nearest head dim it lists), causal or not; `part`
    names another of the table's parts (e.g. the Gluon kernels' "one_partition")."""
    parts = TILES[table]
    rows = parts[part or ("causal" if causal and "causal" in parts else "full")]
    return rows[min(rows, key=lambda k: (abs(k - head_dim), k))]


def kernel_tile(variant: str, head_dim: int, causal: bool = False) -> Tile:
    """The tile our Gluon kernel of `variant` runs by default (kernels/attention/host.py
    `config` reads the same table)."""
    one = variant in TILES["gluon"]["one_partition_variants"]
    return tile("gluon", head_dim, causal, "one_partition" if one else None)


BOOKKEEPING_REGS = 32   # per consumer thread beyond the tiles: row max/sum, pointers, loop state.
                        # FA3 d128 (128×176, 2-stage overlap: O 64 + S 88 + P 44) fits 240 with 44
                        # to spare (FA3 §3.2); 32 is our estimate of what those hold.


# The kernels' schedule switches (kernels/attention/steps.py, `SOFTMAX` bits) that move or drop a
# step of the loop or move work between units (poly_exp: a quarter of the exps from the SFU to
# the FMA pipe), and the variants whose kernel has each; tree_max and lane_sum reorder the
# softmax's arithmetic inside one step, which the model does not split, so it does not take them.
# named_turns changes what a turn's hand-off costs (a named barrier, not an mbarrier), which
# nothing here has measured, so the model does not take it either.
SCHEDULE_SWITCHES = {"rescale_early": ("overlap", "fa3"), "no_turns": ("fa3",),
                     "one_release": ("fa3",), "cond_rescale": ("overlap", "fa3"),
                     "poly_exp": ("overlap", "fa3"), "live_half": ("overlap", "fa3")}
# the ones the persistent fa3 takes too (kernels/attention/persistent.py)
PERSISTENT_SWITCHES = ("no_turns", "poly_exp", "one_release", "live_half")


# FA4's forward on sm_100 (flash_attn/cute/flash_fwd_sm100.py in Dao-AILab/flash-attention,
# its q_stage 2): two Q tiles of 128 rows per CTA, one per softmax warpgroup; K/V blocks of 128.
FA4_TILE = (256, 128)
# FA4's moves that the model's `fa4` schedule takes, each a switch that turns one *off* (so plain
# `fa4` is FA4, and the ablation adds them back one by one; sim/attention/fa4.py says what each
# does).
FA4_SWITCHES = ("no_correction_wg", "no_conditional_rescale", "no_poly_exp", "no_cta_pair")


def fa4_cta_pair(cfg: AttentionConfig) -> bool:
    """Does FA4 run this shape on a CTA pair (tcgen05 `cta_group::2`: each MMA M 256 over the two
    SMs of a TPC)? FA4's dispatcher (flash_attn/cute/interface.py, `use_2cta_instrs`) pairs when
    the head dims round up to 128 — Q·K's to 128 or 192, V's to 128; the model's are one, so 128
    — the mask is not causal, and the query has more than two tiles of 128 rows.
    ``no_cta_pair`` runs one CTA per MMA there too."""
    d = -(-cfg.headdim // 16) * 16
    return (d == 128 and not cfg.causal and cfg.seqlen > 2 * 128
            and "no_cta_pair" not in cfg.switches)


def _kib(nbytes: int) -> str:
    return f"{nbytes / KIB:g} KiB"


@dataclass(frozen=True)
class AttentionConfig:
    """One attention forward: O = softmax(Q Kᵀ · scale) V, layout (batch, heads, seq, d)."""
    batch: int = 4
    heads: int = 16
    seqlen: int = 8448
    headdim: int = 128
    causal: bool = False
    dtype: str = "fp16"
    variant: str = "fa3"
    block_m: int | None = None      # rows of Q per CTA (split over the consumer warpgroups)
    block_n: int | None = None      # rows of K/V per ring stage
    stages: int = TILES["fa3"]["stages"]    # K/V ring depth (FA3 uses 2)
    consumers: int | None = None    # consumer warpgroups per CTA
    persistent: bool = False        # fa3 only: one CTA per SM walks a list of (head, Q tile)
                                    # tiles (kernels/attention/persistent.py; sim/attention/persistent.py)
    switches: tuple[str, ...] = ()  # the overlapped kernels' schedule switches the model takes
                                    # (SCHEDULE_SWITCHES; the kernels' `softmax=` names)

    @property
    def flops(self) -> float:
        """As the paper counts them: 4·B·H·S²·d, halved for causal (FA3 §4.1)."""
        f = 4.0 * self.batch * self.heads * self.seqlen ** 2 * self.headdim
        return f / 2 if self.causal else f

    def resolved(self) -> AttentionConfig:
        """Fill in the paper's tile defaults for this head dim and variant."""
        from dataclasses import replace
        if self.variant == "fa4":
            bm, bn = FA4_TILE
            return replace(self, block_m=self.block_m or bm, block_n=self.block_n or bn,
                           consumers=self.consumers or 2)
        table = "fa2" if self.variant == "fa2" else "fa3"
        bm, bn, c = tile(table, self.headdim, self.causal)
        return replace(self, block_m=self.block_m or bm, block_n=self.block_n or bn,
                       consumers=self.consumers or c)


@dataclass(frozen=True)
class GemmConfig:
    """C = A·B with A (m×k), B (k×n); fp32 accumulate. Tile fields left None take the variant's
    defaults (sim/gemm/<variant>.py)."""
    m: int = 8192
    n: int = 8192
    k: int = 8192
    dtype: str = "fp16"
    variant: str = "ws_pingpong"
    block_m: int | None = None      # tile rows (ws: split over the consumers; pingpong: each owns one)
    block_n: int | None = None
    block_k: int | None = None
    stages: int | None = None
    consumers: int | None = None
    persistent: bool | None = None  # one CTA per SM walking tiles, or one CTA per tile (None:
                                    # the variant's kernel's default)
    aligned: bool | None = None     # every row stride of A, B, C a multiple of 128 bytes (None:
                                    # contiguous, so k and n say)

    @property
    def flops(self) -> float:
        return 2.0 * self.m * self.n * self.k


# --- the limits ---------------------------------------------------------------------------------
def check_common(dtype: str, stages: int) -> None:
    if dtype not in DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}: expected one of {sorted(DTYPES)}")
    if stages < 1:
        raise ValueError(f"stages must be >= 1 (a ring needs at least one slot), got {stages}")


def check_smem(what: str, stage_bytes: int, stages: int, fixed_bytes: int, fixed_name: str,
               hw: Hardware) -> int:
    total = stages * stage_bytes + fixed_bytes
    if total > hw.smem_per_block:
        raise ValueError(
            f"ring of {stages} stages × {_kib(stage_bytes)} + {fixed_name} {_kib(fixed_bytes)} = "
            f"{_kib(total)} > {_kib(hw.smem_per_block)} shared memory per block ({what})")
    return total


def consumer_reg_budget(hw: Hardware, consumers: int, warp_specialized: bool) -> int:
    """Registers per consumer thread. With a producer warpgroup, setmaxnreg moves registers to the
    consumers: FA3 gives the producer 24 (2 consumers) or 32 (3 consumers) and the rest, in steps of
    8, to the consumers (240 and 160: FA3 §3.1; CUTLASS's warp-specialized kernels)."""
    per_wg = hw.regs_per_sm // 128            # registers per thread if one warpgroup had them all
    if not warp_specialized:
        return min(hw.max_regs_per_thread, per_wg // consumers)
    producer = 24 if consumers <= 2 else 32
    return min(hw.setmaxnreg_max, (per_wg - producer) // consumers // 8 * 8)


def check_attention(cfg: AttentionConfig, hw: Hardware, live_s: int, live_p: int,
                    warp_specialized: bool) -> None:
    check_common(cfg.dtype, cfg.stages)
    for name in ("batch", "heads", "seqlen"):
        if getattr(cfg, name) < 1:
            raise ValueError(f"{name} must be >= 1, got {getattr(cfg, name)}")
    d, bm, bn, c = cfg.headdim, cfg.block_m, cfg.block_n, cfg.consumers
    if d % 16 or not 16 <= d <= 256:
        raise ValueError(f"head dim {d} must be a multiple of the wgmma k-step 16 and <= 256 "
                         "(the N of the P·V wgmma)")
    if c < 1:
        raise ValueError(f"consumer warpgroups must be >= 1, got {c}")
    if bm % (64 * c):
        raise ValueError(f"block_m {bm} must split into {c} consumer warpgroups of a multiple of "
                         "64 rows (a wgmma's M is 64 per warpgroup)")
    if bn % 16 or not 16 <= bn <= 256:
        raise ValueError(f"block_n {bn} must be a multiple of 16 (the k-step of P·V) and <= 256 "
                         "(the N of the Q·Kᵀ wgmma)")
    el = DTYPES[cfg.dtype]
    for name in cfg.switches:
        if name not in SCHEDULE_SWITCHES:
            raise ValueError(f"switches: {name!r} is not one the model takes; expected any of "
                             f"{sorted(SCHEDULE_SWITCHES)}")
        if cfg.variant not in SCHEDULE_SWITCHES[name] or (
                cfg.persistent and name not in PERSISTENT_SWITCHES):
            where = "" if name in PERSISTENT_SWITCHES else " (not persistent)"
            raise ValueError(f"switches: {name!r} applies to "
                             f"{' and '.join(SCHEDULE_SWITCHES[name])}{where}; "
                             f"got {cfg.variant!r}{' persistent' if cfg.persistent else ''}")
    if {"rescale_early", "cond_rescale"} <= set(cfg.switches):
        raise ValueError("switches: rescale_early and cond_rescale do not go together (the "
                         "early rescale runs before the block's max is known)")
    if "live_half" in cfg.switches and {"cond_rescale", "poly_exp"} & set(cfg.switches):
        raise ValueError("switches: live_half does not go with cond_rescale or poly_exp (the "
                         "kernel's half-block path carries neither)")
    if cfg.persistent:
        if cfg.variant != "fa3":
            raise ValueError(f"persistent: only fa3 has a persistent schedule; got {cfg.variant!r}")
        # O staged in buffers of its own (64 x d each), so Q is free after the last Q·Kᵀ
        check_smem("Q + O + K/V ring", 2 * bn * d * el, cfg.stages,
                   (bm + o_buffers(cfg, hw) * 64) * d * el, "Q + O", hw)
    check_smem("Q + K/V ring", 2 * bn * d * el, cfg.stages, bm * d * el, "Q", hw)
    if cfg.variant == "fa2":
        return
    rows = bm // c
    regs = rows * d // 128 + (live_s * rows * bn + live_p * rows * bn // 2) // 128 + BOOKKEEPING_REGS
    budget = consumer_reg_budget(hw, c, warp_specialized)
    if regs > budget:
        raise ValueError(
            f"consumer needs {regs} registers/thread (O {rows * d // 128} + {live_s} S of "
            f"{rows * bn // 128} + {live_p} P of {rows * bn // 256} + {BOOKKEEPING_REGS}) > "
            f"{budget} ({'setmaxnreg budget' if warp_specialized else 'per-thread limit'} with "
            f"{c} consumer warpgroups)")


def o_buffers(cfg: AttentionConfig, hw: Hardware) -> int:
    """Persistent fa3's O staging buffers (64 x d each) beside Q and the K and V rings: one per
    consumer warpgroup, else one they take in turns (d 256: 64 + 128 + 64 KiB is over 227 KiB).
    The kernel's rule (``kernels/attention/persistent.py`` ``o_buffers``, 1 KiB for barriers)."""
    el = DTYPES[cfg.dtype]
    base = (cfg.block_m + 2 * cfg.stages * cfg.block_n) * cfg.headdim * el + 1024
    fits = base + cfg.consumers * 64 * cfg.headdim * el <= hw.smem_per_block
    return cfg.consumers if fits else 1


def largest_block_n(cfg: AttentionConfig, hw: Hardware, live_s: int, live_p: int,
                    warp_specialized: bool) -> int:
    """The widest K/V block (multiple of 16) whose registers and ring still fit — what register
    pressure forces the 3-stage pipeline down to (FA3 app. B.3)."""
    from dataclasses import replace
    for bn in range(cfg.block_n, 15, -16):
        try:
            check_attention(replace(cfg, block_n=bn), hw, live_s, live_p, warp_specialized)
            return bn
        except ValueError:
            continue
    raise ValueError(f"no block_n fits head dim {cfg.headdim} with {cfg.consumers} consumers")


def check_gemm(cfg: GemmConfig, hw: Hardware, rows_per_wg: int, warp_specialized: bool,
               cooperative: bool) -> None:
    check_common(cfg.dtype, cfg.stages)
    for name in ("m", "n", "k"):
        v = getattr(cfg, name)
        if v < 8 or v % 8:
            raise ValueError(f"{name} = {v} must be a positive multiple of 8 (16-byte TMA rows)")
    if cfg.block_k % 16:
        raise ValueError(f"block_k {cfg.block_k} must be a multiple of the wgmma k-step 16")
    if cfg.block_n % 8 or not 8 <= cfg.block_n <= 256:
        raise ValueError(f"block_n {cfg.block_n} must be a multiple of 8 and <= 256 (wgmma N)")
    if rows_per_wg < 64 or rows_per_wg % 64:
        raise ValueError(f"each consumer's rows ({rows_per_wg}) must be a multiple of 64 (wgmma M)")
    el = DTYPES[cfg.dtype]
    stage = (cfg.block_m + cfg.block_n) * cfg.block_k * el
    # C staging (kernels/gemm/): the cooperative tile goes out whole; a pingpong consumer stores
    # its tile one 64-row box at a time through a buffer of its own, so a 192-row tile (three m64
    # row blocks) needs no more than a 64-row one; without a producer the K-loop is over before
    # the epilogue, which reuses the ring and needs only what C has beyond it.
    staging = (cfg.block_m if cooperative else cfg.consumers * 64) * cfg.block_n * el
    if not warp_specialized:
        staging = max(0, staging - cfg.stages * stage)
    check_smem("A/B ring", stage, cfg.stages, staging, "C staging", hw)
    regs = rows_per_wg * cfg.block_n // 128 + BOOKKEEPING_REGS
    budget = consumer_reg_budget(hw, cfg.consumers, warp_specialized)
    if regs > budget:
        raise ValueError(f"consumer needs {regs} registers/thread (accumulator {rows_per_wg}×"
                         f"{cfg.block_n} fp32 + {BOOKKEEPING_REGS}) > {budget}")


def check_fa4(cfg: AttentionConfig, hw: Hardware) -> AttentionConfig:
    """FA4's limits: a machine with tensor memory, S and O of both Q tiles in its columns, Q and O
    staged in shared memory with as many K/V stages as the rest holds (FA4's rule); returns `cfg`
    with those stages."""
    from dataclasses import replace
    check_common(cfg.dtype, 1)
    for name in ("batch", "heads", "seqlen"):
        if getattr(cfg, name) < 1:
            raise ValueError(f"{name} must be >= 1, got {getattr(cfg, name)}")
    for name in cfg.switches:
        if name not in FA4_SWITCHES:
            raise ValueError(f"switches: {name!r} is not one of fa4's; expected any of "
                             f"{list(FA4_SWITCHES)}")
    if cfg.persistent:
        raise ValueError("persistent: only fa3 has a persistent schedule; got 'fa4'")
    if not hw.tmem_columns:
        raise ValueError(f"fa4 needs tensor memory (tcgen05, sm_100); {hw.name} has none")
    d, bm, bn, c = cfg.headdim, cfg.block_m, cfg.block_n, cfg.consumers
    if c != 2 or bm != 2 * 128:
        raise ValueError(f"fa4 runs two Q tiles of 128 rows (the tcgen05 MMA's M), one per softmax "
                         f"warpgroup: block_m 256 with 2 consumers, got {bm} with {c}")
    if d % 16 or not 16 <= d <= 256 or bn % 16 or not 16 <= bn <= 256:
        raise ValueError(f"head dim {d} and block_n {bn} must be multiples of 16 and <= 256 "
                         "(the MMA's N and K)")
    columns = 2 * bn + 2 * d                  # S (P inside it) and O of each Q tile, 32 bit each
    if columns > hw.tmem_columns:
        raise ValueError(f"tensor memory: S 2 × {bn} + O 2 × {d} = {columns} columns > "
                         f"{hw.tmem_columns} per SM")
    el = DTYPES[cfg.dtype]
    # one K or V block, K and V sharing one ring; a CTA pair splits each between its two SMs
    stage = bn * d * el // (2 if fa4_cta_pair(cfg) else 1)
    stages = (hw.smem_per_block - 2 * bm * d * el) // stage
    check_smem("Q + O + K/V ring", stage, max(stages, 2), 2 * bm * d * el, "Q + O", hw)
    return replace(cfg, stages=stages)
