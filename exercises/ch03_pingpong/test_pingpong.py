"""Grader for chapter 03: FA3's turns (an opening arrive, the turn passed once Q·Kᵀ is issued),
alone and inside a pingpong attention CTA, judged from the model's event log."""
import itertools

import pytest

from exercises.grading import harness
from sim import H100, AttentionConfig, simulate

BLOCKS = 8
TURN_HW = H100.with_(mbarrier_clk=1.0, mbarrier_probe_clk=0.0)
THREE = {"consumers": 3, "block_m": 192, "headdim": 64}     # 3 consumers' registers fit at d 64


def sub():
    return harness.submission(__file__, "pingpong.py")


def _turn_order(s, n, rounds):
    """n consumer warpgroups that only take turns: open, then wait, 10 clk of work, pass on."""
    log = []

    def wg(cta, w):
        s.open_turns(cta, w)
        for k in range(rounds):
            yield from s.wait_turn(cta, w, k)
            log.append((cta.now, w, k))
            yield cta.delay(10)
            s.pass_turn(cta, w)

    cfg = AttentionConfig(variant="ws_pingpong", headdim=64, block_m=64 * n, block_n=64,
                          consumers=n)
    run = simulate(cfg, TURN_HW, roles={"producer": None, "consumer": wg}, n_blocks=1,
                   limit_clk=1e5)
    return log, run


def check_turn_order(s, n, rounds):
    log, run = _turn_order(s, n, rounds)
    assert run.finished, run.error
    assert [(w, k) for _, w, k in log] == [(w, k) for k in range(rounds) for w in range(n)], log
    assert log[0][0] == 0, "warpgroup 0's first turn must not wait"
    assert all(b[0] >= a[0] + 10 for a, b in itertools.pairwise(log)), f"turns overlap: {log}"
    for w in range(n):       # every turn taken is a wait on the warpgroup's own turn barrier
        waits = [(t1, parity) for kind, _t0, t1, actor, bar, parity, *_ in
                 (e for e in run.events if e[0] == "wait")
                 if actor == f"consumer{w}" and bar == f"turn[{w}]"]
        took = [t for t, v, _ in log if v == w]
        assert [p for _, p in waits] == [k & 1 for k in range(rounds)] and all(
            prev <= t1 <= t for (t1, _), prev, t in zip(waits, [0.0] + took, took)), (
            f"warpgroup {w}'s waits on turns.bar[{w}] (end clk, parity): {waits}; its turns at "
            f"{took}: each turn k must come from a wait on its barrier for parity k & 1")
    arrives = {w: sum(e[0] == "arrive" and e[2] == f"turn[{w}]" for e in run.events)
               for w in range(n)}
    want = {w: rounds + (w == 0) for w in range(n)}
    assert arrives == want, (f"arrivals on each warpgroup's turn barrier: {arrives}, expected "
                             f"{want}: warpgroup 0 opens its own once, then one hand-over a turn")


def run_pingpong(s, n_blocks=BLOCKS, **cfg):
    return harness.run_cta(consumer=s.consumer, variant="ws_pingpong", n_blocks=n_blocks, **cfg)


def handovers(r, n: int) -> list[str]:
    """Each warpgroup's k-th hand-over (the k-th arrive on the next one's barrier; warpgroup 0's
    opening arrive on its own comes first) must be made by that warpgroup, once its k-th Q·Kᵀ is
    issued and before that group's last wgmma has finished (FA3: arrive after the GEMM is issued,
    before its wait); each warpgroup's k-th Q·Kᵀ must follow a wait on its own barrier (parity
    k & 1) that the predecessor's k-th hand-over satisfied (warpgroup 0's first: its opening
    arrive); and the warpgroups must issue their Q·Kᵀ in turn. Who made an arrive is read from
    the log (`actors`: the warpgroup whose step logged it)."""
    actors = r.actors or [None] * len(r.run.events)
    issued = {}                      # actor -> [(position in the log, clk)] of its Q·Kᵀ issues
    for i, e in enumerate(r.run.events):
        if e[0] == "wgmma" and e[3] == "QKᵀ":
            issued.setdefault(e[2], []).append((i, e[1]))
    ends = {}
    for (actor, _tile), (_a, b) in sorted(harness.gemm_groups(r.trace, "QKᵀ").items(),
                                          key=lambda kv: kv[1][0]):
        ends.setdefault(actor, []).append(b)
    arrives = {w: [(i, e[1], actors[i]) for i, e in enumerate(r.run.events)
                   if e[0] == "arrive" and e[2] == f"turn[{w}]"] for w in range(n)}
    waits = {w: [(i, e[2], e[5]) for i, e in enumerate(r.run.events)
                 if e[0] == "wait" and e[3] == f"consumer{w}" and e[4] == f"turn[{w}]"]
             for w in range(n)}
    bad = []
    if not arrives[0] or arrives[0][0][2] != "consumer0":
        bad.append("warpgroup 0's opening arrive on its own barrier " + (
            "never came" if not arrives[0] else f"was made by {arrives[0][0][2]}"))
    for w in range(n):
        me, nxt, prev = f"consumer{w}", (w + 1) % n, f"consumer{(w - 1) % n}"
        mine = issued.get(me, [])
        for k, ((i_i, t_i), t_end) in enumerate(zip(mine, ends.get(me, []))):
            k_a = k + (nxt == 0)                                  # past the opening arrive
            i_a, t_a, who = arrives[nxt][k_a] if k_a < len(arrives[nxt]) else (None, None, None)
            if i_a is None or who != me or not (i_a > i_i and t_a < t_end):
                bad.append(f"{me}'s Q·Kᵀ #{k} issued at clk {t_i:.0f}, done at {t_end:.0f}: its "
                           "hand-over " + ("never came" if i_a is None else
                                           f"came at clk {t_a:.0f} from {who}" if who != me else
                                           f"came at clk {t_a:.0f}, " + (
                                               "before the issue" if i_a < i_i else
                                               "after the scores were in")))
        for k, (i_i, t_i) in enumerate(mine):      # each turn: a wait its predecessor satisfied
            i_a, _t_a, who = arrives[w][k] if k < len(arrives[w]) else (None, None, None)  # phase k
            want = "consumer0" if (w, k) == (0, 0) else prev
            after = mine[k - 1][0] if k else -1
            took = [(i, p) for i, _t1, p in waits[w] if after < i < i_i]
            if i_a is None or who != want:
                bad.append(f"{me}'s turn #{k} (Q·Kᵀ issued at clk {t_i:.0f}): phase {k} of "
                           f"turns.bar[{w}] " + ("never completed" if i_a is None else
                                                 f"was completed by {who}, not {want}"))
            elif len(took) != 1 or took[0][1] != k & 1 or took[0][0] < i_a:
                bad.append(f"{me}'s turn #{k} (Q·Kᵀ issued at clk {t_i:.0f}): not one wait on "
                           f"turns.bar[{w}] for parity {k & 1} ended by {want}'s arrive "
                           f"(waits before it, (log position, parity): {took}; the arrive: {i_a})")
    order = [e[2] for e in r.run.events if e[0] == "wgmma" and e[3] == "QKᵀ"]
    want = [f"consumer{w}" for _ in range(r.n_blocks) for w in range(n)]
    if order != want[:len(order)]:
        bad.append(f"Q·Kᵀ issued in the order {order[:2 * n + 2]}..., not in turn")
    return bad


@pytest.mark.points(2)
def test_turns_alternate():
    """Alone: 2 warpgroups × 4 turns go 0, 1, 0, 1, ... one at a time, starting at once, with
    one opening arrive on warpgroup 0's barrier, one hand-over a turn, and every turn taken
    after a wait on the warpgroup's own barrier (turns.bar[w], parity k & 1, from the log)."""
    check_turn_order(sub(), 2, 4)


def assert_slots_kept(r):
    """No wgmma read a block before it landed, and no slot was released (an arrive on its
    `empty`) or refilled while a wgmma that reads it was still running: a group reads its
    operands until its last instruction is done, not only when it is issued."""
    assert not r.violations["read_before_land"], r.violations["read_before_land"][:3]
    assert not r.violations["overwrite"], r.violations["overwrite"][:3]


@pytest.mark.points(1)
def test_schedule_runs():
    """The pingpong CTA finishes without deadlock, reading only landed blocks and releasing each
    slot only once the GEMM that reads it is done."""
    r = run_pingpong(sub())
    assert r.finished, r.error
    assert_slots_kept(r)


@pytest.mark.points(3)
def test_turn_passes_once_issued():
    """The two consumers issue their Q·Kᵀ in turn, and each passes the turn on once its Q·Kᵀ is
    issued, before its scores are in (FA3's warp_scheduler_barrier_arrive)."""
    r = run_pingpong(sub())
    assert r.finished, r.error
    assert len(harness.gemm_groups(r.trace, "QKᵀ")) == 2 * BLOCKS, "missing GEMMs"
    bad = handovers(r, 2)
    assert not bad, bad[:3]
