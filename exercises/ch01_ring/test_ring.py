"""Grader for chapter 01: one ring for K and V, run in the course's model on the student's slot
and parity functions, judged from the run's event log.

The model has no such ring (its `ws` gives K and V a ring each): the grader's producer streams
K_0, V_0, K_1, ... through the CTA's ring ``k`` alone, and its consumers read them back, every slot
and parity taken from the submission's functions (asked once per tile, their form checked, before
the run). The checks replay the log the grader's model wrote: which tile each copy put in which
slot and when it landed, when each wgmma read it, when the producer claimed a slot (its `expect`)
and how often the consumers had released it.
"""
import itertools

import pytest

from exercises.grading import forms, harness
from sim import H100

TILES = ("K", "V")
OP = {"K": "load K", "V": "load V"}
READ = {"QKᵀ": "K", "PV": "V"}


def sub():
    return harness.submission(__file__, "ring.py")


def tables(m, stages: int, n_blocks: int) -> dict:
    """(j, tile) -> (slot, full parity, empty parity), each answer asked once and checked for its
    form (an int slot in [0, stages), parities 0 or 1)."""
    out = {}
    for j, t in itertools.product(range(n_blocks), TILES):
        out[j, t] = (forms.integer(m.slot(j, t, stages), f"slot({j}, {t!r}, {stages})", 0,
                                   stages - 1),
                     forms.parity(m.full_parity(j, t, stages),
                                  f"full_parity({j}, {t!r}, {stages})"),
                     forms.parity(m.empty_parity(j, t, stages),
                                  f"empty_parity({j}, {t!r}, {stages})"))
    return out


def roles(table):
    """The grader's producer and consumers for the shared ring, on the student's answers."""
    def producer(cta):
        me, ring = cta.producer_name, cta.k
        cta.load_q(me)
        nbytes = cta.cfg.block_n * cta.cfg.headdim * cta.el
        for j, t in itertools.product(range(cta.n_blocks), TILES):
            s, _, parity = table[j, t]
            yield from cta.wait(me, ring.empty[s], parity)
            ring.full[s].expect(nbytes)
            cta.tma_copy(me, OP[t], nbytes, ring.full[s], cta.tile("kv", j))

    def consumer(cta, w):
        me, ring = cta.wg(w), cta.k

        def acquire(j, t):
            s, parity, _ = table[j, t]
            yield from cta.wait(me, ring.full[s], parity)

        yield from cta.wait(me, cta.q_full, 0)
        for j in range(cta.n_blocks):
            yield from acquire(j, "K")
            yield cta.qk(w, j)
            ring.empty[table[j, "K"][0]].arrive()
            yield from cta.softmax(w, j)
            yield from cta.rescale(w, j)
            yield from acquire(j, "V")
            yield from cta.pack(w, j)
            yield cta.pv(w, j)
            ring.empty[table[j, "V"][0]].arrive()
        yield from cta.epilogue(w)

    return producer, consumer


def check(events, stages: int, table: dict, block_bytes: int, wake: float) -> tuple[list, dict]:
    """Replay the log: (the slots the tiles were copied into, in stream order; violations). A
    fill is starved when claimed more than `wake` (the run's barrier wake-up) after its slot
    was free."""
    full = {f"k.full[{s}]": s for s in range(stages)}
    empty = {f"k.empty[{s}]": s for s in range(stages)}
    fills, released, free_at = [0] * stages, [0] * stages, {}
    content: dict = {}                                   # slot -> (tile, block, landed?)
    slots, last_claim = [], 0.0
    bad = {k: [] for k in ("copy", "read_before_land", "overwrite", "starved")}
    for kind, *f in events:
        if kind == "expect" and f[1] in full:
            t, name, _ = f
            s, n = full[name], fills[full[name]]
            if released[s] < n:
                bad["overwrite"].append(f"t={t:.0f}: slot {s} claimed for its fill #{n + 1} while "
                                        f"the consumers had released it {released[s]} time(s)")
            elif t > max(free_at.get((s, n), 0.0), last_claim) + wake + 1e-6:
                bad["starved"].append(f"t={t:.0f}: slot {s}'s fill #{n + 1} claimed "
                                      f"{t - max(free_at.get((s, n), 0.0), last_claim):.0f} clk "
                                      "after it was free")
            fills[s], last_claim = n + 1, t
        elif kind == "complete" and f[1] in empty:
            s = empty[f[1]]
            released[s] += 1
            free_at[s, released[s]] = f[0]
        elif kind == "tma" and f[3] in full:
            t, _actor, op, bar, tile, nbytes = f
            s = full[bar]
            if nbytes != block_bytes:
                bad["copy"].append(f"t={t:.0f}: {op} of {nbytes} bytes, a tile is {block_bytes}")
            slots.append(s)
            content[s] = (op[-1], tile[1], False)
        elif kind == "landed" and f[3] in full:
            s = full[f[3]]
            if content.get(s) == (f[2][-1], f[4][1], False):
                content[s] = (f[2][-1], f[4][1], True)
        elif kind == "wgmma" and f[2] in READ:
            t, actor, op, tile = f[:4]
            tl, j = READ[op], tile[1]
            s = table[j, tl][0]
            if content.get(s) != (tl, j, True):
                have = content.get(s)
                what = "nothing" if have is None else (
                    f"{have[0]}_{have[1]} ({'landed' if have[2] else 'still in flight'})")
                bad["read_before_land"].append(f"t={t:.0f}: {actor} read {tl}_{j} from slot {s}, "
                                               f"which holds {what}")
    return slots, bad


def run_ring(m, stages: int, n_blocks: int, hw=H100, **cfg):
    """The CTA on the submission's functions: (run, slots copied into, violations)."""
    table = tables(m, stages, n_blocks)
    producer, consumer = roles(table)
    r = harness.run_cta(producer=producer, consumer=consumer, variant="ws", n_blocks=n_blocks,
                        stages=stages, hw=hw, **cfg)
    block_bytes = r.run.config.block_n * r.run.config.headdim * (
        1 if r.run.config.dtype == "fp8" else 2)
    slots, bad = check(r.run.events, stages, table, block_bytes,
                       max(hw.mbarrier_clk, hw.mbarrier_probe_clk))
    return r, slots, bad


def assert_runs(r, slots, bad, n_blocks):
    assert r.finished, r.error
    assert len(slots) == 2 * n_blocks, f"{len(slots)} tiles copied, the stream has {2 * n_blocks}"
    for rule in ("copy", "read_before_land", "overwrite", "starved"):
        assert not bad[rule], f"{rule}: {bad[rule][:3]}"


@pytest.mark.points(1)
def test_slots_in_stream_order():
    """K_0, V_0, K_1, ... go into the ring one slot after the other, starting at slot 0: stream
    position n in slot n % stages (1, 2, 3 and 4 stages, 7 blocks: 14 tiles, over 3 laps of 4)."""
    m = sub()
    for stages in (1, 2, 3, 4):
        table = tables(m, stages, 7)
        got = [table[j, t][0] for j, t in itertools.product(range(7), TILES)]
        want = [n % stages for n in range(len(got))]
        assert got == want, f"{stages} stages: slots {got}, tile by tile; the stream order: {want}"


@pytest.mark.points(2)
def test_a_ring_runs_on_your_functions():
    """A 2-stage ring over 8 blocks: it runs to the end, no tile read before it landed, no slot
    refilled before both consumers released it, each refill claimed as soon as the slot is free."""
    assert_runs(*run_ring(sub(), 2, 8), 8)


@pytest.mark.points(2)
def test_odd_and_deep_rings():
    """The same with 3 stages (K_j changes slot from block to block) over 7 blocks, many laps,
    and 4 stages over one block (fewer tiles than slots)."""
    m = sub()
    for stages, n_blocks in ((3, 7), (4, 1)):
        r, slots, bad = run_ring(m, stages, n_blocks, headdim=64, block_n=128)
        try:
            assert_runs(r, slots, bad, n_blocks)
        except AssertionError as e:
            raise AssertionError(f"{stages} stages, {n_blocks} blocks: {e}") from None
