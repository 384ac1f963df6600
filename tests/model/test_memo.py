"""sim/memo.py: a result read back from SIM_CACHE_DIR is the one the model computes, and only an
identical call on identical model code reads it."""
from __future__ import annotations

import pickle
import shutil

import pytest

from sim import H100, memo
from sim.attention import prepare, simulate
from sim.config import AttentionConfig
from sim.trace import UNITS, Trace

CFG = prepare(AttentionConfig(variant="fa3", headdim=128, seqlen=1024), H100)


def _entries(folder):
    return sorted(folder.glob("*.pickle"))


def test_off_without_the_variable(tmp_path, monkeypatch):
    monkeypatch.delenv(memo.ENV, raising=False)
    simulate(CFG, H100, 3)
    assert not list(tmp_path.iterdir())


def test_a_kept_result_is_the_computed_one_and_is_read_back(tmp_path, monkeypatch):
    fresh = simulate(CFG, H100, 3)
    monkeypatch.setenv(memo.ENV, str(tmp_path))
    first = simulate(CFG, H100, 3)
    (entry,) = _entries(tmp_path)
    assert first[0] == fresh[0] and first[1].intervals == fresh[1].intervals
    assert first[1].marks == fresh[1].marks and first[1].waits == fresh[1].waits
    entry.write_bytes(pickle.dumps(("read back", Trace())))     # the second call must read it
    assert simulate(CFG, H100, 3)[0] == "read back"


def test_a_kept_trace_answers_its_sums_before_its_intervals_are_read(tmp_path, monkeypatch):
    clk, fresh = simulate(CFG, H100, 3)
    monkeypatch.setenv(memo.ENV, str(tmp_path))
    simulate(CFG, H100, 3)                                  # computed and kept
    _, kept = simulate(CFG, H100, 3)                        # read back
    assert isinstance(kept, memo.KeptTrace)
    (traces,) = tmp_path.glob("*.trace1")
    traces.rename(tmp_path / "away")                        # its intervals are not at hand now
    assert kept.utilization(clk) == fresh.utilization(clk)  # the same sums, bit for bit
    assert kept.span == fresh.span
    assert [kept.busy_time(u) for u in UNITS] == [fresh.busy_time(u) for u in UNITS]
    with pytest.raises(FileNotFoundError):
        kept.intervals
    (tmp_path / "away").rename(traces)
    assert kept == fresh and fresh == kept and kept.idle_gaps("tensor") == fresh.idle_gaps("tensor")
    plain = pickle.loads(pickle.dumps(kept))                # hands on as the trace it stands for
    assert type(plain) is Trace and plain == fresh


def test_another_argument_or_another_model_is_a_miss(tmp_path, monkeypatch):
    monkeypatch.setenv(memo.ENV, str(tmp_path))
    simulate(CFG, H100, 3)
    simulate(CFG, H100, 4)
    simulate(CFG, H100.with_(clock_hz=H100.clock_hz * 0.9), 3)
    assert len(_entries(tmp_path)) == 3
    monkeypatch.setattr(memo, "code_digest", lambda: "an edited model")
    simulate(CFG, H100, 3)
    assert len(_entries(tmp_path)) == 4


def test_a_call_that_fills_its_own_trace_is_not_kept(tmp_path, monkeypatch):
    monkeypatch.setenv(memo.ENV, str(tmp_path))
    mine = Trace()
    clk, trace = simulate(CFG, H100, 3, 0, mine)
    assert trace is mine and mine.intervals and not _entries(tmp_path)


@pytest.mark.parametrize("edited", ["engine.py", "attention/fa3.py", "tiles.json"])
def test_an_edit_to_any_model_file_changes_the_digest(tmp_path, monkeypatch, edited):
    copy = tmp_path / "sim"
    shutil.copytree(memo.SIM, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(memo, "SIM", copy)
    memo.code_digest.cache_clear()
    before = memo.code_digest()
    with open(copy / edited, "a") as f:
        f.write("\n")
    memo.code_digest.cache_clear()
    try:
        assert memo.code_digest() != before
    finally:
        memo.code_digest.cache_clear()


@pytest.mark.parametrize("bad", [None, ""])
def test_an_empty_variable_is_off(tmp_path, monkeypatch, bad):
    monkeypatch.chdir(tmp_path)
    if bad is None:
        monkeypatch.delenv(memo.ENV, raising=False)
    else:
        monkeypatch.setenv(memo.ENV, bad)
    simulate(CFG, H100, 2)
    assert not list(tmp_path.iterdir())


def test_another_simpy_changes_the_digest(monkeypatch):
    import simpy

    before = memo.code_digest()
    monkeypatch.setattr(simpy, "__version__", simpy.__version__ + ".post1")
    memo.code_digest.cache_clear()
    try:
        assert memo.code_digest() != before
    finally:
        memo.code_digest.cache_clear()


def test_the_users_folder_is_one_a_model_and_old_ones_go(tmp_path, monkeypatch):
    """``user_folder``: under $XDG_CACHE_HOME, named by the model's digest; another model's
    folder untouched for a day is removed, a younger one (a run in progress elsewhere) kept."""
    import os
    import time

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    base = tmp_path / "hopper-ws-course" / "sim"
    old, young = base / "0ld", base / "y0ung"
    for d in (old, young):
        d.mkdir(parents=True)
        (d / "x.pickle").write_bytes(b"")
    day_ago = time.time() - memo.STALE_S - 60
    os.utime(old, (day_ago, day_ago))
    mine = memo.user_folder()
    assert mine == base / memo.code_digest()[:16] and mine.is_dir()
    assert not old.exists() and (young / "x.pickle").exists()
    os.utime(mine, (day_ago, day_ago))
    assert memo.user_folder() == mine and time.time() - mine.stat().st_mtime < 60  # in use


def test_the_suite_keeps_the_models_results():
    """No monkeypatch here: the session's own setting (tests/conftest.py) names a folder, the
    user's cache one (``user_folder``) unless the caller named another."""
    import os
    from pathlib import Path

    folder = os.environ.get(memo.ENV)
    assert folder and Path(folder).is_dir()


def test_the_users_folder_is_emptied_past_its_size(tmp_path, monkeypatch):
    import os
    import time

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(memo, "KEPT_BYTES", 1000)
    mine = memo.user_folder()
    (mine / "a.pickle").write_bytes(b"x" * 600)
    assert memo.user_folder() == mine and (mine / "a.pickle").exists()
    (mine / "b.pickle").write_bytes(b"x" * 600)
    assert memo.user_folder() == mine and (mine / "b.pickle").exists()  # a run may be reading
    hour_ago = time.time() - 3600
    os.utime(mine, (hour_ago, hour_ago))
    assert memo.user_folder() == mine and mine.is_dir() and not any(mine.iterdir())
