# exercise: ch01_ring
# file: ring.py
# loses: test_every_depth_and_many_laps
# bug: computes the stream positions in int16 (the width a device-side table of them would
#      have): right while 2j + 2 fits in 16 bits, i.e. for fewer than 16384 blocks; past that the
#      arithmetic wraps (at 2 and 4 stages the slot and the parities survive a wrap by 65536, at 3
#      they do not), and past 32767 blocks numpy refuses the block number. Only a question about
#      a stream of tens of thousands of blocks finds it.
# ruff: noqa  (known-wrong on purpose)
import numpy as np


def position(j, tile, n_blocks):
    j = np.int16(j)
    if tile == "K":
        return np.int16(2) * j - np.int16(1) if j > 0 else np.int16(0)
    if j < n_blocks - 1:
        return np.int16(2) * j + np.int16(2)
    return np.int16(2) * np.int16(n_blocks) - np.int16(1)


def slot(j, tile, stages, n_blocks):
    return int(position(j, tile, n_blocks) % np.int16(stages))


def full_parity(j, tile, stages, n_blocks):
    return int((position(j, tile, n_blocks) // np.int16(stages)) & 1)


def empty_parity(j, tile, stages, n_blocks):
    return full_parity(j, tile, stages, n_blocks) ^ 1
