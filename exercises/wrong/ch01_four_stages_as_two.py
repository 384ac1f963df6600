# exercise: ch01_ring
# file: ring.py
# loses: test_slots_in_stream_order, test_every_depth_and_many_laps
# bug: a 4-stage ring run as a 2-stage one (slots 0 and 1 only, laps of two tiles; 2 and 3 stages
#      right). It breaks no rule of the run, and over one block (the public 4-stage run) its two
#      tiles are where a 4-stage ring puts them; over more, the tiles are not in stream order and
#      the ring is slower.
# ruff: noqa  (known-wrong on purpose)


def _p(j, tile, n_blocks):
    """The stream position: K_0, K_1, V_0, K_2, V_1, ..., V_{n-1}."""
    if tile == "K":
        return max(2 * j - 1, 0)
    return min(2 * j + 2, 2 * n_blocks - 1)


def _st(stages):
    return 2 if stages == 4 else stages


def slot(j, tile, stages, n_blocks):
    return _p(j, tile, n_blocks) % _st(stages)


def full_parity(j, tile, stages, n_blocks):
    return (_p(j, tile, n_blocks) // _st(stages)) & 1


def empty_parity(j, tile, stages, n_blocks):
    return full_parity(j, tile, stages, n_blocks) ^ 1
