"""Host side of the attention kernels: the launch configuration (tile, ring depth, consumer
warpgroups, setmaxnreg budgets), input checks, TMA descriptors, the launcher and the CPU-only
compile helper the tests read PTX and SASS through.

Vocabulary (the same as ``sim/attention/cta.py``): a CTA owns ``BM`` rows of Q of one
(batch, head); ``CONSUMERS`` warpgroups split them, 64 rows each; a *block* ``j`` is ``BN`` rows
of K and of V. q, k, v, o are (batch, heads, seq, d) in any layout a TMA descriptor can address
(``kernels/hopper.py``'s ``TMA_RULE``: contiguous ones through one rank-2 descriptor each, the
rest through rank-4 ones, ``boxes.py``); the logsumexp is natural-log, float32, (batch, heads,
seq), contiguous.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import triton
from triton.experimental.gluon import language as gl

from .. import plans
from ..hopper import check_tma, require_hopper, smem_layout, tma_strides
from ..tiles import TILES

try:  # torch is needed to launch and check, not to read this file
    import torch
except ImportError:  # pragma: no cover
    torch = None

VARIANTS = ("sequential", "pipelined", "ws", "ws_pingpong", "overlap", "fa3")
WARP_SPECIALIZED = ("ws", "ws_pingpong", "fa3")
OVERLAP_VARIANTS = ("overlap", "fa3")
PERSISTENT_VARIANTS = ("fa3",)  # the PERSISTENT constexpr (persistent.py)
# fa3's launch when the caller names none (``launch_defaults``), from fa3 beside cuDNN in the
# same rounds. Not causal, at short sequences (S <= SHORT_SEQ: at most 8 K/V blocks of 128 a
# row) a CTA's fixed part (Q's cold load, the epilogue: about a fifth of a d 128 CTA) decides:
# persistent gains 2-9 % there (its next tile's Q load runs under the current tile's loop) and
# loses at longer ones (results/h200-attention-short-launch.json,
# results/h200-attention-grid-persistent-zigzag.json). Causal, the tiles' lengths differ:
# persistent with one head's Q tiles m and n_m-1-m in consecutive rounds ("pairs") balances them
# while few heads' K/V are in flight: +1 … +12 % over the grid's launch at S 1K and 4K (d 64 at
# S 1K +37 %, with its 128x128 tile), fa3 / cuDNN 1.03 → 1.10 at FA3 tab. 2's S 8448 (four H100
# runs: results/h100-attention-grid-pairs.json, h100-attention-grid-default-pairs*.json beside
# h100-attention-grid-defaults.json). At S 16K it loses 3-6 % in two runs of three: a pair is
# 129-257 blocks long there, and the last round's partial wave costs more than the grid's
# launch, which fills SMs a CTA at a time (PAIRS_SEQ). On the H200, pairs over the grid's launch
# in the same rounds: causal S 1K +38 % / 0 % / +11 % (d 64 / 128 / 256), S 4K +5 … +7 %
# (results/h200-attention-grid-defaults.json).
# d 64's persistent launches at 128x128 (SHORT_TILE): +10 % / +22 % (not causal / causal) over
# 192x128 at S 1K (results/h200-attention-grid-short-tile.json). On ragged lengths and the rule's
# edges in tests/kernels/test_attention_gpu.py, test_short_launch_defaults.
SHORT_SEQ = 1024
PAIRS_SEQ = {64: 4096, 128: 8448, 256: 8448}  # head dim -> the longest causal S run in pairs
SHORT_TILE = {64: (128, 128)}  # head dim -> fa3's (BM, BN) when it runs persistent unasked


def persistent_default(variant: str, head_dim: int, seqlen: int, causal: bool) -> bool | str:
    """How fa3 runs when the caller does not say: causal, ``"pairs"`` up to the head dim's
    PAIRS_SEQ; not causal, persistent at S <= SHORT_SEQ. Otherwise (and for every other variant)
    False: one CTA a Q tile."""
    if variant != "fa3":
        return False
    if causal:
        return "pairs" if seqlen <= PAIRS_SEQ[head_dim] else False
    return seqlen <= SHORT_SEQ


def launch_defaults(variant: str, head_dim: int, seqlen: int, causal: bool, *, tile=None,
                    stages=None, softmax=None, fence=True, persistent=None):
    """(tile, persistent) a launch runs with: the caller's, or where it names none of tile,
    stages, fence or persistent, nor a softmax switch outside PERSISTENT_SOFTMAX, the default
    rule: ``persistent_default``, at the head dim's SHORT_TILE where that runs persistent (else
    its TILES entry: None). ``persistent`` comes back as the caller gave it when not None."""
    if persistent is not None:
        return tile, persistent
    if (tile is not None or stages is not None or fence is not True
            or any(name not in PERSISTENT_SOFTMAX for name in switch_names(softmax))):
        return tile, False
    on = persistent_default(variant, head_dim, seqlen, causal)
    return (SHORT_TILE.get(head_dim) if on else None), on


HEAD_DIMS = (64, 128, 256)
SMEM_PER_BLOCK = 227 * 1024  # bytes of shared memory one block may use on Hopper (sm_90)
REGISTERS_PER_SM = 65536
SM90_TARGET = ("cuda", 90, 32)  # GPUTarget(backend, arch, warp size)
LOG2E = 1.4426950408889634


@dataclass(frozen=True)
class Config:
    """Static shape of one launch. ``BN`` and ``BM`` must be powers of two (Gluon tensors are),
    so FA3's 128×176 (d128) and 128×80 (d256) become 128×128 and 128×64 in the default tiles.
    fa3 (not persistent) also takes a ``BN`` of two powers of two, its blocks held in two
    pieces (``boxes.py``): ``tile=(128, 80)`` is FA3's d 256 tile, 64 + 16."""

    variant: str
    head_dim: int
    BM: int  # Q rows per CTA
    BN: int  # K/V rows per block
    consumers: int  # consumer warpgroups (64 rows each)
    stages: int  # ring slots for K and for V
    warp_specialized: bool
    consumer_regs: int = 240  # setmaxnreg target of each consumer warpgroup (ws variants)
    producer_regs: int = 24  # ... and of the producer warp's warpgroup
    persistent: bool = False  # fa3 only: one CTA per SM over a list of tiles (persistent.py)
    pairs: bool = False  # persistent, causal: a head's Q tiles in pairs (persistent.cta_tile)

    @property
    def pieces(self) -> tuple[int, ...]:
        """The rows of the boxes a K/V block is held in (``boxes.pieces``): ``(BN,)`` or two."""
        from .boxes import pieces
        return pieces.fn(self.BN)

    @property
    def q_rows(self) -> int:
        """Rows of Q one TMA box carries: one consumer warpgroup's share, or the whole tile."""
        return self.BM // self.consumers if self.warp_specialized else self.BM

    @property
    def num_warps(self) -> int:
        """Warps of the kernel's default partition: consumer 0 (ws) or all consumers."""
        return 4 if self.warp_specialized else 4 * self.consumers

    @property
    def maxnreg(self) -> int | None:
        """Register cap at entry (setmaxnreg needs one): 65536 over all warpgroups, /8."""
        if not self.warp_specialized:
            return None
        return REGISTERS_PER_SM // (128 * (self.consumers + 1)) // 8 * 8

    @property
    def o_buffers(self) -> int:
        """Persistent fa3's O staging buffers (64 x d each): ``persistent.o_buffers``."""
        if not self.persistent:
            return 0
        from .persistent import o_buffers
        return o_buffers.fn(self.BM, self.BN, self.head_dim, self.stages, self.consumers)

    def smem_bytes(self, elem_bytes: int = 2) -> int:
        q = self.BM * self.head_dim * elem_bytes
        ring = 2 * self.stages * self.BN * self.head_dim * elem_bytes  # K ring + V ring
        barriers = 8 * (4 * self.stages + 1 + self.consumers)
        if self.persistent:  # O buffers, q_empty, the epilogue's turns
            q += self.o_buffers * 64 * self.head_dim * elem_bytes
            barriers += 8 * (1 + self.consumers)
        return q + ring + barriers

    def check(self) -> None:
        if self.BM % (64 * self.consumers) or self.BM // self.consumers != 64:
            raise ValueError(f"{self.variant}: each consumer warpgroup owns 64 rows of Q; "
                             f"BM = {self.BM} with {self.consumers} consumers")
        if self.BM & (self.BM - 1) and not (self.BM == 192 and self.warp_specialized):
            raise ValueError(f"{self.variant}: BM must be a power of two; got {self.BM}")
        if len(self.pieces) > 1:
            tail = self.pieces[1]
            if self.variant != "fa3" or self.persistent or tail & (tail - 1) or tail < 16:
                raise ValueError(f"{self.variant}: BN must be a power of two, or (fa3, not "
                                 f"persistent) two, the smaller >= 16, e.g. 80 = 64 + 16; "
                                 f"got {self.BN}{' persistent' if self.persistent else ''}")
        if not 16 <= self.BN <= 256:
            raise ValueError(f"{self.variant}: BN must be in 16..256 (one wgmma); got {self.BN}")
        if self.warp_specialized and self.consumers not in (2, 3):
            raise ValueError(f"{self.variant}: 2 or 3 consumer warpgroups (BM 128 or 192); "
                             f"got BM = {self.BM}")
        need = self.smem_bytes()
        if need > SMEM_PER_BLOCK:
            raise ValueError(
                f"{self.variant}: Q {self.BM}x{self.head_dim} + K and V rings of {self.stages} "
                f"stages x {self.BN * self.head_dim * 2 // 1024} KiB = {need / 1024:.0f} KiB "
                f"> 227 KiB shared memory per block")
        if self.warp_specialized:
            regs = 128 * (self.consumers * self.consumer_regs + self.producer_regs)
            if regs > REGISTERS_PER_SM:
                raise ValueError(
                    f"{self.variant}: {self.consumers} consumer warpgroups x {self.consumer_regs} "
                    f"+ producer {self.producer_regs} registers/thread = {regs} > 65536 per SM")


# Tiles and ring depth: the "gluon" table of sim/tiles.json (kernels/tiles.py; FA3's released tiles,
# block_n rounded to a power of two), which the model reads too. setmaxnreg as FA3: 24/240 with
# 2 consumers, 32/160 with 3.
STAGES_DEFAULT = TILES["gluon"]["stages"]
STAGES_ALLOWED = range(1, 5)


def config(variant: str, head_dim: int, causal: bool = False, stages: int | None = None,
           tile: tuple[int, int] | None = None, persistent: bool = False) -> Config:
    """The launch configuration of ``variant`` at ``head_dim`` (``tile=(BM, BN)`` overrides the
    default for experiments; ``persistent``: fa3 only). Raises ValueError for what cannot run."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {', '.join(VARIANTS)}; got {variant!r}")
    if persistent and variant not in PERSISTENT_VARIANTS:
        raise ValueError(f"persistent: only {', '.join(PERSISTENT_VARIANTS)} has a persistent "
                         f"build; got {variant!r}")
    if head_dim not in HEAD_DIMS:
        raise ValueError(f"head dim must be one of {HEAD_DIMS}; got {head_dim}")
    table = TILES["gluon"]
    BM, BN, consumers = table["one_partition" if variant in table["one_partition_variants"]
                              else "full"][head_dim]
    if tile is not None:
        BM, BN = (int(x) for x in tile)
        consumers = BM // 64
    if variant == "sequential":
        if stages not in (None, 1):
            raise ValueError(f"sequential: the variant is the one-slot ring (stages 1); got {stages}")
        stages = 1
    # 2 slots for every ring variant: a third did not make overlap or fa3 faster once measured
    # interleaved with the 2-slot build (stages= still takes up to 4)
    stages = STAGES_DEFAULT if stages is None else stages
    stages = int(stages)
    if stages not in STAGES_ALLOWED or (variant != "sequential" and stages < 2):
        lo = 1 if variant == "sequential" else 2
        raise ValueError(f"{variant}: stages must be in {lo}..{STAGES_ALLOWED.stop - 1}; got {stages}")
    ws = variant in WARP_SPECIALIZED
    cfg = Config(variant, head_dim, BM, BN, consumers, stages, ws,
                 consumer_regs=240 if consumers == 2 else 160,
                 producer_regs=24 if consumers == 2 else 32, persistent=bool(persistent),
                 pairs=persistent == "pairs")
    cfg.check()
    return cfg


def check_inputs(q, k, v, variant: str, require_gpu: bool = True) -> None:
    """Raise TypeError/ValueError naming the expected form unless attention(q, k, v) can run."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {', '.join(VARIANTS)}; got {variant!r}")
    if torch is None or not all(isinstance(t, torch.Tensor) for t in (q, k, v)):
        raise TypeError("q, k and v must be torch.Tensors of shape (batch, heads, seq, d), "
                        "fp16 or bf16, on a CUDA sm_90 GPU")
    ok = (torch.float16, torch.bfloat16)
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.dtype not in ok:
            raise TypeError(f"{name} must be torch.float16 or torch.bfloat16; got {t.dtype}")
    if not q.dtype == k.dtype == v.dtype:
        raise TypeError(f"q, k and v must have the same dtype; got {q.dtype}, {k.dtype}, {v.dtype}")
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.dim() != 4:
            raise ValueError(f"{name} must be 4-D (batch, heads, seq, d); got shape {tuple(t.shape)}")
    if not q.shape == k.shape == v.shape:
        raise ValueError(f"q, k and v must have the same shape (batch, heads, seq, d); got "
                         f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    B, H, S, D = q.shape
    if D not in HEAD_DIMS:
        raise ValueError(f"head dim must be one of {HEAD_DIMS}; got {D}")
    if B < 1 or H < 1 or S < 1:
        raise ValueError(f"batch, heads and seq must be positive; got shape {tuple(q.shape)}")
    for name, t in (("q", q), ("k", k), ("v", v)):
        check_tma(name, t)  # any layout TMA can address: read in place, never copied
    if require_gpu:
        require_hopper({"q": q, "k": k, "v": v})


def per_head(*tensors) -> bool:
    """Whether a launch on ``tensors`` (q, k, v, o) goes through rank-4 descriptors
    (``boxes.py``): when any of them is not contiguous."""
    return not all(t.is_contiguous() for t in tensors)


def make_descriptors(q, k, v, o, cfg: Config) -> list:
    """The kernel's first four arguments: TMA descriptors of Q in boxes of ``q_rows`` rows, K
    and V in blocks of ``BN`` rows, and O. Contiguous tensors: descriptors over the 2-D
    (batch·heads·seq, d) views (past the end of the tensor a box reads zeros) and O's pointer.
    Otherwise (``per_head``) rank-4 descriptors over each tensor as it lies, (batch, heads, seq,
    d) with its own strides, O's too (boxes of ``q_rows`` rows): past a sequence's end a box
    reads zeros and writes nothing. No copy either way: each descriptor's base is the tensor."""
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    D = q.shape[-1]
    flat = not per_head(q, k, v, o)

    def desc(t, rows):
        if flat:
            blk = (rows, D)
            return TensorDescriptor.from_tensor(t.view(-1, D), list(blk), smem_layout(blk, q.dtype))
        blk = (1, 1, rows, D)
        return TensorDescriptor(t, list(t.shape), list(tma_strides(t)), list(blk),
                                smem_layout(blk, q.dtype))

    def block(t):  # K or V: a block's box, or (a block in pieces) a tuple, one a piece
        boxes = tuple(desc(t, rows) for rows in cfg.pieces)
        return boxes[0] if len(boxes) == 1 else boxes

    return [desc(q, cfg.q_rows), block(k), block(v), o if flat else desc(o, cfg.q_rows)]


def tail_args(descs: list) -> tuple[list, dict]:
    """``make_descriptors``' four as the kernel takes them: K's and V's first pieces in place and,
    for a block in pieces, the second ones as the ``k_tail``, ``v_tail`` keywords (Triton 3.6's
    launcher builds no TMA descriptor that sits inside a tuple argument; ``fa3.py`` pairs them
    up again)."""
    q, k, v, o = descs
    if not isinstance(k, tuple):
        return descs, {}
    return [q, k[0], v[0], o], {"k_tail": k[1], "v_tail": v[1]}


def _launch_options(cfg: Config) -> dict:
    opts = {"num_warps": cfg.num_warps}
    if cfg.maxnreg is not None:
        opts["maxnreg"] = cfg.maxnreg
    return opts


_SM_COUNT: dict = {}


def sm_count(device) -> int:
    key = str(device)
    if key not in _SM_COUNT:
        _SM_COUNT[key] = torch.cuda.get_device_properties(device).multi_processor_count
    return _SM_COUNT[key]


def grid(B: int, H: int, S: int, cfg: Config, sms: int | None = None) -> tuple[int, ...]:
    """One CTA per (Q tile, batch·head); persistent: ``min(tiles, sms)`` CTAs, 1-D."""
    if cfg.persistent:
        return (min(triton.cdiv(S, cfg.BM) * B * H, sms),)
    return (triton.cdiv(S, cfg.BM), B * H)


def persistent_args(kernel, persistent: bool | str = False) -> dict:
    """The ``PERSISTENT`` constexpr (and ``PAIRS`` for ``persistent="pairs"``: the causal tiles
    in pairs, ``persistent.cta_tile``), passed only when on (the off build is the kernel's
    default specialization, so its PTX is unchanged)."""
    if not isinstance(persistent, bool) and persistent != "pairs":
        raise TypeError(f"persistent must be a bool or 'pairs'; got {persistent!r}")
    if not persistent:
        return {}
    if "PERSISTENT" not in kernel.arg_names:
        raise ValueError(f"persistent={persistent!r}: only {', '.join(PERSISTENT_VARIANTS)} has "
                         f"a persistent build")
    return {"PERSISTENT": True, **({"PAIRS": True} if persistent == "pairs" else {})}


def switch_names(softmax) -> tuple:
    """``softmax`` as given to ``attention`` (None, a name, or names) as a tuple of names."""
    if isinstance(softmax, str):
        return (softmax,) if softmax else ()
    return tuple(softmax or ())


def check_persistent_softmax(persistent, softmax) -> None:
    """Raises ValueError where a persistent launch (``persistent`` true) names a softmax switch
    the persistent fa3 does not take (PERSISTENT_SOFTMAX)."""
    other = [name for name in switch_names(softmax) if name not in PERSISTENT_SOFTMAX]
    if persistent and other:
        raise ValueError(f"softmax={other!r}: the persistent fa3 takes only "
                         f"{', '.join(PERSISTENT_SOFTMAX)}; pass persistent=False")


def persistent_arg(cfg: Config) -> bool | str:
    """The ``persistent`` a configuration was made with (``persistent_args``' argument)."""
    return "pairs" if cfg.pairs else cfg.persistent


FENCES = (True, False, "hoisted")  # overlap.py's FENCE: fenced (default), no fence, hoisted


def fence_args(kernel, fence=True) -> dict:
    """The ``FENCE`` constexpr for ``kernel`` (none for a kernel without one). Raises ValueError
    for another value, or for a kernel without a fence asked for anything but the default."""
    if fence is not True and fence is not False and fence != "hoisted":
        raise ValueError(f"fence must be one of {FENCES}; got {fence!r}")
    if "FENCE" in kernel.arg_names:
        return {"FENCE": fence}
    if fence is not True:
        raise ValueError(f"fence={fence!r}: only the overlapped variants "
                         f"({', '.join(OVERLAP_VARIANTS)}) have a schedule fence")
    return {}


# steps.py's SOFTMAX bits, by name (the i-th is bit 1 << i); no_turns, one_release and
# named_turns are fa3's alone
SOFTMAX_SWITCHES = ("tree_max", "lane_sum", "rescale_early", "no_turns", "one_release",
                    "named_turns", "cond_rescale", "poly_exp", "live_half")
# The ones the persistent fa3 (persistent.py) takes: rescale_early reorders overlap.py's loop,
# which persistent.py does not have, and named_turns is the plain grid's alone.
PERSISTENT_SOFTMAX = ("tree_max", "lane_sum", "no_turns", "cond_rescale", "poly_exp",
                      "one_release", "live_half")
# The switches live_half's half-block path does not carry (steps.py WHOLE_ONLY): refused beside it.
WHOLE_ONLY = ("tree_max", "lane_sum", "cond_rescale", "poly_exp")
# Which of them the launcher turns on unless asked, by head dim, and for the persistent
# launch by head dim (a key's third entry; it names the build's full list):
# lane_sum measured +2.5..+3.8 % at d 256 in 5 of the grid's 6 settings (0 % in the 6th;
# results/h200-attention-softmax-ab.json, h200-attention-grid.json); at d 128 it lost up to
# 3.5 % (non-causal), at d 64 it was mixed. tree_max on top of lane_sum at d 256, two H100
# runs in the same rounds as fa3 (results/h100-attention-grid-chains.json,
# h100-attention-grid-poly-exp.json): S 4K +4.5 / +0.8 % (full), +4.2 / +4.3 % (causal),
# S 16K +3.9 / +5.0 %, +1.7 / −0.3 %, S 1K −0.2 … +0.4 %; at d 64 and d 128 tree_max and
# lane_sum stay off (−8 … +2 %). no_turns on d 64's persistent launch (128x128): S 1K
# +2.2 / +2.8 % (causal), +2.6 / +0.6 % (full), S 4K causal 0.0 / −0.2 %, two H100 runs on two
# days (results/h100-attention-grid-persistent-no-turns.json, h100-attention-grid-chains.json);
# ConSan clean (test_consan_persistent). Off: rescale_early, one_release, named_turns
# (−6 … +5 %, none lifting a point; results/h200-attention-grid-switches*.json); cond_rescale
# (lost on the H200 but at d 256 S 16K, +1.7 %: h200-attention-grid-cond-rescale-*.json);
# poly_exp (−4 … −10 % at every point, h100-attention-grid-poly-exp.json).
# (fa3 only: overlap shares the switches but was not measured with them)
SOFTMAX_DEFAULT = {("fa3", 256): ("lane_sum", "tree_max"),
                   ("fa3", 64, "persistent"): ("no_turns",)}


def softmax_default(variant: str | None, head_dim: int | None, persistent=False) -> tuple:
    """The softmax switches ``variant`` runs at ``head_dim`` unless asked (SOFTMAX_DEFAULT; a
    persistent launch's own entry, where its head dim has one)."""
    if persistent and (variant, head_dim, "persistent") in SOFTMAX_DEFAULT:
        return SOFTMAX_DEFAULT[(variant, head_dim, "persistent")]
    return SOFTMAX_DEFAULT.get((variant, head_dim), ())


def softmax_bits(softmax=None, head_dim: int | None = None, variant: str | None = None,
                 persistent=False) -> int:
    """``softmax`` (None: ``softmax_default`` for ``variant`` at ``head_dim``, persistent or
    not; else an iterable of ``SOFTMAX_SWITCHES`` names) as the ``SOFTMAX`` constexpr's bits.
    Raises ValueError for another name."""
    names = softmax_default(variant, head_dim, persistent) if softmax is None else softmax
    bits = 0
    for name in switch_names(names):
        if name not in SOFTMAX_SWITCHES:
            raise ValueError(f"softmax switches are {SOFTMAX_SWITCHES}; got {name!r}")
        bits |= 1 << SOFTMAX_SWITCHES.index(name)
    whole = set(switch_names(names)) & set(WHOLE_ONLY)
    if "live_half" in switch_names(names) and whole:
        raise ValueError(f"softmax switches: live_half does not go with {sorted(whole)} (its "
                         f"half-block path carries none of {', '.join(WHOLE_ONLY)})")
    return bits


def softmax_args(kernel, softmax=None, head_dim: int | None = None,
                 variant: str | None = None, persistent=False) -> dict:
    """The ``SOFTMAX`` constexpr for ``kernel``: the overlapped kernels (overlap, fa3) take it;
    another kernel may only be asked for none."""
    bits = softmax_bits(softmax, head_dim, variant, persistent)
    if "SOFTMAX" in kernel.arg_names:
        return {"SOFTMAX": bits}
    if bits and softmax is not None:
        raise ValueError(f"softmax={softmax!r}: only the overlapped variants "
                         f"({', '.join(OVERLAP_VARIANTS)}) have the softmax switches")
    return {}


PER_CALL = ("q_desc", "k_desc", "v_desc", "o_ptr", "lse_ptr")  # a call's own values (then tails)


def launch(kernel, q, k, v, o, lse, cfg: Config, causal: bool, scale: float,
           profile: bool = False, fence=True, softmax=None, ctas: int | None = None):
    """``profile``: compile in the Proton scopes (``kernels/scopes.py``); ``fence``: see
    ``overlap.py`` (True, False or "hoisted"); ``softmax``: names from ``SOFTMAX_SWITCHES``
    (None: ``SOFTMAX_DEFAULT``); ``cfg.persistent``: ``persistent.py``, at most ``ctas`` CTAs
    (None: one per SM). Returns the launch's plan (``kernels/plans.py``; ``relaunch``)."""
    B, H, S, _ = q.shape
    extra = fence_args(kernel, fence) | softmax_args(kernel, softmax, cfg.head_dim, cfg.variant,
                                                     cfg.persistent)
    extra |= persistent_args(kernel, persistent_arg(cfg))
    (q_desc, k_desc, v_desc, o_arg), tails = tail_args(make_descriptors(q, k, v, o, cfg))
    extra |= tails
    if profile:
        extra["PROFILE"] = True
    sms = (ctas or sm_count(q.device)) if cfg.persistent else None
    g = grid(B, H, S, cfg, sms)
    args = (q_desc, k_desc, v_desc, o_arg, lse, S, scale * LOG2E, cfg.BM, cfg.stages,
            cfg.consumers, causal)
    kw = extra | _launch_options(cfg)
    compiled = kernel[g](*args, **kw)
    return plans.make_plan(kernel, compiled, g, args, kw, PER_CALL + tuple(tails), cfg)


def relaunch(plan: plans.Plan, q, k, v, o, lse) -> None:
    """``launch`` again by its plan, on tensors with the key's shapes, strides, dtype and device:
    only their descriptors are made anew."""
    descs, tails = tail_args(make_descriptors(q, k, v, o, plan.config))
    plan.run(*descs, lse, *tails.values())


def compile_sm90(kernel, cfg: Config, torch_dtype=None, causal: bool = False,
                 profile: bool = False, fence=True, softmax=None, strided: bool = False):
    """Compile ``kernel`` for sm_90a (no GPU needed) with the exact constexprs and descriptor
    layouts ``launch`` uses; returns triton's CompiledKernel (``.asm['ptx']``, ``.metadata``).
    ``strided``: the build ``launch`` takes for tensors that are not contiguous (``per_head``:
    here FA3's (batch, seq, heads, d) seen through its transpose; every such layout gets the same
    build, the strides being runtime values of the descriptors)."""
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource
    from triton.runtime.jit import mangle_type

    check_persistent_softmax(cfg.persistent, softmax)
    torch_dtype = torch_dtype or torch.float16
    S = max(cfg.BM, cfg.BN)
    shape = (1, S, 2, cfg.head_dim) if strided else (1, 2, S, cfg.head_dim)
    q, k, v, o = (torch.empty(shape, dtype=torch_dtype) for _ in range(4))
    if strided:
        q, k, v, o = (t.transpose(1, 2) for t in (q, k, v, o))
    descs, tails = tail_args(make_descriptors(q, k, v, o, cfg))
    names = kernel.arg_names
    ptr = "*fp16" if torch_dtype == torch.float16 else "*bf16"
    signature = {names[0]: mangle_type(descs[0]), names[1]: mangle_type(descs[1]),
                 names[2]: mangle_type(descs[2]), names[3]: mangle_type(descs[3]) if strided else ptr,
                 names[4]: "*fp32", names[5]: "i32", names[6]: "fp32"}
    constexprs = {names[7]: cfg.BM, names[8]: cfg.stages, names[9]: cfg.consumers,
                  names[10]: causal, "num_warps": cfg.num_warps, **fence_args(kernel, fence),
                  **softmax_args(kernel, softmax, cfg.head_dim, cfg.variant, cfg.persistent),
                  **persistent_args(kernel, persistent_arg(cfg))}
    if "PROFILE" in names:
        constexprs["PROFILE"] = profile
    for n in names[7:]:
        signature[n] = mangle_type(tails[n]) if n in tails else "constexpr"
    # as the launcher specializes them: torch's allocations are 16-byte aligned
    aligned = {(i,): [["tt.divisibility", 16]] for i in ((4,) if strided else (3, 4))}
    src = GluonASTSource(kernel, signature, constexprs, aligned)
    return triton.compile(src, target=GPUTarget(*SM90_TARGET), options=_launch_options(cfg))


def flops(B: int, H: int, S: int, D: int, causal: bool) -> float:
    """4·B·H·S²·d, halved for causal (FA3's count)."""
    f = 4.0 * B * H * S * S * D
    return f / 2 if causal else f


def default_scale(D: int) -> float:
    return 1.0 / math.sqrt(D)
