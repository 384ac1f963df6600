# exercise: ch01_ring
# file: ring.py
# loses: all
# bug: puts the stream one slot further on (slot 1 first). The ring still runs (every slot keeps
#      its own laps in step with its phases), but the tiles are not where the ring says: the slot
#      test fails, and every run, whose copies' slots are read from the log.
# ruff: noqa  (known-wrong on purpose)


def _p(j, tile, n_blocks):
    """The stream position: K_0, K_1, V_0, K_2, V_1, ..., V_{n-1}."""
    if tile == "K":
        return max(2 * j - 1, 0)
    return min(2 * j + 2, 2 * n_blocks - 1)


def slot(j, tile, stages, n_blocks):
    return (_p(j, tile, n_blocks) + 1) % stages


def full_parity(j, tile, stages, n_blocks):
    return (_p(j, tile, n_blocks) // stages) & 1


def empty_parity(j, tile, stages, n_blocks):
    return ((_p(j, tile, n_blocks) // stages) & 1) ^ 1
