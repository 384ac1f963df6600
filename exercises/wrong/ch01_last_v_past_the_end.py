# exercise: ch01_ring
# file: ring.py
# loses: all
# bug: V_j at position 2j + 2 for every block, the last one included: V_{n-1}, which closes the
#      stream at 2n - 1, is put one position past the end. Over one block V_0 and K_0 then share
#      slot 0 in 2 stages; over more the ring still runs (the last slot's laps stay in step), but
#      the last tile is not where the ring puts it (the slot test, and every run's log).
# ruff: noqa  (known-wrong on purpose)


def _p(j, tile, n_blocks):
    return max(2 * j - 1, 0) if tile == "K" else 2 * j + 2


def slot(j, tile, stages, n_blocks):
    return _p(j, tile, n_blocks) % stages


def full_parity(j, tile, stages, n_blocks):
    return (_p(j, tile, n_blocks) // stages) & 1


def empty_parity(j, tile, stages, n_blocks):
    return ((_p(j, tile, n_blocks) // stages) & 1) ^ 1
