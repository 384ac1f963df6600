# exercise: ch02_producer
# file: producer.py
# loses: test_runs_to_the_end, test_no_read_before_land, test_three_stages
# bug: block j goes to slot (j + 1) % stages, so a consumer reads block j from a slot that holds
#      another block.
# ruff: noqa  (known-wrong on purpose)


def producer(cta):
    me, ring = cta.producer_name, cta.k
    cta.load_q(me)
    block = cta.cfg.block_n * cta.cfg.headdim * cta.el
    for j in range(cta.n_blocks):
        s = (j + 1) % ring.stages
        yield from cta.wait(me, ring.empty[s], ((j // ring.stages) & 1) ^ 1)
        ring.full[s].expect(2 * block)
        cta.tma_copy(me, "load K", block, ring.full[s], cta.tile("kv", j))
        cta.tma_copy(me, "load V", block, ring.full[s], cta.tile("kv", j))
