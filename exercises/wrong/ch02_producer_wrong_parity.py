# exercise: ch02_producer
# file: producer.py
# loses: test_runs_to_the_end, test_no_read_before_land, test_bytes_expected_equal_bytes_copied, test_no_refill_before_release, test_consumers_not_starved, test_three_stages
# bug: waits on empty with the block's own parity: the first lap waits for a release that
#      never comes, and the CTA deadlocks. Nothing is copied, so no ring test can pass either.
# ruff: noqa  (known-wrong on purpose)


def producer(cta):
    me, ring = cta.producer_name, cta.k
    cta.load_q(me)
    block = cta.cfg.block_n * cta.cfg.headdim * cta.el
    for j in range(cta.n_blocks):
        s = j % ring.stages
        yield from cta.wait(me, ring.empty[s], (j // ring.stages) & 1)
        ring.full[s].expect(2 * block)
        cta.tma_copy(me, "load K", block, ring.full[s], cta.tile("kv", j))
        cta.tma_copy(me, "load V", block, ring.full[s], cta.tile("kv", j))
