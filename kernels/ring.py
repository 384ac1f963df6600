"""The ring and the turns on the device, for GEMM and attention alike (``sim/cta.py``'s
``acquire``, ``release``, ``produce``, ``wait_turn``, ``pass_turn``).

A ring is ``STAGES`` shared-memory slots, each with a ``full`` mbarrier (the TMA unit completes it
with the bytes it copied) and, where another role refills the slot, an ``empty`` mbarrier (each
consumer arrives on it once it has read the slot). Position ``it`` of the ring (a k-step of the
GEMM, a K or V block of attention) lives in slot ``it % STAGES``, in its ``it // STAGES``-th use:
the phase parity of its barriers is ``(it // STAGES) & 1``.

A fresh mbarrier counts as having completed the phase before phase 0, so a wait at parity 1 on a
fresh barrier falls through: the producer's first lap over ``empty`` does not wait (the ring
starts empty), and neither does warpgroup 0's first wait for its turn.

Turns: consumers that take turns on the tensor cores do it with one mbarrier of count 1 each; a
warpgroup waits on its own and, once its GEMMs are issued, arrives on the next one's. Warpgroup 0
goes first. ``NAMED_TURNS`` (fa3's ``named_turns``): the same hand-over on named barriers instead, as
FA3 does (hopper/mainloop_fwd_sm90_tma_gmma_ws.hpp, ``warp_scheduler_barrier_sync``/``_arrive``):
warpgroup w's turn is named barrier ``TURN_BARRIER + w`` over 256 threads, completed by its own
128 threads' ``bar.sync`` and its predecessor's 128 ``bar.arrive``. Gluon 3.6 has no named-barrier
op, so they are inline PTX; Triton 3.6 itself uses ids 0-3 here (0 and 2-3: a partition's own
``bar.sync id, 128``, 1: the CTA-wide one around the partitions). An mbarrier arrive is made by
one thread after a warpgroup ``bar.sync`` its lowering puts before it; an inline-asm
``bar.arrive`` gets none, and Triton's barrier pass sees no shared memory in it
(``tests/kernels/test_attention_compile.py`` counts them; ``meet_after_arrive`` below).
"""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier
from triton.language.core import _aggregate as aggregate  # Triton 3.6's name (later: gluon.aggregate)

from .scopes import enter, exit


@gluon.jit
def acquire(full, it, STAGES: gl.constexpr):
    """Consumer: wait until ring position ``it`` has landed in its slot; returns the slot."""
    s = it % STAGES
    mbarrier.wait(full.index(s), (it // STAGES) & 1)
    return s


@gluon.jit
def release(empty, it, STAGES: gl.constexpr, pred=True):
    """Consumer: done reading ring position ``it``: hand its slot back to the producer."""
    mbarrier.arrive(empty.index(it % STAGES), pred=pred)


@gluon.jit
def wait_slot(empty, it, STAGES: gl.constexpr):
    """Producer: wait until ring position ``it``'s slot is free (the first lap falls through);
    returns the slot."""
    s = it % STAGES
    mbarrier.wait(empty.index(s), ((it // STAGES) & 1) ^ 1)
    return s


@gluon.jit
def turn_parity(k, WG: gl.constexpr):
    """Parity of warpgroup WG's k-th wait for its turn. WG 0's turn k is completed by the last
    warpgroup's (k-1)-th hand-over, phase k-1 of its barrier (k = 0: the fresh barrier's phase
    before phase 0, so it falls through); every other warpgroup's by its predecessor's k-th,
    phase k. Same as ``sim/engine.py``'s ``turn_parity``."""
    return (k & 1) ^ (WG == 0)


TURN_BARRIER = gl.constexpr(8)  # named barriers 8, 9, 10: above Triton's 0-3, below Hopper's 16


@gluon.constexpr_function
def named_barrier_asm(op, barrier):
    """``bar.sync``/``bar.arrive`` on named barrier ``barrier`` over two warpgroups (the turn's
    owner and its predecessor); the asm returns a dummy 0 (an inline asm op needs a result)."""
    return f"{op} {barrier}, 256; mov.b32 $0, 0;"


@gluon.jit
def named_barrier(ASM: gl.constexpr):
    gl.inline_asm_elementwise(ASM, "=r", [], dtype=gl.int32, is_pure=False, pack=1)


@gluon.jit
def wait_turn(turn, k, WG: gl.constexpr, NAMED_TURNS: gl.constexpr = False, FIRST: gl.constexpr = False):
    """Warpgroup WG's k-th wait for its turn on the tensor cores (``FIRST``: k = 0, which for
    warpgroup 0 needs no wait: on an mbarrier its parity falls through; a named barrier has no
    phase before phase 0, so there it is skipped)."""
    if NAMED_TURNS:
        if not (FIRST and WG == 0):
            named_barrier(named_barrier_asm("bar.sync", TURN_BARRIER + WG))
    else:
        mbarrier.wait(turn.index(WG), turn_parity(k, WG))


@gluon.jit
def pass_turn(turn, WG: gl.constexpr, CONSUMERS: gl.constexpr, NAMED_TURNS: gl.constexpr = False,
              LAST: gl.constexpr = False):
    """Warpgroup WG's GEMMs are issued: the next warpgroup's turn (``LAST``: the CTA's last
    hand-over; warpgroup 0 waits for no turn after it, and on a named barrier an arrive nobody
    syncs with would be left half-counted at exit, so the last warpgroup skips it)."""
    if NAMED_TURNS:
        if not (LAST and WG == CONSUMERS - 1):
            named_barrier(named_barrier_asm("bar.arrive", TURN_BARRIER + (WG + 1) % CONSUMERS))
    else:
        mbarrier.arrive(turn.index((WG + 1) % CONSUMERS))


@gluon.jit
def meet_after_arrive():
    """A warpgroup ``bar.sync`` right after an mbarrier arrive, where Triton's barrier pass sees
    it. The arrive's own ``bar.sync`` (before it) is made when the arrive is lowered, after that
    pass, which counts the arrive as a write of shared memory that a later mbarrier wait must
    wait for: unseen, the pass puts one more ``bar.sync`` before the next wait (the top of the
    next block). Made here, the warps meet again where they have just met, and the next block's
    waits need none (``tests/kernels/test_attention_compile.py`` shows both)."""
    gl.thread_barrier()


@aggregate
class Ring:
    """One operand's ring: its ``slots`` in shared memory and their ``full`` and ``empty``
    mbarriers, with the steps both sides take on it (``sim/engine.py``'s ``Ring``). ``LAG``: the
    release of position ``it`` arrives at position ``it + LAG`` of ``empty`` (fa3's
    ``one_release``: V's ring hands its slots back through K's ``empty``, one position later,
    ``kernels/attention/partitions.py``). ``WAIT``: the Proton scope of a wait for ``full``.
    ``FROM_BEFORE``: ``release`` may be handed the position before the first (-1: a GEMM
    consumer releases k-step ``it - 1``, predicated off at the first), so it counts a lap on,
    where the slot's remainder is not negative."""
    slots: gl.shared_memory_descriptor
    full: gl.shared_memory_descriptor
    empty: gl.shared_memory_descriptor
    STAGES: gl.constexpr
    LAG: gl.constexpr
    WAIT: gl.constexpr
    PROFILE: gl.constexpr
    RELEASE_AT: gl.constexpr

    @gluon.constexpr_function
    def __init__(self, slots, full, empty, LAG=0, WAIT="wait", PROFILE=False, FROM_BEFORE=False):
        self.slots = slots
        self.full = full
        self.empty = empty
        self.STAGES = gl.constexpr(slots.type.shape[0])
        self.LAG = gl.constexpr(LAG)
        self.WAIT = gl.constexpr(WAIT)
        self.PROFILE = gl.constexpr(PROFILE)
        self.RELEASE_AT = gl.constexpr(LAG + (self.STAGES.value if FROM_BEFORE else 0))

    @gluon.jit
    def acquire(self, it):
        """Consumer: wait until ring position ``it`` has landed; returns its slot's index (the
        step that reads it takes ``slots.index`` where it reads)."""
        enter(self.WAIT, self.PROFILE)
        s = acquire(self.full, it, self.STAGES)
        exit(self.WAIT, self.PROFILE)
        return s

    @gluon.jit
    def release(self, it, pred=True):
        """Consumer: done reading ring position ``it``: its slot goes back to the producer
        (``pred`` false: not this time)."""
        release(self.empty, it + self.RELEASE_AT, self.STAGES, pred)

    @gluon.jit
    def wait_slot(self, it):
        """Producer: wait until ring position ``it``'s slot is free; returns the slot."""
        return wait_slot(self.empty, it + self.LAG, self.STAGES)


@aggregate
class Turns:
    """Warpgroup ``WG``'s turns on the tensor cores among ``CONSUMERS``: one mbarrier each in
    ``bars`` or (``NAMED_TURNS``) named barriers."""
    bars: gl.shared_memory_descriptor
    WG: gl.constexpr
    CONSUMERS: gl.constexpr
    NAMED_TURNS: gl.constexpr
    PROFILE: gl.constexpr

    @gluon.constexpr_function
    def __init__(self, bars, WG, CONSUMERS, NAMED_TURNS=False, PROFILE=False):
        self.bars = bars
        self.WG = gl.constexpr(WG)
        self.CONSUMERS = gl.constexpr(CONSUMERS)
        self.NAMED_TURNS = gl.constexpr(NAMED_TURNS)
        self.PROFILE = gl.constexpr(PROFILE)

    @gluon.jit
    def wait_turn(self, k, FIRST: gl.constexpr = False):
        enter("wait turn", self.PROFILE)
        wait_turn(self.bars, k, self.WG, self.NAMED_TURNS, FIRST)
        exit("wait turn", self.PROFILE)

    @gluon.jit
    def pass_turn(self, LAST: gl.constexpr = False):
        pass_turn(self.bars, self.WG, self.CONSUMERS, self.NAMED_TURNS, LAST)
