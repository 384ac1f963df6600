# exercise: ch01_ring
# file: ring.py
# loses: test_slots_in_stream_order, test_odd_and_deep_rings, test_every_depth_and_many_laps
# bug: the slot as a bit mask, p & (stages - 1): right for 2 and 4 stages, wrong for 3 (and the
#      parity then no longer follows the slot's own fills).
# ruff: noqa  (known-wrong on purpose)


def _p(j, tile, n_blocks):
    """The stream position: K_0, K_1, V_0, K_2, V_1, ..., V_{n-1}."""
    if tile == "K":
        return max(2 * j - 1, 0)
    return min(2 * j + 2, 2 * n_blocks - 1)


def slot(j, tile, stages, n_blocks):
    return _p(j, tile, n_blocks) & (stages - 1)


def full_parity(j, tile, stages, n_blocks):
    return (_p(j, tile, n_blocks) // stages) & 1


def empty_parity(j, tile, stages, n_blocks):
    return ((_p(j, tile, n_blocks) // stages) & 1) ^ 1
