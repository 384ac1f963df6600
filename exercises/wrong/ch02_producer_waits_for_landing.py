# exercise: ch02_producer
# file: producer.py
# loses: test_consumers_not_starved, test_three_stages
# bug: waits on the slot's full barrier after each fill, as a one-slot loop would: the ring never
#      has two fills in flight, so the consumers wait on every block.
# ruff: noqa  (known-wrong on purpose)


def producer(cta):
    me, ring = cta.producer_name, cta.k
    cta.load_q(me)
    block = cta.cfg.block_n * cta.cfg.headdim * cta.el
    for j in range(cta.n_blocks):
        s, ph = j % ring.stages, (j // ring.stages) & 1
        yield from cta.wait(me, ring.empty[s], ph ^ 1)
        ring.full[s].expect(2 * block)
        cta.tma_copy(me, "load K", block, ring.full[s], cta.tile("kv", j))
        cta.tma_copy(me, "load V", block, ring.full[s], cta.tile("kv", j))
        yield from cta.wait(me, ring.full[s], ph)
