"""``pipelined``: an s-stage TMA ring, filled by the same warps that run the wgmmas.

No role split: the compute warps fill the ring before the loop, then issue the TMA for k-step
``i - 1 + STAGES`` right after the wgmma of k-step ``i - 1`` has drained, so ``STAGES - 1``
loads are in flight under the tensor-core work. One ``full`` mbarrier per slot; no ``empty``
barrier is needed because the warps that free a slot are the ones that refill it (a thread
barrier orders the two, and where no k-step is left to refill the slot, neither is paid). The
steps are ``sim/gemm/pipelined.py``'s (its ``release`` is the thread barrier and the refill)::

    prologue: TMA k-steps 0 .. STAGES-1 into slots 0 .. STAGES-1
    for i in k-steps:
        acquire(ab, i): wait full[i % STAGES]
        mma: wgmma slot i % STAGES (async)      # tensor cores busy
        wait_mma: wgmma_wait(1)                  # k-step i-1 done: its slot is free
        release(ab, i - 1): thread barrier,      # every warp is done with it, then
            TMA k-step i-1+STAGES -> that slot   # the copy engine busy under wgmma i
    wait_mma: wgmma_wait(0); epilogue

Same 128 x 256 tile over two consumer warpgroups as ``sequential`` and ``ws``.
"""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma
from triton.language.core import _aggregate as aggregate

from ..ring import acquire
from .common import Config, b_box, b_cols, load_b, tile_coords
from .tile import Tile

STAGES_ALLOWED = range(2, 5)


def config(stages=None, persistent=None) -> Config:
    if persistent:
        raise ValueError("pipelined: persistent=True is not offered (one CTA per tile)")
    cfg = Config(BM=128, BN=256, BK=64, stages=3 if stages is None else stages, num_warps=8,
                 persistent=False, smem_c_separate=False)
    cfg.check("pipelined", STAGES_ALLOWED)
    return cfg


@aggregate
class InlineRing:
    """The (A, B) ring of one tile with no producer: ``slots`` (B's), ``a`` (A's), ``full``; the
    consumer warps ``load`` a k-step themselves, and hand a slot back by refilling it."""
    slots: gl.shared_memory_descriptor
    a: gl.shared_memory_descriptor
    full: gl.shared_memory_descriptor
    a_desc: tma.tensor_descriptor
    b_desc: tma.tensor_descriptor
    off_m: gl.tensor
    off_n: gl.tensor
    n: gl.tensor
    STAGES: gl.constexpr
    B_TRANSPOSED: gl.constexpr

    @gluon.constexpr_function
    def __init__(self, slots, a, full, a_desc, b_desc, off_m, off_n, n, B_TRANSPOSED=False):
        self.slots = slots
        self.a = a
        self.full = full
        self.a_desc = a_desc
        self.b_desc = b_desc
        self.off_m = off_m
        self.off_n = off_n
        self.n = n
        self.STAGES = gl.constexpr(slots.type.shape[0])
        self.B_TRANSPOSED = gl.constexpr(B_TRANSPOSED)

    @gluon.jit
    def load(self, i, pred):
        """TMA k-step ``i`` into slot ``i % STAGES``; the copy completes on ``full[slot]``."""
        BK: gl.constexpr = self.a_desc.block_type.shape[1]
        s = i % self.STAGES
        mbarrier.expect(self.full.index(s),
                        self.a_desc.block_type.nbytes + self.b_desc.block_type.nbytes, pred=pred)
        tma.async_copy_global_to_shared(self.a_desc, [self.off_m, i * BK], self.full.index(s),
                                        self.a.index(s), pred=pred)
        load_b(self.b_desc, i * BK, self.off_n, self.full.index(s), self.slots.index(s),
               self.B_TRANSPOSED, pred=pred)

    @gluon.jit
    def acquire(self, it):
        """Wait until k-step ``it`` has landed; returns its slot."""
        return acquire(self.full, it, self.STAGES)

    @gluon.jit
    def release(self, it):
        """Done with k-step ``it`` (-1: none yet): if the tile has a k-step ``it + STAGES``,
        load it into the slot once every warp is done with it (both warpgroups read it)."""
        j = it + self.STAGES
        if (it >= 0) & (j < self.n):
            gl.thread_barrier()
            self.load(j, True)


@gluon.jit
def consumer(t, ab):
    """The two warpgroups, one partition: the tile's k-steps (``sim/gemm/pipelined.py``'s
    ``consumer``: the prologue fills the ring, each k-step releases the one before)."""
    for i in gl.static_range(ab.STAGES):
        ab.load(i, i < ab.n)
    accs = t.zero()
    for i in range(ab.n):
        s = ab.acquire(i)
        accs = t.mma(ab, s, accs)
        accs = t.wait_mma(accs, 1)                         # k-step i-1 is done
        ab.release(i - 1)                                  # both warpgroups: refill its slot
    return t.wait_mma(accs, 0)


@gluon.jit
def pipelined_kernel(a_desc, b_desc, c_desc, STAGES: gl.constexpr, GROUP_M: gl.constexpr,
                     num_warps: gl.constexpr, B_TRANSPOSED: gl.constexpr = False):
    BM: gl.constexpr = c_desc.block_type.shape[0]
    BN: gl.constexpr = c_desc.block_type.shape[1]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    M = a_desc.shape[0]
    K = a_desc.shape[1]
    N = b_cols(b_desc, B_TRANSPOSED)
    pid_m, pid_n = tile_coords(gl.program_id(0), gl.cdiv(M, BM), gl.cdiv(N, BN), GROUP_M)
    off_m = pid_m * BM
    off_n = pid_n * BN
    k_steps = gl.cdiv(K, BK)

    # The ring: STAGES slots of (A, B) and one `full` mbarrier per slot.
    a_ring = gl.allocate_shared_memory(a_desc.dtype, [STAGES, BM, BK], a_desc.layout)
    b_ring = gl.allocate_shared_memory(b_desc.dtype, [STAGES] + b_box(BK, BN, B_TRANSPOSED),
                                       b_desc.layout)
    full = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for slot in gl.static_range(STAGES):
        mbarrier.init(full.index(slot), count=1)

    t = Tile(a_ring, c_desc, 1, num_warps, B_TRANSPOSED=B_TRANSPOSED)
    accs = consumer(t, InlineRing(b_ring, a_ring, full, a_desc, b_desc, off_m, off_n, k_steps,
                                  B_TRANSPOSED))

    for slot in gl.static_range(STAGES):
        mbarrier.invalidate(full.index(slot))
    # The ring is dead now: the compiler places the epilogue's staging tile over it.
    c_smem = gl.allocate_shared_memory(c_desc.dtype, [BM, BN], c_desc.layout)
    t.epilogue(accs, c_smem, pid_m, pid_n)
    tma.store_wait(0)
