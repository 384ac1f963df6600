# exercise: ch03_pingpong
# file: pingpong.py
# loses: test_score_gemms_never_overlap, test_predicted_time
# bug: passes the turn on right after taking it, before its own Q·Kᵀ has run, so the next
#      warpgroup's GEMM starts while this one's is still on the tensor core.
# ruff: noqa  (known-wrong on purpose)
"""Chapter 03 — pingpong: two consumer warpgroups take turns on the tensor core.

In `ws` both consumers wake on the same `full` barrier and issue Q·Kⱼᵀ together; their wgmmas
share the tensor core instruction by instruction and *both* finish late. Pingpong orders them with
one mbarrier per warpgroup (``cta.turns.bar[w]``, arrival count 1; Gluon has no named barriers):
warpgroup w may issue its k-th score GEMM once warpgroup w-1 has passed the turn on, and warpgroup 0
goes first.

Write:

* ``wait_turn(cta, w, k)`` — a SimPy generator that waits until it is warpgroup w's k-th turn
  (k = 0, 1, ...), with ``yield from cta.wait(cta.wg(w), bar, parity)`` on ``bar =
  cta.turns.bar[w]``. Work out the parity: warpgroup 0's first turn must pass at once (a fresh
  mbarrier counts as having completed the phase before phase 0), the others wait for an arrival.
* ``pass_turn(cta, w)`` — hand the tensor core to the next warpgroup (``(w + 1) % n``,
  ``n = cta.turns.n``): one ``arrive()`` on its barrier.
* the two calls in ``consumer`` — where does the turn begin, and when may it pass on? (The scores
  must be in before the next warpgroup's GEMM may start.)

The ``cta`` your code gets (a ``sim.RoleView``) has no ready-made turn calls; the grader tests
your two functions on their own too.
"""


def wait_turn(cta, w, k):
    parity = (k & 1) ^ 1 if w == 0 else k & 1
    yield from cta.wait(cta.wg(w), cta.turns.bar[w], parity)


def pass_turn(cta, w):
    cta.turns.bar[(w + 1) % cta.turns.n].arrive()


def consumer(cta, w):
    """`ws`'s consumer loop (sim/attention/ws.py) with the turns added."""
    me = cta.wg(w)
    yield from cta.wait(me, cta.q_full, 0)
    for j in range(cta.n_blocks):
        yield from cta.acquire(me, cta.k, j)
        yield from wait_turn(cta, w, j)             # my turn on the tensor core
        pass_turn(cta, w)                           # BUG: passed on before the GEMM ran
        yield cta.qk(w, j)
        cta.release(cta.k, j)
        yield from cta.softmax(w, j)
        yield from cta.rescale(w, j)
        yield from cta.acquire(me, cta.v, j)
        yield from cta.pack(w, j)
        yield cta.pv(w, j)
        cta.release(cta.v, j)
    yield from cta.epilogue(w)
