"""The sync primitives behave like Hopper's: phase parity, transaction bytes, turn order."""
import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.engine import Fifo, IssueSlot, MBarrier, Ring, TensorCore, Turns, Unit, turn_parity
from sim.trace import Trace


def run(env, *gens):
    procs = [env.process(g) for g in gens]
    env.run(until=simpy.AllOf(env, procs))


def test_phase_completes_on_arrivals_and_bytes():
    env = simpy.Environment()
    bar = MBarrier(env, "full", count=1, wake_clk=5)
    assert not bar.passes(0)            # phase 0 in progress
    assert bar.passes(1)                # "the previous phase" passes at once (producer's first lap)
    bar.expect(100)
    assert not bar.passes(0)            # arrived, but 100 bytes still in flight
    bar.complete_tx(60)
    assert not bar.passes(0)
    bar.complete_tx(40)
    assert bar.passes(0) and bar.completed == 1


def test_waiter_wakes_after_flip_plus_latency():
    env = simpy.Environment()
    bar = MBarrier(env, "b", count=2, wake_clk=7)
    woke = []

    def waiter():
        yield from bar.wait(0)
        woke.append(env.now)

    def arriver():
        yield env.timeout(10)
        bar.arrive()
        yield env.timeout(10)
        bar.arrive()
    run(env, waiter(), arriver())
    assert woke == [27]


def test_too_many_bytes_or_arrivals_raise():
    env = simpy.Environment()
    bar = MBarrier(env, "b", count=1, wake_clk=0)
    bar.expect(8)
    with pytest.raises(RuntimeError, match="more bytes landed"):
        bar.complete_tx(16)
    bar2 = MBarrier(env, "c", count=1, wake_clk=0)
    bar2.expect(8)
    with pytest.raises(RuntimeError, match="arrival past"):
        bar2.arrive()


def test_ring_slot_and_parity():
    env = simpy.Environment()
    ring = Ring(env, "kv", stages=3, consumers=2, wake_clk=0)
    assert [ring.slot(j) for j in range(7)] == [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1), (0, 0)]
    assert ring.empty[0].count == 2
    with pytest.raises(ValueError, match="stages must be >= 1"):
        Ring(env, "x", stages=0, consumers=1, wake_clk=0)


def test_turns_alternate():
    env = simpy.Environment()
    turns = Turns(env, 3, wake_clk=1)
    order = []

    def wg(w):
        for k in range(3):
            yield from turns.wait(w, k)
            order.append(w)
            yield env.timeout(5)
            turns.pass_turn(w)
    run(env, wg(2), wg(1), wg(0))
    assert order == [0, 1, 2] * 3


def test_turn_parity():
    """Warpgroup 0's first wait falls through on a fresh barrier; the others wait a hand-over."""
    assert [turn_parity(k, 0) for k in range(4)] == [1, 0, 1, 0]
    assert [turn_parity(k, 1) for k in range(4)] == [0, 1, 0, 1]
    env = simpy.Environment()
    bar = MBarrier(env, "turn", 1, wake_clk=0)
    assert bar.passes(turn_parity(0, 0)) and not bar.passes(turn_parity(0, 1))


def test_unit_serves_one_at_a_time_and_shares_in_pieces():
    env = simpy.Environment()
    trace = Trace()
    sfu = Unit(env, "sfu", trace)
    run(env, sfu.run("a", "exp", 40, pieces=4), sfu.run("b", "exp", 40, pieces=4))
    assert env.now == 80
    ends = {a: max(i.end for i in trace.intervals if i.actor == a) for a in "ab"}
    assert ends == {"a": 70, "b": 80}          # interleaved, not one after the other


def test_tensor_core_alone_vs_colliding():
    env = simpy.Environment()
    tc = TensorCore(env, Trace(), latency=10)
    done = {}

    def wg(name, delay):
        yield env.timeout(delay)
        ev = tc.issue(name, "QK", 4, 100, 64)
        yield ev
        done[name] = env.now
    run(env, wg("a", 0), wg("b", 0))
    assert done == {"a": 710, "b": 810}        # both late: shared instruction by instruction
    env = simpy.Environment()
    tc = TensorCore(env, Trace(), latency=10)
    done.clear()
    run(env, wg("a", 0), wg("b", 400))
    assert done["a"] == 410                    # a alone finished before b arrived


def test_wgmma_queue_blocks_the_issuer_until_its_last_instruction_is_in():
    """Depth 2, 4 instructions of 10 clk, 1 clk to issue each: the first two enter at 1 and 2;
    the third waits for the first to finish (11) and enters at 12, the fourth after the second
    (21) at 22 — that is when the warpgroup gets its next instruction back."""
    env = simpy.Environment()
    tc = TensorCore(env, Trace(), latency=5.0, depth=2)
    seen = {}

    def wg():
        done = tc.issue("wg0", "MMA", 4, 10.0, 10.0, issue_clk=1.0)
        yield tc.issued("wg0")
        seen["issued"] = env.now
        yield done
        seen["done"] = env.now

    env.process(wg())
    env.run()
    assert seen == {"issued": 22.0, "done": 41.0 + 5.0}


def test_wgmma_queue_unbounded_issues_at_once_and_depth_is_checked():
    env = simpy.Environment()
    tc = TensorCore(env, Trace(), latency=0.0)
    tc.issue("wg0", "MMA", 8, 10.0, 10.0)
    assert tc.issued("wg0").triggered
    with pytest.raises(ValueError, match="queue holds >= 1"):
        TensorCore(env, Trace(), latency=0.0, depth=0)


def _slot_race(on: bool):
    """Warpgroup a starts a 100-clk stream at 0; b asks for 3 instructions at 10, for 2 at 150."""
    env = simpy.Environment()
    trace = Trace()
    slot = IssueSlot(env, trace, on=on)
    done = {}

    def a():
        yield from slot.hold("a", (env.timeout(100) for _ in range(1)))
        done["a"] = env.now

    def b():
        yield env.timeout(10)
        yield from slot.take("b", 3)
        done["b1"] = env.now
        yield env.timeout(150 - env.now)
        yield from slot.take("b", 2)
        done["b2"] = env.now
    run(env, a(), b())
    return done, trace


def test_a_stream_holds_the_issue_slot_and_others_wait_it_out():
    """The other warpgroup's instructions issue once the stream is done (100), one a clock;
    with the slot free they pay only their own clocks; the wait is in the trace."""
    done, trace = _slot_race(on=True)
    assert done == {"a": 100, "b1": 103, "b2": 152}
    assert [(a, w, s, e) for a, w, s, e in trace.waits] == [("b", "issue slot", 10, 100)]


def test_issue_slots_off_pass_every_request_at_once():
    done, trace = _slot_race(on=False)
    assert done == {"a": 100, "b1": 10, "b2": 150}
    assert not trace.waits


# --- Fifo: simpy.Resource(capacity=1)'s order, without its bookkeeping --------------------------
def _contend(make, plans):
    """Each plan is a process's (gap before asking, clocks held) pairs, zero gaps and holds
    included; beside them a bystander schedules an event at every clock, so a grant one heap hop
    early or late shows in the log's order, not only in its times."""
    env, log = simpy.Environment(), []
    res = make(env)

    def user(name, plan):
        for gap, hold in plan:
            yield env.timeout(gap)
            log.append((env.now, name, "ask"))
            if isinstance(res, simpy.Resource):
                with res.request() as req:
                    yield req
                    log.append((env.now, name, "got"))
                    yield env.timeout(hold)
            else:
                yield res.request()
                log.append((env.now, name, "got"))
                yield env.timeout(hold)
                res.release()
            log.append((env.now, name, "let go"))

    def bystander(until):
        while env.now < until:
            log.append((env.now, "bystander", "tick"))
            yield env.timeout(1)

    until = sum(g + h for plan in plans for g, h in plan)
    run(env, bystander(until), *(user(f"p{n}", plan) for n, plan in enumerate(plans)))
    return log


_plans = st.lists(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=1, max_size=6),
                  min_size=1, max_size=4)


@settings(max_examples=300, deadline=None)
@given(_plans)
def test_fifo_keeps_the_event_order_of_a_simpy_resource(plans):
    """The model's units hold a `Fifo` where they held a Resource: every ask, grant and release
    falls at the same clock and in the same order among everything else at that clock."""
    assert _contend(Fifo, plans) == _contend(lambda env: simpy.Resource(env, capacity=1), plans)


class _GrantAtOnce(Fifo):
    """A release that hands the unit over without the event simpy schedules for it."""

    def release(self):
        self.held = False
        self._grant()


def test_fifo_order_check_can_fail():
    plans = [[(0, 2), (0, 1)], [(1, 2)], [(0, 0), (2, 1)]]
    assert _contend(_GrantAtOnce, plans) != _contend(lambda env: simpy.Resource(env, capacity=1), plans)
