"""Pieces every attention variant shares: configuration, input checks, TMA descriptors, the
launcher, the CPU-only compile helper, and on the device the steps every schedule is built of
(tile position, ring loads, the online-softmax step, the epilogue).

Vocabulary (the same as ``sim/attention/cta.py``):

* a CTA owns ``BM`` rows of Q of one (batch, head); ``CONSUMERS`` warpgroups split them, 64 rows
  each in the warp-specialized variants (``BM // CONSUMERS`` in general);
* a *block* ``j`` is ``BN`` rows of K and of V; K and V have rings of their own (as in FA3):
  ``K_j``'s slot frees as soon as ``Q·K_jᵀ`` is done, while ``V_j`` is still needed for ``P·V``;
* slot ``s = j % STAGES`` holds block ``j`` in its ``j // STAGES``-th use, so its mbarriers'
  phase parity is ``(j // STAGES) & 1``. A fresh mbarrier counts as having completed the phase
  before phase 0, so a producer's first pass over ``empty`` (parity 1) does not wait.

Layout: q, k, v, o are (batch, heads, seq, d), contiguous; the kernels see them as 2-D
``(batch·heads·seq, d)`` so one TMA descriptor serves every head. A block that runs past the end
of one head's sequence reads the next head's rows (or zeros past the tensor): those columns are
masked to ``-inf`` before the softmax, and rows past the end are not stored (O is written with
masked stores, not TMA, for that reason). The logsumexp is natural-log, float32, (batch, heads,
seq).

Scores are kept in base 2: ``qk_scale = scale·log2(e)``, ``P = exp2(S·qk_scale − m)``,
``LSE = (m + log2 l)·ln 2``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language._core import builtin as _builtin
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
)
from triton.language.core import _unwrap_if_constexpr

from ..hopper import gl_dtype, require_hopper
from ..scopes import enter, exit

try:  # torch is needed to launch and check, not to read this file
    import torch
except ImportError:  # pragma: no cover
    torch = None

VARIANTS = ("sequential", "pipelined", "ws", "ws_pingpong", "overlap", "fa3")
WARP_SPECIALIZED = ("ws", "ws_pingpong", "fa3")
OVERLAP_VARIANTS = ("overlap", "fa3")
HEAD_DIMS = (64, 128, 256)
SMEM_PER_BLOCK = 227 * 1024  # bytes of shared memory one block may use on Hopper (sm_90)
REGISTERS_PER_SM = 65536
SM90_TARGET = ("cuda", 90, 32)  # GPUTarget(backend, arch, warp size)
LOG2E = 1.4426950408889634


# --------------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Config:
    """Static shape of one launch. ``BN`` and ``BM`` must be powers of two (Gluon tensors are),
    so FA3's 128×176 (d128) and 128×80 (d256) become 128×128 and 128×64 here."""

    variant: str
    head_dim: int
    BM: int  # Q rows per CTA
    BN: int  # K/V rows per block
    consumers: int  # consumer warpgroups (64 rows each)
    stages: int  # ring slots for K and for V
    warp_specialized: bool
    consumer_regs: int = 240  # setmaxnreg target of each consumer warpgroup (ws variants)
    producer_regs: int = 24  # ... and of the producer warp's warpgroup

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

    def smem_bytes(self, elem_bytes: int = 2) -> int:
        q = self.BM * self.head_dim * elem_bytes
        ring = 2 * self.stages * self.BN * self.head_dim * elem_bytes  # K ring + V ring
        barriers = 8 * (4 * self.stages + 1 + self.consumers)
        return q + ring + barriers

    def check(self) -> None:
        if self.BM % (64 * self.consumers) or self.BM // self.consumers != 64:
            raise ValueError(f"{self.variant}: each consumer warpgroup owns 64 rows of Q; "
                             f"BM = {self.BM} with {self.consumers} consumers")
        for name, x in (("BM", self.BM), ("BN", self.BN)):
            if x & (x - 1) and not (name == "BM" and x == 192 and self.warp_specialized):
                raise ValueError(f"{self.variant}: {name} must be a power of two; got {x}")
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


# Tiles per head dim, from FA3's release (shared/reference/hardware.md), rounded to powers of
# two: d64 192x128 with 3 consumers; d128 128x128 (FA3: 128x176 non-causal, 128x128 causal);
# d256 128x64 (FA3: 128x80). setmaxnreg as FA3: 24/240 with 2 consumers, 32/160 with 3.
TILES = {64: (192, 128, 3), 128: (128, 128, 2), 256: (128, 64, 2)}
STAGES_DEFAULT = 2
STAGES_ALLOWED = range(1, 5)


def config(variant: str, head_dim: int, causal: bool = False, stages: int | None = None,
           tile: tuple[int, int] | None = None) -> Config:
    """The launch configuration of ``variant`` at ``head_dim`` (``tile=(BM, BN)`` overrides the
    default for experiments). Raises ValueError for what cannot run."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {', '.join(VARIANTS)}; got {variant!r}")
    if head_dim not in HEAD_DIMS:
        raise ValueError(f"head dim must be one of {HEAD_DIMS}; got {head_dim}")
    BM, BN, consumers = TILES[head_dim]
    if tile is not None:
        BM, BN = (int(x) for x in tile)
        consumers = BM // 64
    if variant == "sequential":
        if stages not in (None, 1):
            raise ValueError(f"sequential: the variant is the one-slot ring (stages 1); got {stages}")
        stages = 1
    # 2 slots for every ring variant. (A 3-slot default for overlap/fa3 was tried after run A1
    # and taken back: run A2 showed the gain A1 gave it was an artefact of the measurement, not
    # of the ring depth; results/lab-notebook.md, Attention, runs A1-A2.)
    stages = STAGES_DEFAULT if stages is None else stages
    stages = int(stages)
    if stages not in STAGES_ALLOWED or (variant != "sequential" and stages < 2):
        lo = 1 if variant == "sequential" else 2
        raise ValueError(f"{variant}: stages must be in {lo}..{STAGES_ALLOWED.stop - 1}; got {stages}")
    ws = variant in WARP_SPECIALIZED
    if not ws and BM == 192 and tile is None:
        # one 12-warp partition would hold a 192-row tensor (not a power of 2): 128 rows
        BM, consumers = 128, 2
    cfg = Config(variant, head_dim, BM, BN, consumers, stages, ws,
                 consumer_regs=240 if consumers == 2 else 160,
                 producer_regs=24 if consumers == 2 else 32)
    cfg.check()
    return cfg


# --------------------------------------------------------------------------------------------
# Input checks (work on CPU tensors too, so CPU tests can check the messages)
# --------------------------------------------------------------------------------------------
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
        if not t.is_contiguous():
            raise ValueError(f"{name} must be contiguous (batch, heads, seq, d) row-major; "
                             f"got stride {t.stride()}")
        if t.data_ptr() % 16:
            raise ValueError(f"{name} must start at a 16-byte aligned address (TMA); "
                             f"got {t.data_ptr():#x}")
    if require_gpu:
        require_hopper({"q": q, "k": k, "v": v})


# --------------------------------------------------------------------------------------------
# Host side: descriptors, launch, CPU compile
# --------------------------------------------------------------------------------------------
def make_descriptors(q, k, v, cfg: Config):
    """TMA descriptors over the 2-D (batch·heads·seq, d) views: Q in boxes of ``q_rows`` rows,
    K and V in blocks of ``BN`` rows. Past the end of the tensor a box reads zeros."""
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    D = q.shape[-1]
    dt = gl_dtype(q.dtype)
    out = []
    for t, rows in ((q, cfg.q_rows), (k, cfg.BN), (v, cfg.BN)):
        blk = [rows, D]
        out.append(TensorDescriptor.from_tensor(t.view(-1, D), blk,
                                                gl.NVMMASharedLayout.get_default_for(blk, dt)))
    return out


def _launch_options(cfg: Config) -> dict:
    opts = {"num_warps": cfg.num_warps}
    if cfg.maxnreg is not None:
        opts["maxnreg"] = cfg.maxnreg
    return opts


def grid(B: int, H: int, S: int, cfg: Config) -> tuple[int, int]:
    return (triton.cdiv(S, cfg.BM), B * H)


def launch(kernel, q, k, v, o, lse, cfg: Config, causal: bool, scale: float,
           profile: bool = False) -> None:
    """``profile``: compile in the Proton scopes (ws variants; ``kernels/scopes.py``)."""
    B, H, S, _ = q.shape
    q_desc, k_desc, v_desc = make_descriptors(q, k, v, cfg)
    extra = {"PROFILE": True} if profile else {}
    kernel[grid(B, H, S, cfg)](q_desc, k_desc, v_desc, o, lse, S, scale * LOG2E,
                               cfg.BM, cfg.stages, cfg.consumers, causal, **extra,
                               **_launch_options(cfg))


def compile_sm90(kernel, cfg: Config, torch_dtype=None, causal: bool = False,
                 profile: bool = False):
    """Compile ``kernel`` for sm_90a (no GPU needed) with the exact constexprs and descriptor
    layouts ``launch`` uses; returns triton's CompiledKernel (``.asm['ptx']``, ``.metadata``)."""
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource
    from triton.runtime.jit import mangle_type

    torch_dtype = torch_dtype or torch.float16
    S = max(cfg.BM, cfg.BN)
    q, k, v = (torch.empty(1, 1, S, cfg.head_dim, dtype=torch_dtype) for _ in range(3))
    descs = make_descriptors(q, k, v, cfg)
    names = kernel.arg_names
    ptr = "*fp16" if torch_dtype == torch.float16 else "*bf16"
    signature = {names[0]: mangle_type(descs[0]), names[1]: mangle_type(descs[1]),
                 names[2]: mangle_type(descs[2]), names[3]: ptr, names[4]: "*fp32",
                 names[5]: "i32", names[6]: "fp32"}
    constexprs = {names[7]: cfg.BM, names[8]: cfg.stages, names[9]: cfg.consumers,
                  names[10]: causal, "num_warps": cfg.num_warps}
    if "PROFILE" in names:
        constexprs["PROFILE"] = profile
    for n in names[7:]:
        signature[n] = "constexpr"
    # as the launcher specializes them: torch's allocations are 16-byte aligned
    aligned = {(i,): [["tt.divisibility", 16]] for i in (3, 4)}
    src = GluonASTSource(kernel, signature, constexprs, aligned)
    return triton.compile(src, target=GPUTarget(*SM90_TARGET), options=_launch_options(cfg))


# --------------------------------------------------------------------------------------------
# Device side: the steps (compare sim/attention/cta.py)
# --------------------------------------------------------------------------------------------
@gluon.constexpr_function
def mma_layout(N, num_warps):
    """wgmma accumulator layout: warps stack along M (a warpgroup covers 64 rows), one
    instruction covers all N columns (m64nNk16)."""
    return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                     instr_shape=[16, N, 16])


@gluon.constexpr_function
def p_layout(D, num_warps):
    """P as the A operand of P·V, from registers (wgmma RS): a dot operand of O's layout."""
    return gl.DotOperandLayout(operand_index=0, parent=mma_layout(D, num_warps), k_width=2)


@gluon.jit
def tile_position(seqlen, BM: gl.constexpr, CAUSAL: gl.constexpr):
    """(first row of this (batch, head) in the 2-D view, first Q row of this CTA within the
    sequence). Causal: the longest rows (last Q tiles) are launched first."""
    bh = gl.program_id(1)
    pid_m = gl.program_id(0)
    if CAUSAL:
        pid_m = gl.num_programs(0) - 1 - pid_m
    return bh * seqlen, pid_m * BM


@gluon.jit
def num_blocks(m0, seqlen, BM: gl.constexpr, BN: gl.constexpr, CAUSAL: gl.constexpr):
    """K/V blocks this CTA visits: all of them, or (causal) those left of its last row."""
    if CAUSAL:
        return gl.cdiv(gl.minimum(seqlen, m0 + BM), BN)
    else:
        return gl.cdiv(seqlen, BN)


@gluon.jit
def load_q(q_desc, q_smem, q_full, row0, m0, PARTS: gl.constexpr):
    """TMA the CTA's Q rows (``PARTS`` boxes, one per consumer in the ws variants) -> q_full."""
    ROWS: gl.constexpr = q_desc.block_type.shape[0]
    mbarrier.expect(q_full, PARTS * q_desc.block_type.nbytes)
    for w in gl.static_range(PARTS):
        tma.async_copy_global_to_shared(q_desc, [row0 + m0 + w * ROWS, 0], q_full, q_smem.index(w))


@gluon.jit
def load_block(desc, ring, full, j, row0, STAGES: gl.constexpr, pred=True):
    """expect_tx on full[slot], then TMA block j into its slot (the caller saw the slot free)."""
    BN: gl.constexpr = desc.block_type.shape[0]
    s = j % STAGES
    mbarrier.expect(full.index(s), desc.block_type.nbytes, pred=pred)
    tma.async_copy_global_to_shared(desc, [row0 + j * BN, 0], full.index(s), ring.index(s), pred=pred)


@gluon.jit
def produce(desc, ring, full, empty, j, row0, STAGES: gl.constexpr, PROFILE: gl.constexpr = False):
    """Producer side: wait until block j's slot is free (first lap passes), then load it."""
    s = j % STAGES
    enter("wait slot", PROFILE)
    mbarrier.wait(empty.index(s), ((j // STAGES) & 1) ^ 1)
    exit("wait slot", PROFILE)
    enter("TMA issue", PROFILE)
    load_block(desc, ring, full, j, row0, STAGES)
    exit("TMA issue", PROFILE)


@gluon.jit
def acquire(full, j, STAGES: gl.constexpr):
    """Consumer side: wait until block j has landed in its slot; returns the slot."""
    s = j % STAGES
    mbarrier.wait(full.index(s), (j // STAGES) & 1)
    return s


@gluon.jit
def wait_turn(turn, k, WG: gl.constexpr):
    """The k-th wait of consumer WG for its turn on the tensor cores. Consumer 0 goes first: its
    first wait falls through (a fresh barrier's previous phase counts as complete); every
    other wait needs the previous consumer's hand-over."""
    if WG == 0:
        mbarrier.wait(turn.index(0), (k & 1) ^ 1)
    else:
        mbarrier.wait(turn.index(WG), k & 1)


@gluon.jit
def pass_turn(turn, WG: gl.constexpr, CONSUMERS: gl.constexpr):
    mbarrier.arrive(turn.index((WG + 1) % CONSUMERS))


@gluon.jit
def init_state(M: gl.constexpr, D: gl.constexpr, BN: gl.constexpr, num_warps: gl.constexpr):
    """Running row max (base 2, finite so a fully masked block cannot make NaN), row sum, O."""
    s_l: gl.constexpr = mma_layout(BN, num_warps)
    m_i = gl.full([M], -1.0e30, gl.float32, gl.SliceLayout(1, s_l))
    l_i = gl.full([M], 0.0, gl.float32, gl.SliceLayout(1, s_l))
    acc = gl.zeros([M, D], gl.float32, mma_layout(D, num_warps))
    return m_i, l_i, acc


@gluon.jit
def qk(q, k_slot, num_warps: gl.constexpr, is_async: gl.constexpr = False):
    """S = Q·K_jᵀ (SS wgmma: both operands in shared memory)."""
    M: gl.constexpr = q.type.shape[0]
    BN: gl.constexpr = k_slot.type.shape[0]
    zero = gl.zeros([M, BN], gl.float32, mma_layout(BN, num_warps))
    return warpgroup_mma(q, k_slot.permute((1, 0)), zero, use_acc=False, is_async=is_async)


@gluon.jit
def pv(p, v_slot, acc, is_async: gl.constexpr = False):
    """O += P_j·V_j (RS wgmma: P from registers)."""
    return warpgroup_mma(p, v_slot, acc, is_async=is_async)


@gluon.jit
def softmax(s, m_i, l_i, j, m0, rows, seqlen, qk_scale, BN: gl.constexpr, CAUSAL: gl.constexpr):
    """Online softmax of block j: mask (only blocks that reach past the sequence's end or, causal,
    the diagonal), new row max, P = exp2(S·qk_scale − m), the rescale factor, the row sum.
    Returns (P in fp32, alpha, m, l)."""
    s_l: gl.constexpr = s.type.layout
    cols = j * BN + gl.arange(0, BN, gl.SliceLayout(0, s_l))
    last_col = j * BN + BN - 1
    needs_mask = last_col >= seqlen
    if CAUSAL:
        needs_mask = needs_mask | (last_col > m0)  # m0: this warpgroup's first row
    if needs_mask:
        col = gl.expand_dims(cols, 0)
        if CAUSAL:
            valid = (col < seqlen) & (col <= gl.expand_dims(rows, 1))
        else:
            valid = col < seqlen
        s = gl.where(valid, s, -float("inf"))
    m_new = gl.maximum(m_i, gl.max(s, 1) * qk_scale)
    p = gl.exp2(s * qk_scale - gl.expand_dims(m_new, 1))
    alpha = gl.exp2(m_i - m_new)
    l_i = l_i * alpha + gl.sum(p, 1)
    return p, alpha, m_new, l_i


@gluon.jit
def schedule_fence(ptr, seqlen):
    """Keep ptxas from moving code across this point (a no-op otherwise).

    ptxas does not reorder instructions across a read of ``%clock`` whose value is used; the
    value goes to a store predicated on ``seqlen < 0``, which never runs (the launch rejects empty
    sequences) but keeps the read alive. The overlapped kernels need it before
    ``warpgroup_mma_wait(0)``: without it ptxas hoists that wait above the softmax (to pack P_j
    into the registers P_{j-1}·V_{j-1} is still reading), and the softmax no longer runs under
    its own P·V — see results/lab-notebook.md, "ptxas hoists the wait"."""
    gl.inline_asm_elementwise(
        "{ .reg .u32 t; .reg .pred q; mov.u32 t, %clock; setp.lt.s32 q, $2, 0; "
        "@q st.global.b32 [$1], t; mov.b32 $0, 0; }",
        "=r,l,r", [ptr.to(gl.int64), seqlen], dtype=gl.int32, is_pure=False, pack=1)


@gluon.jit
def to_operand(p, dtype: gl.constexpr, D: gl.constexpr, num_warps: gl.constexpr):
    """P (fp32, accumulator layout) -> input dtype, as the register A operand of P·V."""
    return gl.convert_layout(p.to(dtype), p_layout(D, num_warps))


@gluon.jit
def rescale(acc, alpha):
    """O *= exp2(m_old − m_new), row by row."""
    a = gl.convert_layout(alpha, gl.SliceLayout(1, acc.type.layout))
    return acc * gl.expand_dims(a, 1)


@gluon.jit
def q_rows(m0, M: gl.constexpr, BN: gl.constexpr, num_warps: gl.constexpr):
    """This warpgroup's row indices within the sequence, in the score layout."""
    return m0 + gl.arange(0, M, gl.SliceLayout(1, mma_layout(BN, num_warps)))


@gluon.constexpr_function
def out_layout(D, num_warps):
    """O as the epilogue stores it: 8 elements (16 bytes) a thread along a row, a warp's threads
    across whole rows, so one store instruction writes full 128-byte lines."""
    cols = min(32, D // 8)
    return gl.BlockedLayout([1, 8], [32 // cols, cols], [num_warps, 1], [1, 0])


@gluon.jit
def epilogue(acc, m_i, l_i, o_ptr, lse_ptr, row0, m0, seqlen, q, num_warps: gl.constexpr):
    """O /= l and LSE = (m + log2 l)·ln 2; masked stores of this warpgroup's rows (rows past the
    sequence's end belong to the next head and are not written).

    O goes out through ``q``, this warpgroup's Q tile in shared memory — dead once its last
    Q·Kᵀ is done, and exactly O's size: written in the accumulator's layout, read back 16 bytes a
    thread along a row, stored a row per 8-32 threads. Stored straight from the accumulator's
    layout, each thread writes 4 bytes of 8 rows an instruction: run G2 traced that epilogue at
    2.3 K clk a warpgroup at d 128 and 7.7 K at d 256, a quarter of a CTA's time at S 1K."""
    o_l: gl.constexpr = acc.type.layout
    M: gl.constexpr = acc.type.shape[0]
    D: gl.constexpr = acc.type.shape[1]
    l_o = gl.convert_layout(l_i, gl.SliceLayout(1, o_l))
    q.store((acc / gl.expand_dims(l_o, 1)).to(o_ptr.dtype.element_ty))
    gl.thread_barrier()  # every warp's rows are in before any warp reads another's
    lay: gl.constexpr = out_layout(D, num_warps)
    o = q.load(lay)
    rows = m0 + gl.arange(0, M, gl.SliceLayout(1, lay))
    cols = gl.arange(0, D, gl.SliceLayout(0, lay))
    flat = (row0 + rows).to(gl.int64)
    ptrs = o_ptr + gl.expand_dims(flat * D, 1) + gl.expand_dims(cols, 0)
    gl.store(ptrs, o, mask=gl.expand_dims(rows < seqlen, 1))
    lse = (m_i + gl.log2(l_i)) * 0.6931471805599453
    lse_rows = m0 + gl.arange(0, M, l_i.type.layout)
    gl.store(lse_ptr + (row0 + lse_rows).to(gl.int64), lse, mask=lse_rows < seqlen)


def flops(B: int, H: int, S: int, D: int, causal: bool) -> float:
    """4·B·H·S²·d, halved for causal (FA3's count)."""
    f = 4.0 * B * H * S * S * D
    return f / 2 if causal else f


def default_scale(D: int) -> float:
    return 1.0 / math.sqrt(D)


# --------------------------------------------------------------------------------------------
# Device side: the CTA's shared memory, and the warp-specialized region
# --------------------------------------------------------------------------------------------
@gluon.jit
def allocate(q_desc, k_desc, v_desc, STAGES: gl.constexpr, PARTS: gl.constexpr,
             CONSUMERS: gl.constexpr, WS: gl.constexpr, TURNS: gl.constexpr):
    """Q (``PARTS`` boxes), the K and V rings with their ``full`` mbarriers, and where a producer
    refills the rings their ``empty`` mbarriers (one arrive per consumer warpgroup); ``turn``
    mbarriers (count 1) where consumers take turns on the tensor cores."""
    q_smem = gl.allocate_shared_memory(q_desc.dtype, [PARTS] + q_desc.block_type.shape, q_desc.layout)
    k_ring = gl.allocate_shared_memory(k_desc.dtype, [STAGES] + k_desc.block_type.shape, k_desc.layout)
    v_ring = gl.allocate_shared_memory(v_desc.dtype, [STAGES] + v_desc.block_type.shape, v_desc.layout)
    q_full = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    k_full = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_full = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    k_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    turn = gl.allocate_shared_memory(gl.int64, [CONSUMERS, 1], mbarrier.MBarrierLayout())
    mbarrier.init(q_full, count=1)
    for s in gl.static_range(STAGES):
        mbarrier.init(k_full.index(s), count=1)  # the expect-tx arrive
        mbarrier.init(v_full.index(s), count=1)
        if WS:
            mbarrier.init(k_empty.index(s), count=CONSUMERS)  # one arrive per consumer
            mbarrier.init(v_empty.index(s), count=CONSUMERS)
    if TURNS:
        for w in gl.static_range(CONSUMERS):
            mbarrier.init(turn.index(w), count=1)
    fence_async_shared()  # the initialised barriers are visible to the TMA unit (async proxy)
    return q_smem, k_ring, v_ring, q_full, k_full, v_full, k_empty, v_empty, turn


@gluon.constexpr_function
def consumer_regs(consumers):
    """setmaxnreg of a consumer warpgroup: FA3's 240 with 2 consumers, 160 with 3."""
    return 240 if consumers == 2 else 160


@gluon.constexpr_function
def producer_regs(consumers):
    return 24 if consumers == 2 else 32


@_builtin
def warp_specialize(functions_and_args, worker_num_warps, worker_num_regs, _semantic=None,
                    _generator=None):
    """``gl.warp_specialize`` for partition functions handed in as arguments: inside a jit
    function those arrive boxed as constexprs, which gl.warp_specialize does not unbox."""
    fns = [(_unwrap_if_constexpr(fn), args) for fn, args in functions_and_args]
    return gl.warp_specialize(fns, worker_num_warps, worker_num_regs, _semantic=_semantic,
                              _generator=_generator)


@gluon.jit
def warp_specialized(consumer: gl.constexpr, producer: gl.constexpr, q_desc, k_desc, v_desc,
                     o_ptr, lse_ptr, seqlen, qk_scale, BM: gl.constexpr, STAGES: gl.constexpr,
                     CONSUMERS: gl.constexpr, CAUSAL: gl.constexpr, TURNS: gl.constexpr,
                     PROFILE: gl.constexpr = False):
    """The ws region: consumer 0 is the default partition (the kernel's 4 warps), consumers
    1.. are 4-warp workers with ``consumer_regs`` registers, the producer a 1-warp worker with
    ``producer_regs`` (``worker_num_regs`` -> setmaxnreg)."""
    q_smem, k_ring, v_ring, q_full, k_full, v_full, k_empty, v_empty, turn = allocate(
        q_desc, k_desc, v_desc, STAGES, CONSUMERS, CONSUMERS, True, TURNS)
    CR: gl.constexpr = consumer_regs(CONSUMERS)
    PR: gl.constexpr = producer_regs(CONSUMERS)
    # (the argument tuples are spelled out: a tuple built with + loses its constexprs)
    if CONSUMERS == 2:
        warp_specialize([
            (consumer, (q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM, STAGES,
                        CONSUMERS, CAUSAL, q_smem, k_ring, v_ring, q_full, k_full, v_full,
                        k_empty, v_empty, turn, 0, TURNS, 0, 4, PROFILE)),
            (consumer, (q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM, STAGES,
                        CONSUMERS, CAUSAL, q_smem, k_ring, v_ring, q_full, k_full, v_full,
                        k_empty, v_empty, turn, 1, TURNS, 0, 4, PROFILE)),
            (producer, (q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM, STAGES,
                        CONSUMERS, CAUSAL, q_smem, k_ring, v_ring, q_full, k_full, v_full,
                        k_empty, v_empty, turn, PROFILE)),
        ], [4, 1], [CR, PR])
    else:
        gl.static_assert(CONSUMERS == 3, "1 producer + 2 or 3 consumer warpgroups")
        warp_specialize([
            (consumer, (q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM, STAGES,
                        CONSUMERS, CAUSAL, q_smem, k_ring, v_ring, q_full, k_full, v_full,
                        k_empty, v_empty, turn, 0, TURNS, 0, 4, PROFILE)),
            (consumer, (q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM, STAGES,
                        CONSUMERS, CAUSAL, q_smem, k_ring, v_ring, q_full, k_full, v_full,
                        k_empty, v_empty, turn, 1, TURNS, 0, 4, PROFILE)),
            (consumer, (q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM, STAGES,
                        CONSUMERS, CAUSAL, q_smem, k_ring, v_ring, q_full, k_full, v_full,
                        k_empty, v_empty, turn, 2, TURNS, 0, 4, PROFILE)),
            (producer, (q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM, STAGES,
                        CONSUMERS, CAUSAL, q_smem, k_ring, v_ring, q_full, k_full, v_full,
                        k_empty, v_empty, turn, PROFILE)),
        ], [4, 4, 1], [CR, CR, PR])


@gluon.jit
def producer(q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM: gl.constexpr,
             STAGES: gl.constexpr, CONSUMERS: gl.constexpr, CAUSAL: gl.constexpr,
             q_smem, k_ring, v_ring, q_full, k_full, v_full, k_empty, v_empty, turn,
             PROFILE: gl.constexpr = False):
    """The producer warp (FA3 alg. 1; ``sim/attention/ws.py``): Q once, then for each block
    wait for a free K slot and TMA K_j, wait for a free V slot and TMA V_j."""
    BN: gl.constexpr = k_desc.block_type.shape[0]
    row0, m0 = tile_position(seqlen, BM, CAUSAL)
    load_q(q_desc, q_smem, q_full, row0, m0, CONSUMERS)
    for j in range(num_blocks(m0, seqlen, BM, BN, CAUSAL)):
        produce(k_desc, k_ring, k_full, k_empty, j, row0, STAGES, PROFILE)  # wait k.empty, TMA K_j
        produce(v_desc, v_ring, v_full, v_empty, j, row0, STAGES, PROFILE)  # wait v.empty, TMA V_j


@gluon.jit
def single_partition(consumer: gl.constexpr, q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen,
                     qk_scale, BM: gl.constexpr, STAGES: gl.constexpr, CONSUMERS: gl.constexpr,
                     CAUSAL: gl.constexpr, REFILL: gl.constexpr, num_warps: gl.constexpr,
                     PROFILE: gl.constexpr = False):
    """No role split: all consumer warpgroups are one partition (the kernel's warps) and issue
    the TMA in-line (``REFILL``: 1 = each ring slot as soon as its GEMM is done, 2 = the next
    block only after the whole block is done)."""
    q_smem, k_ring, v_ring, q_full, k_full, v_full, k_empty, v_empty, turn = allocate(
        q_desc, k_desc, v_desc, STAGES, 1, CONSUMERS, False, False)
    consumer(q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM, STAGES, CONSUMERS,
             CAUSAL, q_smem, k_ring, v_ring, q_full, k_full, v_full, k_empty, v_empty, turn,
             0, False, REFILL, num_warps, PROFILE)
