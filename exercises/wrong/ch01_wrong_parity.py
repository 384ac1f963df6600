# exercise: ch01_ring
# file: producer.py
# loses: test_runs_to_the_end, test_no_read_before_land, test_no_overwrite_before_release, test_predicted_time, test_three_stages
# bug: waits on empty with the block's own parity: the first lap waits for a release that
#      never comes, and the CTA deadlocks. Nothing is copied, so no ring test can pass either.
# ruff: noqa  (known-wrong on purpose)


def producer(cta):
    me = cta.producer_name
    cta.load_q(me)
    nbytes = cta.cfg.block_n * cta.cfg.headdim * cta.el
    for j in range(cta.n_blocks):
        for ring, op in ((cta.k, "load K"), (cta.v, "load V")):
            s, phase = j % ring.stages, (j // ring.stages) & 1
            yield from cta.wait(me, ring.empty[s], phase)
            ring.full[s].expect(nbytes)
            cta.tma_copy(me, op, nbytes, ring.full[s], cta.tile("kv", j))
