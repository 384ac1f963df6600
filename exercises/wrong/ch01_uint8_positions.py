# exercise: ch01_ring
# file: ring.py
# loses: test_every_depth_and_many_laps
# bug: keeps the stream positions in a uint8 table: right while the stream has at most 256 tiles
#      (128 blocks, beyond every run the tests make), then positions wrap mod 256; at 2 and 4
#      stages the slot and the parities survive the wrap (256 is a multiple of 4), at 3 stages they
#      do not (130 blocks: 4 tiles in the wrong slot). Only a question about a long stream finds it.
# ruff: noqa  (known-wrong on purpose)
import numpy as np


def _stream_positions(n_blocks):
    order = [(0, "K")] + [x for j in range(1, n_blocks) for x in ((j, "K"), (j - 1, "V"))] + \
        [(n_blocks - 1, "V")]
    pos = np.arange(len(order)).astype(np.uint8)           # compact table: positions mod 256
    return {jt: pos[i] for i, jt in enumerate(order)}


def position(j, tile, n_blocks):
    return _stream_positions(n_blocks)[(j, tile)]


def slot(j, tile, stages, n_blocks):
    return int(position(j, tile, n_blocks) % np.uint8(stages))


def full_parity(j, tile, stages, n_blocks):
    return int((position(j, tile, n_blocks) // np.uint8(stages)) & 1)


def empty_parity(j, tile, stages, n_blocks):
    return full_parity(j, tile, stages, n_blocks) ^ 1
