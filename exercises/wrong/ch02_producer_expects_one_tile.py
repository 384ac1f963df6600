# exercise: ch02_producer
# file: producer.py
# loses: test_runs_to_the_end, test_bytes_expected_equal_bytes_copied, test_consumers_not_starved, test_three_stages
# bug: announces one tile's bytes for the two copies: the slot's phase completes when K_j lands,
#      the consumers wake with V_j still in flight, and V_j's bytes land on a completed phase.
# ruff: noqa  (known-wrong on purpose)


def producer(cta):
    me, ring = cta.producer_name, cta.k
    cta.load_q(me)
    block = cta.cfg.block_n * cta.cfg.headdim * cta.el
    for j in range(cta.n_blocks):
        s = j % ring.stages
        yield from cta.wait(me, ring.empty[s], ((j // ring.stages) & 1) ^ 1)
        ring.full[s].expect(block)
        cta.tma_copy(me, "load K", block, ring.full[s], cta.tile("kv", j))
        cta.tma_copy(me, "load V", block, ring.full[s], cta.tile("kv", j))
