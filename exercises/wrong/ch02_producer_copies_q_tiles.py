# exercise: ch02_producer
# file: producer.py
# loses: test_runs_to_the_end, test_no_read_before_land, test_three_stages
# bug: tags both copies of block j with cta.tile("q", j) (Q's block j) instead of
#      cta.tile("kv", j): every slot, barrier, parity and byte count is right, but the copies bring
#      Q's blocks into the K/V slots, and the consumers read K_j and V_j that never arrived.
# ruff: noqa  (known-wrong on purpose)
"""Chapter 02 — the producer warpgroup of a K/V ring with ONE `full` barrier per slot.

The course's `ws` schedule keeps K and V in two rings, each slot with its own `full` and `empty`
barrier. Here K_j and V_j of a block share one slot and one pair of barriers: slot s of the ring
``cta.k`` holds both tiles of block j (s is block j's slot in the ring, as in chapter 01), the
consumers (the grader's, in ``test_producer.py``) wait once on ``cta.k.full[s]`` for K_j *and* V_j,
compute Q·K_jᵀ, the softmax and P·V_j, and then both arrive on ``cta.k.empty[s]``. ``cta.v`` is not
used. ``cta.k.full[s]`` expects one arrival per phase, ``cta.k.empty[s]`` one per consumer.

Write `producer(cta)`, a SimPy generator the model runs as the producer warpgroup of one attention
CTA (FA3 tab. 2 tiles); `cta` is a `sim.RoleView` (its docstring lists what a role can do). The
grader replays the run's event log and holds your producer to these rules:

* every block j is delivered exactly once — its K tile and its V tile, each a TMA copy of
  ``cfg.block_n × cfg.headdim`` elements of ``cta.el`` bytes, named ``"load K"`` / ``"load V"``
  and tagged ``cta.tile("kv", j)`` — into block j's slot, completing on that slot's `full`
  barrier, in the order of j;
* a slot is refilled only after both consumers have released the block it held (their own
  arrivals on its `empty`: only the consumers arrive there);
* the bytes a slot's `full` barrier expects for a fill are announced before any of the fill's
  copies is issued, and equal the bytes its copies land: the consumers are woken when, and only
  when, both K_j and V_j are in;
* the consumers are never starved longer than needed: each fill is claimed as soon as its slot
  is free (no later than one barrier wake-up after the release, or after the previous fill if
  that was later), and its copies are issued at once.
"""


def producer(cta):
    me = cta.producer_name
    cta.load_q(me)                     # Q once, on cta.q_full (given)
    ring = cta.k
    block = cta.cfg.block_n * cta.cfg.headdim * cta.el
    for j in range(cta.n_blocks):
        s, lap = j % ring.stages, j // ring.stages
        # The first lap passes on fresh barriers; lap n waits for the consumers' n-th release.
        yield from cta.wait(me, ring.empty[s], (lap & 1) ^ 1)
        ring.full[s].expect(2 * block)            # one arrival, both tiles' bytes
        cta.tma_copy(me, "load K", block, ring.full[s], cta.tile("q", j))
        cta.tma_copy(me, "load V", block, ring.full[s], cta.tile("q", j))
