"""The tile table the kernels launch with, read from the repository's sim/tiles.json (the one table
the model reads too: a data file, so the kernels import nothing of the model's). No torch, no
Triton: the CUDA twins read it as well as the Gluon kernels.

`TILES[table]["full" or "causal"][head_dim]` is a `Tile`; `TILES[table]["stages"]` the ring depth.
Tables: "fa3" (FlashAttention-3's own tiles), "fa2" (FlashAttention-2's), "gluon" (our Gluon
kernels': FA3's with block_n rounded to a power of two)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

TILES_FILE = Path(__file__).resolve().parents[1] / "sim" / "tiles.json"  # data, not an import


class Tile(NamedTuple):
    block_m: int  # rows of Q per CTA
    block_n: int  # rows of K/V per block
    consumers: int  # consumer warpgroups


def read_tiles(path: Path = TILES_FILE) -> dict[str, dict]:
    """tiles.json as {table: {part: {head_dim: Tile}, other key: its value}}."""
    raw = json.loads(path.read_text())
    return {name: {part: ({int(d): Tile(**t) for d, t in value.items()}
                          if isinstance(value, dict) else value)
                   for part, value in table.items()}
            for name, table in raw.items() if isinstance(table, dict)}


TILES = read_tiles()
