"""One consumer warpgroup's share of the CTA's tile, and the steps it takes on it.

``Tile`` bundles what every step of a consumer needs (where its rows are, how many K/V blocks it
visits, the pointers and scalars of the launch, the compile-time configuration and the schedule's
switches), so a schedule's consumer reads as its model's: ``t.qk(k_slot)``, ``t.softmax(...)``,
``t.wait_pv(...)``. The steps are ``steps.py``'s device functions; the Proton scopes
(``kernels/scopes.py``, on with ``PROFILE``) are here, around the step they time, not in the loop.

The switches keep the spelling of the model's configuration (``AttentionConfig.switches``,
the launcher's ``softmax=`` names), upper-cased as constexprs: ``TURNS`` (off with
``no_turns``), ``RESCALE_EARLY``, ``ONE_RELEASE``, ``NAMED_TURNS``, ``COND_RESCALE``, and
``FENCE`` (the model's ``fence``; ``overlap.py``).
"""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma, warpgroup_mma_wait
from triton.language.core import _aggregate as aggregate

from ..ring import meet_after_arrive
from ..scopes import enter, exit
from . import boxes, steps

HOISTED = gl.constexpr("hoisted")  # FENCE: the wait for P·V written before the softmax


@aggregate
class Tile:
    """Warpgroup ``WG``'s rows of the CTA's Q tile: ``q`` (its Q in shared memory), ``o`` (where
    its O is staged for the store: ``q`` itself, dead by then, or the persistent kernel's O
    buffer), ``q_full``, ``row0`` (the first row of this batch·head in the 2-D view), ``m0``
    (its first Q row in the sequence), ``n`` (K/V blocks), ``rows`` (its row indices)."""
    q: gl.shared_memory_descriptor
    o: gl.shared_memory_descriptor
    q_full: gl.shared_memory_descriptor
    row0: gl.tensor
    m0: gl.tensor
    n: gl.tensor
    rows: gl.tensor
    seqlen: gl.tensor
    qk_scale: gl.tensor
    o_ptr: gl.tensor | tma.tensor_descriptor  # (a descriptor: steps.epilogue)
    lse_ptr: gl.tensor
    BN: gl.constexpr
    CAUSAL: gl.constexpr
    num_warps: gl.constexpr
    PROFILE: gl.constexpr
    SOFTMAX: gl.constexpr
    FENCE: gl.constexpr
    TURNS: gl.constexpr
    RESCALE_EARLY: gl.constexpr
    ONE_RELEASE: gl.constexpr
    NAMED_TURNS: gl.constexpr
    COND_RESCALE: gl.constexpr

    @gluon.constexpr_function
    def __init__(self, q, o, q_full, row0, m0, n, rows, seqlen, qk_scale, o_ptr, lse_ptr, BN, CAUSAL,
                 num_warps, PROFILE, SOFTMAX, FENCE, TURNS):
        self.q = q
        self.o = o
        self.q_full = q_full
        self.row0 = row0
        self.m0 = m0
        self.n = n
        self.rows = rows
        self.seqlen = seqlen
        self.qk_scale = qk_scale
        self.o_ptr = o_ptr
        self.lse_ptr = lse_ptr
        self.BN = gl.constexpr(BN)
        self.CAUSAL = gl.constexpr(CAUSAL)
        self.num_warps = gl.constexpr(num_warps)
        self.PROFILE = gl.constexpr(PROFILE)
        self.SOFTMAX = gl.constexpr(SOFTMAX)
        self.FENCE = gl.constexpr(FENCE)
        self.TURNS = gl.constexpr(TURNS)
        self.RESCALE_EARLY = gl.constexpr(bool(SOFTMAX & steps.RESCALE_EARLY.value))
        self.ONE_RELEASE = gl.constexpr(bool(SOFTMAX & steps.ONE_RELEASE.value))
        self.NAMED_TURNS = gl.constexpr(bool(SOFTMAX & steps.NAMED_TURNS.value))
        self.COND_RESCALE = gl.constexpr(bool(SOFTMAX & steps.COND_RESCALE.value))

    @gluon.jit
    def init_state(self):
        """Running row max, row sum, O (``steps.init_state``)."""
        return steps.init_state(self.q.type.shape[0], self.q.type.shape[1], self.BN,
                                self.num_warps, self.SOFTMAX)

    @gluon.jit
    def wait_q(self, phase):
        """The CTA's Q tile landed (its prologue: a cold read)."""
        enter("wait Q", self.PROFILE)
        mbarrier.wait(self.q_full, phase)
        exit("wait Q", self.PROFILE)

    @gluon.jit
    def qk(self, k, ks, is_async: gl.constexpr = False):
        """S = Q·K_jᵀ, K_j in slot ``ks`` of ring ``k``; async: issued, its "QK" scope open
        until ``wait_qk``."""
        enter("QK", self.PROFILE)
        s = steps.qk(self.q, boxes.index(k.slots, ks), self.num_warps, is_async=is_async)
        if not is_async:
            exit("QK", self.PROFILE)
        return s

    @gluon.jit
    def wait_qk(self, s_tok, PENDING: gl.constexpr = 1):
        """The scores are in (``warpgroup_mma_wait``: the ``PENDING`` P·V issued after them, if
        any, may run on; a block in pieces is a wgmma group a piece, in either GEMM)."""
        if boxes.in_pieces(s_tok):
            s = warpgroup_mma_wait(PENDING * len(s_tok), deps=s_tok)
        else:
            s = warpgroup_mma_wait(PENDING, deps=(s_tok,))
        exit("QK", self.PROFILE)
        return s

    @gluon.jit
    def softmax(self, s, m_i, l_i, j):
        """Block j's online softmax (``steps.softmax``). Returns (P, the rescale factor, m, l);
        with ``COND_RESCALE`` the factor is (alpha, whether any row moved): ``rescale`` takes
        either."""
        enter("softmax", self.PROFILE)
        p, alpha, m_i, l_i = steps.softmax(s, m_i, l_i, j, self.m0, self.rows, self.seqlen,
                                           self.qk_scale, self.BN, self.CAUSAL, self.SOFTMAX)
        if self.COND_RESCALE:
            alpha = (alpha, steps.moved(alpha))
        exit("softmax", self.PROFILE)
        return p, alpha, m_i, l_i

    @gluon.jit
    def rescale(self, acc, alpha):
        """O *= alpha; with ``COND_RESCALE`` only if a row of this warpgroup moved its max."""
        enter("softmax", self.PROFILE)
        if self.COND_RESCALE:
            a, moved = alpha
            if moved:
                acc = steps.rescale(acc, a)
        else:
            acc = steps.rescale(acc, alpha)
        exit("softmax", self.PROFILE)
        return acc

    @gluon.jit
    def hold(self, x):
        """``x``, available no earlier than here (``steps.hold``)."""
        return steps.hold(x, self.lse_ptr, self.seqlen)

    @gluon.jit
    def fence(self):
        """Keep ptxas from moving code across this point (``steps.schedule_fence``)."""
        steps.schedule_fence(self.lse_ptr, self.seqlen)

    @gluon.jit
    def pack(self, p):
        enter("softmax", self.PROFILE)
        p = steps.pack(p, self.q.dtype, self.q.type.shape[1], self.num_warps)
        exit("softmax", self.PROFILE)
        return p

    @gluon.jit
    def pv(self, p, v, vs, acc, is_async: gl.constexpr = False):
        """O += P·V_j, V_j in slot ``vs`` of ring ``v``; synchronous under the "PV" scope, or
        issued (``wait_pv`` waits)."""
        if is_async:
            return steps.pv(p, boxes.index(v.slots, vs), acc, is_async=True)
        else:
            enter("PV", self.PROFILE)
            acc = steps.pv(p, boxes.index(v.slots, vs), acc)
            exit("PV", self.PROFILE)
            return acc

    @gluon.jit
    def wait_pv(self, o_tok, v, j, GIVE_BACK: gl.constexpr = True):
        """P_j·V_j done (``warpgroup_mma_wait(0)``): O is in, and V_j's slot goes back (not with
        ``GIVE_BACK`` off: the caller gives it back later)."""
        enter("PV", self.PROFILE)
        acc = warpgroup_mma_wait(0, deps=(o_tok,))
        exit("PV", self.PROFILE)
        if GIVE_BACK:
            v.release(j)
            if self.ONE_RELEASE:  # the block's one arrive: the next block's waits need no meeting
                meet_after_arrive()
        return acc

    @gluon.jit
    def epilogue(self, acc, m_i, l_i):
        enter("epilogue", self.PROFILE)
        steps.epilogue(acc, m_i, l_i, self.o_ptr, self.lse_ptr, self.row0, self.m0, self.seqlen,
                       self.o, self.num_warps)
        exit("epilogue", self.PROFILE)
