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

Turns: Gluon has no named-barrier API, so consumers that take turns on the tensor cores do it
with one mbarrier of count 1 each; a warpgroup waits on its own and, once its GEMMs are issued,
arrives on the next one's. Warpgroup 0 goes first.
"""
from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier


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


@gluon.jit
def wait_turn(turn, k, WG: gl.constexpr):
    """Warpgroup WG's k-th wait for its turn on the tensor cores."""
    mbarrier.wait(turn.index(WG), turn_parity(k, WG))


@gluon.jit
def pass_turn(turn, WG: gl.constexpr, CONSUMERS: gl.constexpr):
    """Warpgroup WG's GEMMs are issued: the next warpgroup's turn."""
    mbarrier.arrive(turn.index((WG + 1) % CONSUMERS))
