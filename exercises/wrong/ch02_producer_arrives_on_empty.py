# exercise: ch02_producer
# file: producer.py
# loses: test_runs_to_the_end, test_no_read_before_land, test_no_refill_before_release, test_consumers_not_starved, test_three_stages
# bug: the producer adds an arrive of its own on the slot's `empty` barrier before it waits (as if
#      it were one of the two consumers), so the phase completes at the first consumer's release
#      and the slot is refilled while the second may still read it. Counted in completed phases
#      of `empty`, not in the consumers' own arrivals, the refill looked released.
# ruff: noqa  (known-wrong on purpose)


def producer(cta):
    me = cta.producer_name
    cta.load_q(me)
    ring = cta.k
    block = cta.cfg.block_n * cta.cfg.headdim * cta.el
    for j in range(cta.n_blocks):
        s, lap = j % ring.stages, j // ring.stages
        if lap > 0:
            ring.empty[s].arrive()                    # "one release is enough"
            yield from cta.wait(me, ring.empty[s], (lap - 1) & 1)
        ring.full[s].expect(2 * block)
        cta.tma_copy(me, "load K", block, ring.full[s], cta.tile("kv", j))
        cta.tma_copy(me, "load V", block, ring.full[s], cta.tile("kv", j))
