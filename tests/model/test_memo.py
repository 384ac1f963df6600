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
