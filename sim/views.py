"""What a role the caller writes sees of one attention CTA (`sim.simulate(..., roles=...)`).

A supplied role gets a `RoleView`, not the CTA: the calls a producer or consumer of the course's
schedules makes (wait on a barrier, expect and arrive, a TMA copy, the GEMMs, the softmax steps)
and nothing that would write the schedule for it (the CTA's one-call ``produce`` / ``load``,
``wait_turn``). Barriers, rings and turns are wrapped likewise, so a role cannot reach the model's
objects through them.
"""
from __future__ import annotations

import math
import numbers

from .engine import MBarrier


def _nbytes(n) -> int:
    """A byte count a role hands the model: a whole number >= 0 (a NaN, an infinity or a
    fraction would reach the copy engine's clock or a barrier's transaction count)."""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0:
        raise ValueError(f"expected a whole number of bytes >= 0, got {n!r}")
    return int(n)


class BarrierView:
    """An mbarrier as a role sees it: its name, `expect(nbytes)` and `arrive()`."""

    __slots__ = ("_bar",)

    def __init__(self, bar: MBarrier):
        self._bar = bar

    @property
    def name(self) -> str:
        return self._bar.name

    def expect(self, nbytes: int) -> None:
        """mbarrier.arrive.expect_tx: one arrival that announces `nbytes` still to land."""
        self._bar.expect(_nbytes(nbytes))

    def arrive(self) -> None:
        self._bar.arrive()

    def __repr__(self) -> str:
        return f"<barrier {self.name}>"


class RingView:
    """A ring of `stages` slots, each with a `full` and an `empty` barrier (block j lives in slot
    j % stages; which parity to wait for is the role's to work out)."""

    __slots__ = ("_ring", "name", "stages", "full", "empty")

    def __init__(self, ring):
        self._ring, self.name, self.stages = ring, ring.name, ring.stages
        self.full = tuple(BarrierView(b) for b in ring.full)
        self.empty = tuple(BarrierView(b) for b in ring.empty)

    def __repr__(self) -> str:
        return f"<ring {self.name}, {self.stages} stages>"


class TurnsView:
    """The consumers' turn barriers (pingpong): `bar[w]` is warpgroup w's, `n` how many."""

    __slots__ = ("n", "bar")

    def __init__(self, turns):
        self.n = turns.n
        self.bar = tuple(BarrierView(b) for b in turns.bar)


def _bar(b) -> MBarrier:
    if not isinstance(b, BarrierView):
        raise TypeError(f"expected one of this CTA's barriers (cta.k.full[s], cta.q_full, ...), "
                        f"got {b!r}")
    return b._bar


def _ring(r):
    if not isinstance(r, RingView):
        raise TypeError(f"expected one of this CTA's rings (cta.k, cta.v), got {r!r}")
    return r._ring


class RoleView:
    """What a role that `simulate` runs for the caller gets: one attention CTA's rings, barriers
    and steps — the calls a producer or consumer of the course's schedules makes, no more.

    Attributes: `cfg` (the prepared `AttentionConfig`), `n_blocks`, `el` (bytes per element),
    `producer_name`, `k` and `v` (`RingView`), `q_full` (`BarrierView`), `turns` (`TurnsView`),
    `now` (the SM clock). Generators (``yield from``): `wait`, `acquire`, `softmax`, `rescale`,
    `pack`, `epilogue`. Events (``yield``): `qk`, `pv`, `delay`. Plain calls: `wg`, `tile`,
    `tma_copy`, `load_q`, `release`.
    """

    __slots__ = ("_cta", "cfg", "n_blocks", "el", "producer_name", "k", "v", "q_full", "turns")

    def __init__(self, cta):
        self._cta = cta
        self.cfg, self.n_blocks, self.el = cta.cfg, cta.n_blocks, cta.el
        self.producer_name = cta.producer_name
        self.k, self.v = RingView(cta.k), RingView(cta.v)
        self.q_full = BarrierView(cta.q_full)
        self.turns = TurnsView(cta.turns)

    @property
    def now(self) -> float:
        return self._cta.env.now

    def wg(self, w: int) -> str:
        """The actor name of consumer warpgroup w."""
        return self._cta.wg(w)

    def tile(self, what: str, j: int) -> tuple:
        """Trace tag of block j of `what` ("kv", "q", ...)."""
        return self._cta.tile(what, j)

    def delay(self, clk: float):
        """An event `clk` cycles from now (``yield cta.delay(clk)``): a finite number >= 0 (a NaN
        or infinite clock would make every later time comparison false)."""
        if isinstance(clk, bool) or not isinstance(clk, (int, float)) or not math.isfinite(clk) \
                or clk < 0:
            raise ValueError(f"delay: expected a finite number of cycles >= 0, got {clk!r}")
        return self._cta.env.timeout(clk)

    # barriers and copies
    def wait(self, actor: str, bar: BarrierView, parity: int):
        """try_wait.parity until the barrier's phase of this parity has completed. `parity` is the
        int 0 or 1 (the hardware reads its low bit: a 2 would pass here at once and hang a fresh
        barrier there)."""
        if isinstance(parity, bool) or not isinstance(parity, numbers.Integral) or \
                parity not in (0, 1):
            raise ValueError(f"wait: a phase parity is the int 0 or 1, got {parity!r}")
        yield from self._cta.wait(actor, _bar(bar), int(parity))

    def tma_copy(self, actor: str, op: str, nbytes: int, bar: BarrierView, tile=None) -> None:
        """Issue a TMA copy of `nbytes` that completes on `bar` (after your `bar.expect`)."""
        self._cta.tma_copy(actor, op, _nbytes(nbytes), _bar(bar), tile)

    def load_q(self, actor: str) -> None:
        """The CTA's Q tile, expected on and landing at `q_full`."""
        self._cta.load_q(actor)

    def acquire(self, actor: str, ring: RingView, j: int):
        """Consumer side: wait until block j has landed in its slot."""
        yield from self._cta.acquire(actor, _ring(ring), j)

    def release(self, ring: RingView, j: int) -> None:
        """Consumer side: arrive on block j's `empty` barrier."""
        self._cta.release(_ring(ring), j)

    # a consumer's steps
    def qk(self, w: int, j: int):
        """Issue S = Q K_jᵀ; returns the event warpgroup_mma_wait waits on."""
        return self._cta.qk(w, j)

    def pv(self, w: int, j: int):
        """Issue O += P_j V_j; returns the event warpgroup_mma_wait waits on."""
        return self._cta.pv(w, j)

    def softmax(self, w: int, j: int):
        yield from self._cta.softmax(w, j)

    def rescale(self, w: int, j: int):
        """O *= exp2(m_old - m_new)."""
        yield from self._cta.rescale(w, j)

    def pack(self, w: int, j: int):
        """P to 16 bits for P·V."""
        yield from self._cta.pack(w, j)

    def epilogue(self, w: int):
        yield from self._cta.epilogue(w)
