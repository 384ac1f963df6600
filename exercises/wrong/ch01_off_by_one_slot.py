# exercise: ch01_ring
# file: producer.py
# loses: test_no_read_before_land, test_predicted_time, test_three_stages
# bug: block j goes to slot (j + 1) % stages, so a consumer reads block j from a slot that holds
#      another block.
# ruff: noqa  (known-wrong on purpose)


def producer(cta):
    me = cta.producer_name
    cta.load_q(me)
    nbytes = cta.cfg.block_n * cta.cfg.headdim * cta.el
    for j in range(cta.n_blocks):
        for ring, op in ((cta.k, "load K"), (cta.v, "load V")):
            s = (j + 1) % ring.stages
            phase = (j // ring.stages) & 1
            yield from cta.wait(me, ring.empty[s], phase ^ 1)
            ring.full[s].expect(nbytes)
            cta.tma_copy(me, op, nbytes, ring.full[s], cta.tile("kv", j))
