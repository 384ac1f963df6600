"""One GEMM consumer's output tile and the steps it takes on it, and the producer's step.

``Tile`` bundles what a consumer's steps need (the A slots of the ring, C's descriptor, the
tile's shape), so a schedule's consumer reads as its model's
(``sim/gemm/``): ``ab.acquire(it)``, ``t.mma(ab, s, accs)``, ``t.wait_mma(accs, 1)``,
``ab.release(it - 1)``, ``t.epilogue(accs, c_smem, ...)`` (through a staging buffer: the
cooperative tile's own, one of pingpong's two, or one placed over the dead ring). The ring ``ab`` is ``kernels/ring.py``'s ``Ring``
over B's slots (one ``BK x BN`` box a position) and the ``full``/``empty`` barriers both operands
share; A's slots (``ROW_BLOCKS`` boxes of ``BOX_M`` rows a position: the cooperative tile one box
of 128 rows, pingpong's three of 64) are the consumer's ``t.a``, as attention's Q is its own.

A tile's accumulators are a tuple, one ``BOX_M x BN`` fp32 accumulator per row block. The Proton
scopes (``kernels/scopes.py``, on with ``PROFILE``) are here: ``"MMA"`` from a k-step's issue to
the wait for the one before it, ``"epilogue"`` from the wait for the tile's last k-step to its
store, ``"wait slot"`` and ``"TMA issue"`` in ``produce``.
"""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)
from triton.language.core import _aggregate as aggregate

from ..scopes import enter, exit
from .common import b_operand, box_n, load_b, wgmma_layout
from .common import epilogue as store_box


@aggregate
class Tile:
    """A consumer's ``a`` (A's ring slots) and ``c_desc``; its tile is ``ROW_BLOCKS`` boxes of
    C's box rows by C's box columns, computed by ``num_warps`` warps."""
    a: gl.shared_memory_descriptor
    c_desc: tma.tensor_descriptor
    ROW_BLOCKS: gl.constexpr
    num_warps: gl.constexpr
    PROFILE: gl.constexpr
    B_TRANSPOSED: gl.constexpr  # B's slots hold BN x BK boxes (``common.b_operand``)

    @gluon.constexpr_function
    def __init__(self, a, c_desc, ROW_BLOCKS, num_warps, PROFILE=False, B_TRANSPOSED=False):
        self.a = a
        self.c_desc = c_desc
        self.ROW_BLOCKS = gl.constexpr(ROW_BLOCKS)
        self.num_warps = gl.constexpr(num_warps)
        self.PROFILE = gl.constexpr(PROFILE)
        self.B_TRANSPOSED = gl.constexpr(B_TRANSPOSED)

    @gluon.jit
    def zero(self):
        """One zeroed fp32 accumulator per row block."""
        BOX_M: gl.constexpr = self.c_desc.block_type.shape[0]
        BN: gl.constexpr = self.c_desc.block_type.shape[1]
        layout: gl.constexpr = wgmma_layout(BN, self.num_warps)
        accs = (gl.zeros([BOX_M, BN], gl.float32, layout),)
        for r in gl.static_range(1, self.ROW_BLOCKS):
            accs = accs + (gl.zeros([BOX_M, BN], gl.float32, layout),)
        return accs

    @gluon.jit
    def mma(self, ab, s, accs):
        """Issue the k-step in slot ``s`` of ring ``ab``: one async wgmma group a row block."""
        enter("MMA", self.PROFILE)
        # (Written as the two kernels were measured: ptxas assigns uniform registers in the
        # order the slot addresses are computed, so either order written for both moves
        # registers in the other's SASS.)
        if self.ROW_BLOCKS == 1:  # one box: A's slot and B's, one wgmma group
            issued = (warpgroup_mma(self.a.index(s), b_operand(ab.slots.index(s), self.B_TRANSPOSED),
                                    accs[0], is_async=True),)
        else:  # B's slot once, then one group a row block of A
            b = b_operand(ab.slots.index(s), self.B_TRANSPOSED)
            issued = ()
            for r in gl.static_range(self.ROW_BLOCKS):
                issued = issued + (warpgroup_mma(self.a.index(s * self.ROW_BLOCKS + r), b,
                                                 accs[r], is_async=True),)
        return issued

    @gluon.jit
    def wait_mma(self, accs, PENDING: gl.constexpr):
        """Wait until at most ``PENDING`` k-steps are in flight (``warpgroup_mma_wait`` of their
        groups, one a row block). In the K-loop (1): the k-step before this one is done, its
        slot may go back; that closes the "MMA" scope. After it (0): the tile's last k-step; the
        trace counts draining it to the epilogue, whose scope opens here."""
        if PENDING == 0:
            enter("epilogue", self.PROFILE)
        done = warpgroup_mma_wait(PENDING * self.ROW_BLOCKS, deps=accs)
        if len(accs) == 1:  # one accumulator comes back bare
            done = (done,)
        if PENDING > 0:
            exit("MMA", self.PROFILE)
        return done

    @gluon.jit
    def epilogue(self, accs, c, pid_m, pid_n):
        """The tile's row blocks, box by box through the staging buffer ``c`` (pingpong: the
        other consumer's K-loop keeps the tensor cores busy meanwhile)."""
        BOX_M: gl.constexpr = self.c_desc.block_type.shape[0]
        BN: gl.constexpr = self.c_desc.block_type.shape[1]
        BM: gl.constexpr = self.ROW_BLOCKS * BOX_M
        for r in gl.static_range(self.ROW_BLOCKS):
            store_box(self.c_desc, c, accs[r], pid_m * BM + r * BOX_M, pid_n * BN)
        exit("epilogue", self.PROFILE)


@gluon.jit
def produce(a_desc, b_desc, a_ring, ab, it, pid_m, pid_n, k, PROFILE: gl.constexpr = False,
            B_TRANSPOSED: gl.constexpr = False):
    """Ring position ``it`` (the k-step at column ``k`` of A, of tile (pid_m, pid_n)): wait for
    its slot to be free, expect the bytes of A and B on ``full``, TMA them in: A as ``ROW_BLOCKS`` boxes of
    ``BOX_M`` rows, B as one box."""
    ROW_BLOCKS: gl.constexpr = a_ring.type.shape[0] // ab.STAGES
    BOX_M: gl.constexpr = a_desc.block_type.shape[0]
    BM: gl.constexpr = ROW_BLOCKS * BOX_M
    BN: gl.constexpr = box_n(b_desc, B_TRANSPOSED)
    enter("wait slot", PROFILE)
    s = ab.wait_slot(it)
    exit("wait slot", PROFILE)
    enter("TMA issue", PROFILE)
    full = ab.full.index(s)
    mbarrier.expect(full, ROW_BLOCKS * a_desc.block_type.nbytes + b_desc.block_type.nbytes)
    for r in gl.static_range(ROW_BLOCKS):
        tma.async_copy_global_to_shared(a_desc, [pid_m * BM + r * BOX_M, k], full,
                                        a_ring.index(s * ROW_BLOCKS + r))
    load_b(b_desc, k, pid_n * BN, full, ab.slots.index(s), B_TRANSPOSED)
    exit("TMA issue", PROFILE)
