"""Pieces every GEMM variant shares: input checks, TMA descriptors, the tile scheduler, the
wgmma register layout, the epilogue, the launcher and a CPU-only compile helper.

Vocabulary (the same as in ``sim/``):

* a *tile* is one ``BM x BN`` block of C; a *k-step* is one ``BM x BK`` slice of A times one
  ``BK x BN`` slice of B;
* the *ring* is ``STAGES`` shared-memory slots for (A, B) k-step pairs, each with a ``full``
  mbarrier (the TMA unit arrives on it with the bytes it copied) and, where another role refills
  the slot, an ``empty`` mbarrier (the consumer arrives on it when its wgmma has read the slot);
* slot ``s = it % STAGES`` of ring position ``it`` is in its ``it // STAGES``-th use, so its
  barrier's phase parity is ``(it // STAGES) & 1``.
"""
from __future__ import annotations

from dataclasses import dataclass

import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, tma

from .. import plans
from ..hopper import TMA_RULE, check_tma, require_hopper, smem_layout, tma_strides

try:  # torch is needed to launch, not to read this file
    import torch
except ImportError:  # pragma: no cover
    torch = None

VARIANTS = ("sequential", "pipelined", "ws", "ws_pingpong")
SMEM_PER_BLOCK = 227 * 1024  # bytes of shared memory one block may use on Hopper (sm_90)
SM90_TARGET = ("cuda", 90, 32)  # GPUTarget(backend, arch, warp size)


# --------------------------------------------------------------------------------------------
# Configuration: one per variant, chosen in the variant's module
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Config:
    """Static shape of one launch."""

    BM: int  # rows of C per output tile
    BN: int  # columns of C per output tile
    BK: int  # k-step depth
    stages: int  # ring slots
    num_warps: int  # warps of the kernel's default partition (the consumers)
    persistent: bool  # one CTA per SM looping over tiles, or one CTA per tile
    maxnreg: int | None = None  # register cap at entry (setmaxnreg needs one)
    group_m: int = 8  # tile-order grouping for L2 reuse (see tile_coords)
    c_tiles: int = 1  # epilogue staging buffers (pingpong: one per consumer)
    smem_c_separate: bool = True  # False: the epilogue reuses the ring's memory
    box_m: int | None = None  # rows of one A / C TMA box and of one accumulator (None: BM)

    @property
    def row_blocks(self) -> int:
        """A tile is ``row_blocks`` boxes of ``box_m`` rows: one TMA load of A and one
        accumulator each (pingpong: 3 x 64 rows, since 192 is no power of two)."""
        return self.BM // (self.box_m or self.BM)

    def smem_bytes(self, elem_bytes: int = 2) -> int:
        ring = self.stages * (self.BM * self.BK + self.BK * self.BN) * elem_bytes
        c_box = (self.box_m or self.BM) * self.BN * elem_bytes  # the epilogue goes box by box
        c = self.c_tiles * c_box if self.smem_c_separate else 0
        barriers = 8 * (2 * self.stages + 2)
        return ring + c + barriers

    def check(self, variant: str, stages_allowed: range) -> None:
        if self.stages not in stages_allowed:
            raise ValueError(
                f"{variant}: stages must be in {stages_allowed.start}..{stages_allowed.stop - 1}, "
                f"got {self.stages}")
        need = self.smem_bytes()
        if need > SMEM_PER_BLOCK:
            raise ValueError(
                f"{variant}: ring of {self.stages} stages x "
                f"{(self.BM * self.BK + self.BK * self.BN) * 2 // 1024} KiB"
                + (f" + {self.c_tiles} epilogue tile(s) of "
                   f"{(self.box_m or self.BM) * self.BN * 2 // 1024} KiB"
                   if self.smem_c_separate else "")
                + f" = {need / 1024:.0f} KiB > 227 KiB shared memory per block")


ACC_REGS_MAX = 192  # fp32 accumulator registers a consumer thread may hold (of its 240)


def retile(cfg: Config, tile) -> Config:
    """``cfg`` with another (BM, BN, BK): powers of two (TMA boxes here must be) except BM of a
    row-blocked tile, a multiple of its ``box_m``; BN <= 256 (one wgmma), BM at least 64 per
    warpgroup, BK at least 16, and an accumulator of at most ACC_REGS_MAX registers a thread."""
    from dataclasses import replace

    BM, BN, BK = (int(x) for x in tile)
    wgs = cfg.num_warps // 4
    pow2 = all(x > 0 and x & (x - 1) == 0 for x in ((cfg.box_m or BM), BN, BK))
    rows_ok = BM % cfg.box_m == 0 if cfg.box_m else True
    if not (pow2 and rows_ok) or not 8 <= BN <= 256 or BK < 16 or BM < 64 * wgs:
        rows = f"BM a multiple of {cfg.box_m}" if cfg.box_m else "BM a power of two"
        raise ValueError(f"tile must have {rows} and BN, BK powers of two, with BM >= {64 * wgs}, "
                         f"8 <= BN <= 256 and BK >= 16; got {tuple(tile)}")
    acc_regs = BM * BN // (32 * cfg.num_warps)
    if acc_regs > ACC_REGS_MAX:
        raise ValueError(f"tile {BM}x{BN} needs {acc_regs} accumulator registers a thread > "
                         f"{ACC_REGS_MAX} (a consumer has 240, with room for addresses)")
    return replace(cfg, BM=BM, BN=BN, BK=BK)


GROUP_M_ALLOWED = range(1, 65)


def regroup(cfg: Config, group_m: int) -> Config:
    """``cfg`` with another L2 group (row blocks that walk the columns together, 1..64)."""
    from dataclasses import replace

    group_m = int(group_m)
    if group_m not in GROUP_M_ALLOWED:
        raise ValueError(f"group_m must be in 1..64; got {group_m}")
    return replace(cfg, group_m=group_m)


# --------------------------------------------------------------------------------------------
# Input checks (work on CPU tensors too, so CPU tests can check the messages)
# --------------------------------------------------------------------------------------------
def check_inputs(a, b, variant: str, require_gpu: bool = True) -> None:
    """Raise TypeError/ValueError naming the expected form unless ``a @ b`` can run here."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {', '.join(VARIANTS)}; got {variant!r}")
    if torch is None or not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        raise TypeError("a and b must be torch.Tensors (2-D, fp16 or bf16, on a CUDA sm_90 GPU)")
    ok = (torch.float16, torch.bfloat16)
    if a.dtype not in ok or b.dtype not in ok:
        raise TypeError(f"a and b must be torch.float16 or torch.bfloat16; got {a.dtype} and {b.dtype}")
    if a.dtype != b.dtype:
        raise TypeError(f"a and b must have the same dtype; got {a.dtype} and {b.dtype}")
    if a.dim() != 2 or b.dim() != 2:
        raise ValueError(f"a and b must be 2-D (M x K and K x N); got shapes {tuple(a.shape)} and {tuple(b.shape)}")
    (M, K), (K2, N) = a.shape, b.shape
    if K != K2:
        raise ValueError(f"inner dimensions must match: a is {M} x {K}, b is {K2} x {N} (expected b to be {K} x N)")
    for name, n in (("M", M), ("N", N), ("K", K)):
        if n <= 0 or n % 8:
            raise ValueError(f"M, N and K must be positive multiples of 8 (16-byte TMA rows); got {name} = {n}")
    try:
        check_tma("a", a)  # row-major, any 16-byte aligned row stride
    except ValueError as e:
        if tma_strides(a)[-1] == 1:  # the alignment's message says it all
            raise
        raise ValueError(f"a must be M x K row-major (there is no build for A stored "
                         f"transposed) with {TMA_RULE}; got stride {a.stride()}") from e
    if b_transposed(b):
        check_tma("b.t()", b.t())
    else:
        try:
            check_tma("b", b)
        except ValueError:
            raise ValueError(f"b must be K x N row-major or stored transposed (an N x K row-major "
                             f"weight w handed in as w.t()), either with {TMA_RULE}; got stride "
                             f"{b.stride()}") from None
    if require_gpu:
        require_hopper({"a": a, "b": b})


def b_transposed(b) -> bool:
    """Whether ``b`` is stored transposed: its columns, not its rows, are contiguous (the
    ``w.t()`` of an N x K row-major weight ``w``)."""
    return tma_strides(b)[0] == 1


# --------------------------------------------------------------------------------------------
# Host side: descriptors and launch
# --------------------------------------------------------------------------------------------
def make_descriptors(a, b, c, cfg: Config):
    """TMA descriptors for A (box_m x BK boxes), B (BK x BN) and C (box_m x BN); box_m is BM
    unless the tile is cut into row blocks. Out-of-bounds parts of a box read as zeros and are
    not written: that is how ragged M, N, K are handled. Each over its tensor as it lies (any
    row stride), B stored transposed over the weight ``b.t()`` in BN x BK boxes: no copies."""
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    rows = cfg.box_m or cfg.BM
    if b_transposed(b):
        b, b_blk = b.t(), (cfg.BN, cfg.BK)
    else:
        b_blk = (cfg.BK, cfg.BN)
    blocks = ((rows, cfg.BK), b_blk, (rows, cfg.BN))
    return tuple(
        TensorDescriptor(t, list(t.shape), list(tma_strides(t)), list(blk),
                         smem_layout(blk, a.dtype))
        for t, blk in zip((a, b, c), blocks))


def num_tiles(M: int, N: int, cfg: Config) -> int:
    return triton.cdiv(M, cfg.BM) * triton.cdiv(N, cfg.BN)


_SM_COUNT: dict = {}


def grid(M: int, N: int, cfg: Config, device) -> tuple[int]:
    tiles = num_tiles(M, N, cfg)
    if not cfg.persistent:
        return (tiles,)
    key = str(device)
    if key not in _SM_COUNT:
        _SM_COUNT[key] = torch.cuda.get_device_properties(device).multi_processor_count
    return (min(tiles, _SM_COUNT[key]),)


def launch(kernel, a, b, c, cfg: Config, profile: bool = False):
    """``profile``: compile in the Proton scopes (ws variants; ``kernels/scopes.py``). Returns the
    launch's plan (``kernels/plans.py``; ``relaunch``)."""
    M, N = c.shape
    descs = make_descriptors(a, b, c, cfg)
    kwargs = {"num_warps": cfg.num_warps}
    if profile:
        kwargs["PROFILE"] = True
    if cfg.maxnreg is not None:
        kwargs["maxnreg"] = cfg.maxnreg
    if "ROW_BLOCKS" in kernel.arg_names:
        kwargs["ROW_BLOCKS"] = cfg.row_blocks
    if b_transposed(b):  # passed only when on: the default build is the kernel's default
        kwargs["B_TRANSPOSED"] = True
    g = grid(M, N, cfg, a.device)
    args = (*descs, cfg.stages, cfg.group_m)
    compiled = kernel[g](*args, **kwargs)
    return plans.make_plan(kernel, compiled, g, args, kwargs, PER_CALL, cfg)


PER_CALL = ("a_desc", "b_desc", "c_desc")  # a call's own values


def relaunch(plan: plans.Plan, a, b, c) -> None:
    """``launch`` again by its plan, on tensors with the key's shapes, strides, dtype and device:
    only their descriptors are made anew."""
    plan.run(*make_descriptors(a, b, c, plan.config))


# --------------------------------------------------------------------------------------------
# CPU-only compile (no GPU needed): what the CPU tests read the PTX of
# --------------------------------------------------------------------------------------------
def compile_sm90(kernel, cfg: Config, torch_dtype=None, profile: bool = False,
                 b_transposed: bool = False):
    """Compile ``kernel`` for sm_90a with the exact constexprs and descriptor layouts ``launch``
    would use, and return triton's CompiledKernel (``.asm['ptx']``, ``.metadata``).
    ``b_transposed``: the build for B stored transposed (an N x K weight handed in as ``w.t()``)."""
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource
    from triton.runtime.jit import mangle_type

    torch_dtype = torch_dtype or torch.float16
    K = max(cfg.BK, 64)
    a = torch.empty(cfg.BM, K, dtype=torch_dtype)
    b = torch.empty(cfg.BN, K, dtype=torch_dtype).t() if b_transposed else \
        torch.empty(K, cfg.BN, dtype=torch_dtype)
    c = torch.empty(cfg.BM, cfg.BN, dtype=torch_dtype)
    descs = make_descriptors(a, b, c, cfg)
    names = kernel.arg_names
    signature = {n: mangle_type(d) for n, d in zip(names[:3], descs)}
    constexprs = {names[3]: cfg.stages, names[4]: cfg.group_m, "num_warps": cfg.num_warps}
    if "PROFILE" in names:
        constexprs["PROFILE"] = profile
    if "ROW_BLOCKS" in names:
        constexprs["ROW_BLOCKS"] = cfg.row_blocks
    if b_transposed:
        constexprs["B_TRANSPOSED"] = True
    for n in names[3:]:
        signature[n] = "constexpr"
    src = GluonASTSource(kernel, signature, constexprs)
    options = {"num_warps": cfg.num_warps}
    if cfg.maxnreg is not None:
        options["maxnreg"] = cfg.maxnreg
    return triton.compile(src, target=GPUTarget(*SM90_TARGET), options=options)


# --------------------------------------------------------------------------------------------
# Device side
# --------------------------------------------------------------------------------------------
@gluon.constexpr_function
def wgmma_layout(BN, num_warps):
    """Accumulator layout of one wgmma: warps stack along M (a warpgroup covers 64 rows, four
    warps of 16), one instruction covers all BN columns (m64nBNk16)."""
    return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                     instr_shape=[16, BN, 16])


# B stored transposed (``B_TRANSPOSED``, the kernels' constexpr): an (N, K) row-major weight handed
# in as ``w.t()``. Its descriptor is over ``w`` itself (boxes of BN x BK), a slot holds the box as
# TMA writes it, and wgmma reads the slot through a permuted view (``b_operand``): B K-major,
# wgmma's transpose bit, as attention's Q·Kᵀ reads K. No copy of the weight is ever made.
@gluon.constexpr_function
def b_box(BK, BN, B_TRANSPOSED):
    """Shape of one B box (and slot): BK x BN, or BN x BK stored transposed."""
    return [BN, BK] if B_TRANSPOSED else [BK, BN]


@gluon.constexpr_function
def box_n(b_desc, B_TRANSPOSED):
    """BN, the columns of one B box."""
    return b_desc.block_type.shape[0 if B_TRANSPOSED else 1]


@gluon.jit
def b_cols(b_desc, B_TRANSPOSED: gl.constexpr):
    """N, the columns of B (rows of the weight it is the transpose of)."""
    if B_TRANSPOSED:
        return b_desc.shape[0]
    else:
        return b_desc.shape[1]


@gluon.jit
def load_b(b_desc, k, off_n, bar, slot, B_TRANSPOSED: gl.constexpr, pred=True):
    """TMA B's k-step at row ``k``, columns from ``off_n``, into ``slot``; completes on ``bar``."""
    if B_TRANSPOSED:
        tma.async_copy_global_to_shared(b_desc, [off_n, k], bar, slot, pred=pred)
    else:
        tma.async_copy_global_to_shared(b_desc, [k, off_n], bar, slot, pred=pred)


@gluon.jit
def b_operand(slot, B_TRANSPOSED: gl.constexpr):
    """The BK x BN operand wgmma reads from ``slot``."""
    if B_TRANSPOSED:
        return slot.permute((1, 0))
    else:
        return slot


@gluon.jit
def tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M: gl.constexpr):
    """Tile scheduler: the tile_id-th output tile in grouped order. GROUP_M consecutive row
    blocks walk the columns together, so the B columns they share stay in L2."""
    in_group = GROUP_M * num_pid_n
    first_m = (tile_id // in_group) * GROUP_M
    group_rows = gl.minimum(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (tile_id % in_group) % group_rows
    pid_n = (tile_id % in_group) // group_rows
    return pid_m, pid_n


@gluon.jit
def epilogue(c_desc, c_smem, acc, off_m, off_n):
    """The epilogue: fp32 accumulator -> input dtype -> shared memory -> TMA store (clipped at the
    edges of C). The previous store from ``c_smem`` must have finished reading it first."""
    tma.store_wait(0)
    gl.thread_barrier()  # the thread that issued the last store has seen it drain
    c_smem.store(acc.to(c_desc.dtype))
    fence_async_shared()  # generic-proxy writes -> visible to the TMA (async proxy)
    gl.thread_barrier()  # every warp's part is written before one thread issues the copy
    tma.async_copy_shared_to_global(c_desc, [off_m, off_n], c_smem)

