# exercise: ch02_producer
# file: producer.py
# loses: test_runs_to_the_end, test_bytes_expected_equal_bytes_copied, test_consumers_not_starved, test_three_stages
# bug: one expect per tile, as with two rings: the slot's full barrier expects one arrival per
#      phase, so the second expect is an arrival past its count (the model stops there).
# ruff: noqa  (known-wrong on purpose)


def producer(cta):
    me, ring = cta.producer_name, cta.k
    cta.load_q(me)
    block = cta.cfg.block_n * cta.cfg.headdim * cta.el
    for j in range(cta.n_blocks):
        s = j % ring.stages
        yield from cta.wait(me, ring.empty[s], ((j // ring.stages) & 1) ^ 1)
        for op in ("load K", "load V"):
            ring.full[s].expect(block)
            cta.tma_copy(me, op, block, ring.full[s], cta.tile("kv", j))
