# exercise: ch02_producer
# file: producer.py
# loses: all
# bug: the first lap "waits" on `empty` with parity 2: the model's barrier passed any parity that
#      is not its phase's, so the wait returned at once and every check held; on the machine
#      try_wait.parity reads the low bit (0) and a fresh barrier never completes that phase: a
#      hang. The model now takes only the int 0 or 1 (class 1).
# ruff: noqa  (known-wrong on purpose)
"""ch02 producer: the first lap 'waits' on empty with parity 2, which no mbarrier phase has (real
try_wait.parity reads the low bit: 0, a wait for phase 0 of a fresh `empty`, which never completes
on the first lap: a deadlock on hardware). The model's MBarrier.passes(2) is always True."""


def producer(cta):
    me = cta.producer_name
    cta.load_q(me)
    ring = cta.k
    block = cta.cfg.block_n * cta.cfg.headdim * cta.el
    for j in range(cta.n_blocks):
        s, lap = j % ring.stages, j // ring.stages
        yield from cta.wait(me, ring.empty[s], 2 if lap == 0 else (lap & 1) ^ 1)
        ring.full[s].expect(2 * block)
        cta.tma_copy(me, "load K", block, ring.full[s], cta.tile("kv", j))
        cta.tma_copy(me, "load V", block, ring.full[s], cta.tile("kv", j))
