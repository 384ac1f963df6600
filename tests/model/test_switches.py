"""The overlapped schedules' switches (`AttentionConfig.switches`, the kernels' `softmax=` names
that move or drop a step): what they change in the model's run, and what they refuse. The step
order against the kernel's is `test_pairs.py`'s."""
import pytest

from sim import attention
from sim.config import PERSISTENT_SWITCHES, SCHEDULE_SWITCHES, AttentionConfig
from sim.hardware import H200

BLOCKS = 8


def run(switches=(), variant="fa3"):
    cfg = attention.prepare(AttentionConfig(variant=variant, block_n=128, switches=switches), H200)
    return attention.simulate(cfg, H200, BLOCKS)[1]


def span(trace, actor, op):
    """`actor`'s `op` by block: (first start, last end) over its intervals."""
    out: dict = {}
    for i in trace.intervals:
        if i.actor == actor and i.op == op:
            a, b = out.get(i.tile[1], (i.start, i.end))
            out[i.tile[1]] = (min(a, i.start), max(b, i.end))
    return out


@pytest.mark.parametrize("variant", ["fa3", "overlap"])
def test_rescale_early_runs_under_the_next_qk(variant):
    """Block j's rescale of O runs before Q·K_{j+1}ᵀ is issued, after P_{j-1}·V_{j-1} (the
    default), or once Q·K_{j+1}ᵀ is on the tensor core (rescale_early); before P_j·V_j either way."""
    for switches in ((), ("rescale_early",)):
        tr = run(switches, variant)
        resc, qk, pv = (span(tr, "consumer0", op) for op in ("rescale O", "QKᵀ", "PV"))
        for j in range(2, BLOCKS - 1):
            assert resc[j][1] <= pv[j][0]
            if switches:
                assert resc[j][0] >= qk[j + 1][0], (switches, j)
            else:
                assert pv[j - 1][1] <= resc[j][0] and resc[j][1] <= qk[j + 1][0], (switches, j)


def test_no_turns_drops_the_waits_for_a_turn():
    """With turns the consumers wait for theirs (pingpong's order); without, nobody does."""
    def turn_waits(tr):
        return sum(what == "turn" for _, what, _, _ in tr.waits)
    assert turn_waits(run()) > 0
    assert turn_waits(run(("no_turns",))) == 0


@pytest.mark.parametrize("variant", ["fa3", "overlap"])
def test_cond_rescale_leaves_the_rescale_without_work(variant):
    """cond_rescale: the rescale step is taken (as in the kernel, which branches over its FMULs)
    but does no work, so no "rescale O" on the FMA pipe; with it the consumer's run is no longer."""
    plain, cond = run((), variant), run(("cond_rescale",), variant)
    assert span(plain, "consumer0", "rescale O")
    assert not span(cond, "consumer0", "rescale O")
    assert cond.span <= plain.span


@pytest.mark.parametrize("cfg, words", [
    ({"variant": "fa3", "switches": ("tree_max",)}, "not one the model takes"),
    ({"variant": "overlap", "switches": ("no_turns",)}, "applies to fa3"),
    ({"variant": "ws", "switches": ("rescale_early",)}, "applies to overlap and fa3"),
    ({"variant": "fa3", "persistent": True, "switches": ("rescale_early",)}, "not persistent"),
    ({"variant": "ws", "switches": ("cond_rescale",)}, "applies to overlap and fa3"),
    ({"variant": "fa3", "switches": ("rescale_early", "cond_rescale")}, "do not go together"),
])
def test_switches_refused_where_the_kernel_has_none(cfg, words):
    with pytest.raises(ValueError, match=words):
        attention.prepare(AttentionConfig(**cfg), H200)


def test_every_switch_is_the_kernels():
    """The model takes only names the kernel's launcher knows (kernels/attention/host.py)."""
    host = pytest.importorskip("kernels.attention.host")
    assert set(SCHEDULE_SWITCHES) <= set(host.SOFTMAX_SWITCHES)


def test_persistent_switches_are_the_persistent_kernels():
    """The persistent model takes only switches the persistent kernel builds
    (kernels/attention/host.py PERSISTENT_SOFTMAX)."""
    host = pytest.importorskip("kernels.attention.host")
    assert set(PERSISTENT_SWITCHES) <= set(host.PERSISTENT_SOFTMAX) & set(SCHEDULE_SWITCHES)


def test_the_cli_takes_the_benchs_names(capsys):
    """`python -m sim predict --variant fa3+no_turns`: the names kernels' bench runs."""
    from sim.__main__ import main
    assert main(["predict", "--hardware", "h200", "--variant", "fa3+no_turns", "--block-n", "128",
                 "--seqlen", "1024", "--batch", "1", "--heads", "2"]) == 0
    assert "attention fa3+no_turns on h200" in capsys.readouterr().out
    assert main(["predict", "--variant", "fa3+lane_sum"]) != 0
    assert "'lane_sum' is not one the model takes" in capsys.readouterr().err


def test_one_release_gives_k_back_with_v():
    """one_release: after block 0, every arrive on K's empty barrier is made at the moment of an
    arrive on V's (one arrive in the kernel: K_j's slot with V_{j-1}'s, after P·V's wait); by
    default K_j's goes back after the scores' wait, on its own."""
    from sim import event_dict, simulate

    def k_with_v(switches):
        run = simulate(AttentionConfig(variant="fa3", block_n=128, switches=switches), H200,
                       n_blocks=BLOCKS)
        arrives = [e for e in map(event_dict, run.events) if e["kind"] == "arrive"]
        v = {e["t"] for e in arrives if e["barrier"].startswith("v.empty")}
        k = [e["t"] for e in arrives if e["barrier"].startswith("k.empty")][2:]   # block 0's
        return sum(t in v for t in k), len(k)
    together, n = k_with_v(("one_release",))
    assert together == n > 0
    together, n = k_with_v(())
    assert together == 0 < n


def test_live_half_halves_warpgroup_0s_diagonal_softmax():
    """live_half, causal at BM = BN = 128 with two consumers: warpgroup 0's softmax of the
    diagonal block (the tile's last, masked) takes half its scores; warpgroup 1's and every
    other block's take all; at BM 192 (three consumers, two masked blocks) the last block's
    right half is right of warpgroups 0's and 1's rows; refused beside cond_rescale or
    poly_exp, as the kernel's."""
    import simpy

    from sim.attention.cta import AttentionCTA
    from sim.trace import Trace

    def elems(bm, consumers, switches, masked):
        cfg = attention.prepare(AttentionConfig(variant="fa3", headdim=64, block_m=bm,
                                                block_n=128, consumers=consumers, causal=True,
                                                switches=switches), H200)
        cta = AttentionCTA(simpy.Environment(), H200, cfg, Trace(), BLOCKS, masked)
        return [[cta.softmax_elems(w, j) for j in range(BLOCKS)] for w in range(consumers)]
    whole = 64 * 128
    assert elems(128, 2, ("no_turns",), 1) == [[whole] * BLOCKS] * 2
    assert elems(128, 2, ("no_turns", "live_half"), 1) == [[whole] * 7 + [whole // 2],
                                                          [whole] * BLOCKS]
    assert elems(192, 3, ("live_half",), 2) == [[whole] * 7 + [whole // 2]] * 2 + [
        [whole] * BLOCKS]
    for other in ("cond_rescale", "poly_exp"):
        with pytest.raises(ValueError, match="live_half does not go with"):
            attention.prepare(AttentionConfig(variant="fa3", causal=True,
                                              switches=("live_half", other)), H200)
