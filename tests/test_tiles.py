"""One table of tiles and ring depths (sim/tiles.json), one naming, read by the model
(`sim.config.TILES`) and by the kernels (`kernels.attention.host.TILES`) without either
importing the other; fidelity asks the model (`sim.config.kernel_tile`)."""
from __future__ import annotations

import json

import pytest

from sim import AttentionConfig
from sim.config import TILES, TILES_FILE, Tile, kernel_tile, read_tiles, tile

FIELDS = {"block_m", "block_n", "consumers"}


def test_the_table_has_one_naming():
    raw = json.loads(TILES_FILE.read_text())
    assert set(raw) == {"about", "fa3", "fa2", "gluon"}
    for name, table in ((k, v) for k, v in raw.items() if k != "about"):
        assert isinstance(table["stages"], int) and table["stages"] >= 1, name
        parts = {k: v for k, v in table.items() if isinstance(v, dict)}
        assert "full" in parts, name
        for part, rows in parts.items():
            assert sorted(map(int, rows)) == [64, 128, 256], (name, part)
            for d, t in rows.items():
                assert set(t) == FIELDS, (name, part, d)


def test_the_kernels_read_the_same_table():
    from kernels import cuda, tiles

    assert tiles.TILES_FILE == TILES_FILE
    assert tiles.TILES == TILES
    assert tiles.Tile._fields == Tile._fields
    assert cuda.FA3_TILES == {d: (t.block_m, t.block_n) for d, t in TILES["fa3"]["full"].items()}


def test_the_gluon_kernels_launch_from_that_table():
    pytest.importorskip("triton")
    from kernels.attention import host

    assert host.TILES is __import__("kernels.tiles", fromlist=["TILES"]).TILES
    assert host.STAGES_DEFAULT == TILES["gluon"]["stages"]


def test_each_kernel_config_is_the_models_kernel_tile():
    """What `kernels.attention.config` launches by default is what fidelity predicts it at."""
    pytest.importorskip("triton")
    from kernels.attention import VARIANTS, config

    for variant in VARIANTS:
        for d in (64, 128, 256):
            for causal in (False, True):
                c = config(variant, d, causal)
                assert Tile(c.BM, c.BN, c.consumers) == kernel_tile(variant, d, causal)
                assert c.stages == (1 if variant == "sequential" else TILES["gluon"]["stages"])


def test_gluon_tiles_are_fa3s_rounded_to_powers_of_two():
    for d in (64, 128, 256):
        fa3, ours = tile("fa3", d), tile("gluon", d)
        assert ours.block_m == fa3.block_m and ours.consumers == fa3.consumers
        assert ours.block_n == 1 << (fa3.block_n.bit_length() - 1)


def test_the_model_takes_fa3s_tiles_by_default():
    for d, causal in ((128, False), (128, True), (256, False), (64, True)):
        c = AttentionConfig(headdim=d, causal=causal).resolved()
        assert (c.block_m, c.block_n, c.consumers) == tile("fa3", d, causal)
        assert c.stages == TILES["fa3"]["stages"]
    c = AttentionConfig(headdim=256, variant="fa2").resolved()
    assert (c.block_m, c.block_n, c.consumers) == tile("fa2", 256)


def test_a_change_to_the_file_reaches_the_reader(tmp_path):
    import json
    f = tmp_path / "tiles.json"
    raw = json.loads(TILES_FILE.read_text())
    raw["fa3"]["causal"]["128"]["block_n"] = 64
    f.write_text(json.dumps(raw))
    changed = read_tiles(f)
    assert changed != TILES
    assert changed["fa3"]["causal"][128] == Tile(128, 64, 2)
