# exercise: ch01_ring
# file: producer.py
# loses: test_no_overwrite_before_release, test_runs_to_the_end, test_predicted_time, test_three_stages
# bug: never waits on the empty barrier, so the second lap claims a slot the consumers still read
#      (the model then stops: an expect on a barrier whose phase is still pending).
# ruff: noqa  (known-wrong on purpose)


def producer(cta):
    me = cta.producer_name
    cta.load_q(me)
    nbytes = cta.cfg.block_n * cta.cfg.headdim * cta.el
    for j in range(cta.n_blocks):
        for ring, op in ((cta.k, "load K"), (cta.v, "load V")):
            s = j % ring.stages
            ring.full[s].expect(nbytes)
            cta.tma_copy(me, op, nbytes, ring.full[s], cta.tile("kv", j))
            yield cta.delay(0)
