"""Chapter 01 — write the producer of the `ws` attention schedule in SimPy.

Fill in `producer(cta)`. It is a SimPy generator (it `yield`s) that the course's model runs as the
producer warpgroup of one attention CTA (``sim/attention/ws.py``'s consumers, tab. 2 tiles, K and
V each in a ring of ``cta.cfg.stages`` slots). For every K/V block j, and for each of the two rings
(``cta.k`` first, then ``cta.v``):

1. wait until block j's slot is free: ``yield from cta.wait(me, ring.empty[s], parity)``;
2. announce the bytes on the slot's ``full`` barrier: ``ring.full[s].expect(nbytes)``;
3. issue the TMA copy that lands them there:
   ``cta.tma_copy(me, "load K" or "load V", nbytes, ring.full[s], cta.tile("kv", j))``.

A block is ``cta.cfg.block_n × cta.cfg.headdim`` elements of ``cta.el`` bytes. Work out the slot
``s`` and the phase parity yourself (``ring.stages`` slots; see the note on `Ring` in
``sim/engine.py``). The ``cta`` your producer gets is a ``sim.RoleView``: the model's one-call
``produce`` and ``load`` would do the exercise for you, so it has neither.
"""


def producer(cta):
    me = cta.producer_name
    cta.load_q(me)                     # Q once, on cta.q_full (given)
    ### BEGIN SOLUTION
    nbytes = cta.cfg.block_n * cta.cfg.headdim * cta.el
    for j in range(cta.n_blocks):
        for ring, op in ((cta.k, "load K"), (cta.v, "load V")):
            s = j % ring.stages
            phase = (j // ring.stages) & 1
            # A fresh barrier counts as having completed the phase before phase 0: waiting for
            # the opposite parity lets the first lap through without a release.
            yield from cta.wait(me, ring.empty[s], phase ^ 1)
            ring.full[s].expect(nbytes)
            cta.tma_copy(me, op, nbytes, ring.full[s], cta.tile("kv", j))
    ### END SOLUTION
