# exercise: ch01_ring
# file: ring.py
# loses: test_slots_in_stream_order, test_odd_and_deep_rings, test_every_depth_and_many_laps
# bug: a 4-stage ring fills its slots in the order 0, 2, 1, 3, 0, 2, 1, 3, ... (2 and 3 stages
#      right). The parities are each lap's, so the ring runs by every rule and in a right ring's
#      cycles (its slots are alike), but the tiles are not in stream order: the slot test and
#      every 4-stage run (slots read from the log) see it.
# ruff: noqa  (known-wrong on purpose)


def _p(j, tile, n_blocks):
    """The stream position: K_0, K_1, V_0, K_2, V_1, ..., V_{n-1}."""
    if tile == "K":
        return max(2 * j - 1, 0)
    return min(2 * j + 2, 2 * n_blocks - 1)


PERM4 = (0, 2, 1, 3)


def slot(j, tile, stages, n_blocks):
    p = _p(j, tile, n_blocks) % stages
    return PERM4[p] if stages == 4 else p


def full_parity(j, tile, stages, n_blocks):
    return (_p(j, tile, n_blocks) // stages) & 1


def empty_parity(j, tile, stages, n_blocks):
    return ((_p(j, tile, n_blocks) // stages) & 1) ^ 1
