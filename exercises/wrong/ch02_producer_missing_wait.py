# exercise: ch02_producer
# file: producer.py
# loses: test_runs_to_the_end, test_no_refill_before_release, test_consumers_not_starved, test_three_stages
# bug: never waits on the empty barrier, so the second lap claims a slot the consumers still read
#      (the model then stops: an arrival past the expected count on a full barrier still pending).
# ruff: noqa  (known-wrong on purpose)


def producer(cta):
    me, ring = cta.producer_name, cta.k
    cta.load_q(me)
    block = cta.cfg.block_n * cta.cfg.headdim * cta.el
    for j in range(cta.n_blocks):
        s = j % ring.stages
        ring.full[s].expect(2 * block)
        cta.tma_copy(me, "load K", block, ring.full[s], cta.tile("kv", j))
        cta.tma_copy(me, "load V", block, ring.full[s], cta.tile("kv", j))
        yield cta.delay(0)
