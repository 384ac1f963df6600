# exercise: ch01_ring
# file: ring.py
# loses: test_every_depth_and_many_laps
# bug: the parities read from a table of the first 16 laps (0, 1, 0, 1, ...), then 0 on `full`
#      and 1 on `empty` for every later lap: right through lap 16, then lap 17's producer passes
#      `empty` on lap 15's release and refills a slot the consumers still hold (the run stops).
#      No public test reaches lap 16.
# ruff: noqa  (known-wrong on purpose)


def _p(j, tile, n_blocks):
    """The stream position: K_0, K_1, V_0, K_2, V_1, ..., V_{n-1}."""
    if tile == "K":
        return max(2 * j - 1, 0)
    return min(2 * j + 2, 2 * n_blocks - 1)


LAP_PARITY = [0, 1] * 8            # 16 laps, worked out by hand


def slot(j, tile, stages, n_blocks):
    return _p(j, tile, n_blocks) % stages


def full_parity(j, tile, stages, n_blocks):
    lap = _p(j, tile, n_blocks) // stages
    return LAP_PARITY[lap] if lap < len(LAP_PARITY) else 0


def empty_parity(j, tile, stages, n_blocks):
    lap = _p(j, tile, n_blocks) // stages
    return LAP_PARITY[lap] ^ 1 if lap < len(LAP_PARITY) else 1
