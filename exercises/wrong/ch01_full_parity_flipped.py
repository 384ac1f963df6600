# exercise: ch01_ring
# file: ring.py
# loses: test_a_ring_runs_on_your_functions, test_odd_and_deep_rings, test_every_depth_and_many_laps
# bug: the consumers wait on `full` for the opposite parity: the fresh barrier passes it at once,
#      so they read slots whose copies are still in flight.
# ruff: noqa  (known-wrong on purpose)


def _p(j, tile, n_blocks):
    """The stream position: K_0, K_1, V_0, K_2, V_1, ..., V_{n-1}."""
    if tile == "K":
        return max(2 * j - 1, 0)
    return min(2 * j + 2, 2 * n_blocks - 1)


def slot(j, tile, stages, n_blocks):
    return _p(j, tile, n_blocks) % stages


def full_parity(j, tile, stages, n_blocks):
    return ((_p(j, tile, n_blocks) // stages) & 1) ^ 1


def empty_parity(j, tile, stages, n_blocks):
    return ((_p(j, tile, n_blocks) // stages) & 1) ^ 1
