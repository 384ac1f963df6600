# exercise: ch02_producer
# file: producer.py
# loses: test_bytes_expected_equal_bytes_copied, test_three_stages
# bug: issues the two copies before it announces their bytes on the full barrier (the model's
#      mbarrier, like the course's kernels, wants the expect first).
# ruff: noqa  (known-wrong on purpose)


def producer(cta):
    me, ring = cta.producer_name, cta.k
    cta.load_q(me)
    block = cta.cfg.block_n * cta.cfg.headdim * cta.el
    for j in range(cta.n_blocks):
        s = j % ring.stages
        yield from cta.wait(me, ring.empty[s], ((j // ring.stages) & 1) ^ 1)
        cta.tma_copy(me, "load K", block, ring.full[s], cta.tile("kv", j))
        cta.tma_copy(me, "load V", block, ring.full[s], cta.tile("kv", j))
        ring.full[s].expect(2 * block)
