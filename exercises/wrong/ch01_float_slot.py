# exercise: ch01_ring
# file: ring.py
# loses: all
# bug: returns the slot and parities as floats (2.0 for 2): a value of the wrong form, which a
#      plain == would let through.
# ruff: noqa  (known-wrong on purpose)


def _p(j, tile, n_blocks):
    """The stream position: K_0, K_1, V_0, K_2, V_1, ..., V_{n-1}."""
    if tile == "K":
        return max(2 * j - 1, 0)
    return min(2 * j + 2, 2 * n_blocks - 1)


def slot(j, tile, stages, n_blocks):
    return float(_p(j, tile, n_blocks) % stages)


def full_parity(j, tile, stages, n_blocks):
    return float((_p(j, tile, n_blocks) // stages) & 1)


def empty_parity(j, tile, stages, n_blocks):
    return float(((_p(j, tile, n_blocks) // stages) & 1) ^ 1)
