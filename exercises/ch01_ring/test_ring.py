"""Grader for chapter 01: one ring for K and V in the order the consumers read them, run in the
course's model on the student's slot and parity functions, judged from the run's event log.

The model has no such ring (its `ws` and `fa3` give K and V a ring each; `fa4`'s one ring takes K_j
and V_j together, K_0, V_0, K_1, ...): the grader's producer streams K_0, K_1, V_0, K_2, V_1, ...
(`stream`) through the CTA's ring ``k`` alone, and its consumers read them back as chapter 04's
overlap does, every slot and parity taken from the submission's functions (each asked before the
run, in a shuffled order, some twice, their form checked). The checks replay the log the grader's
model wrote: which tile each copy put in which slot and when it landed, when each wgmma read it,
when the producer claimed a slot (its `expect`) and how often the consumers had released it.
"""
import random

import pytest

from exercises.grading import forms, harness
from sim import H100

OP = {"K": "load K", "V": "load V"}
READ = {"QKᵀ": "K", "PV": "V"}
ASKED = ("slot", "full_parity", "empty_parity")
RNG = random.Random()        # the order of the questions: a fresh one each grading run (the runner
                             # reseeds it per student and test)


def sub():
    return harness.submission(__file__, "ring.py")


def stream(n_blocks: int):
    """(j, tile) in the order the consumers read the tiles and the producer streams them: K_0, then
    K_j and V_{j-1} for j = 1 .. n - 1 (Q·K_jᵀ and P_{j-1}·V_{j-1} are issued back to back), then
    V_{n-1}."""
    yield 0, "K"
    for j in range(1, n_blocks):
        yield j, "K"
        yield j - 1, "V"
    yield n_blocks - 1, "V"


def _ask(m, fn: str, j: int, t: str, stages: int, n_blocks: int) -> int:
    what = f"{fn}({j}, {t!r}, {stages}, {n_blocks})"
    got = getattr(m, fn)(j, t, stages, n_blocks)
    return forms.integer(got, what, 0, stages - 1) if fn == "slot" else forms.parity(got, what)


def tables(m, stages: int, n_blocks: int) -> dict:
    """(j, tile) -> (slot, full parity, empty parity), each answer's form checked (an int slot in
    [0, stages), parities 0 or 1). The questions go in a shuffled order, then a quarter of them
    again in another: an answer must follow from (j, tile, stages, n_blocks) alone, not from the
    questions asked before it (a count of the calls is right only in stream order)."""
    questions = [(fn, j, t) for j, t in stream(n_blocks) for fn in ASKED]
    RNG.shuffle(questions)
    got = {q: _ask(m, *q, stages, n_blocks) for q in questions}
    for q in RNG.sample(questions, max(len(questions) // 4, min(len(questions), 6))):
        again = _ask(m, *q, stages, n_blocks)
        assert again == got[q], (f"{q[0]}({q[1]}, {q[2]!r}, {stages}, {n_blocks}) answered "
                                 f"{got[q]}, and {again} when asked again later")
    return {(j, t): tuple(got[fn, j, t] for fn in ASKED) for j, t in stream(n_blocks)}


def roles(table):
    """The grader's producer and consumers for the shared ring, on the student's answers: the
    producer streams the tiles in `stream` order; each consumer reads them as chapter 04's
    overlap does (Q·K_jᵀ and P_{j-1}·V_{j-1} issued back to back, the scores waited for first,
    softmax j under P_{j-1}·V_{j-1}), releasing each tile once the GEMM that reads it is done."""
    def producer(cta):
        me, ring = cta.producer_name, cta.k
        cta.load_q(me)
        nbytes = cta.cfg.block_n * cta.cfg.headdim * cta.el
        for j, t in stream(cta.n_blocks):
            s, _, parity = table[j, t]
            yield from cta.wait(me, ring.empty[s], parity)
            ring.full[s].expect(nbytes)
            cta.tma_copy(me, OP[t], nbytes, ring.full[s], cta.tile("kv", j))

    def consumer(cta, w):
        me, ring, n = cta.wg(w), cta.k, cta.n_blocks

        def acquire(j, t):
            s, parity, _ = table[j, t]
            yield from cta.wait(me, ring.full[s], parity)

        def release(j, t):
            ring.empty[table[j, t][0]].arrive()

        yield from cta.wait(me, cta.q_full, 0)
        yield from acquire(0, "K")
        yield cta.qk(w, 0)
        release(0, "K")
        yield from cta.softmax(w, 0)
        yield from cta.pack(w, 0)
        for j in range(1, n):
            yield from acquire(j, "K")
            yield from acquire(j - 1, "V")
            scores, out = cta.qk(w, j), cta.pv(w, j - 1)           # back to back
            yield scores                                             # wgmma_wait<1>
            release(j, "K")
            yield from cta.softmax(w, j)                             # under P_{j-1} V_{j-1}
            yield out                                                # wgmma_wait<0>
            release(j - 1, "V")
            yield from cta.rescale(w, j)
            yield from cta.pack(w, j)
        yield from acquire(n - 1, "V")
        yield cta.pv(w, n - 1)
        release(n - 1, "V")
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


def assert_runs(r, slots, bad, n_blocks, stages):
    """The run finished by every rule, and it ran this ring: the copies, read from the log, put
    stream position p in slot p % stages (a ring that fills its slots in another order may run,
    but it is not this one)."""
    assert r.finished, r.error
    assert len(slots) == 2 * n_blocks, f"{len(slots)} tiles copied, the stream has {2 * n_blocks}"
    for rule in ("copy", "read_before_land", "overwrite", "starved"):
        assert not bad[rule], f"{rule}: {bad[rule][:3]}"
    want = [p % stages for p in range(2 * n_blocks)]
    assert slots == want, f"tiles copied into slots {slots[:16]}..., not {want[:16]}..."


@pytest.mark.points(1)
def test_slots_in_stream_order():
    """K_0, K_1, V_0, K_2, V_1, ... go into the ring one slot after the other, starting at slot 0:
    stream position p in slot p % stages (2, 3 and 4 stages; 1, 2 and 7 blocks)."""
    m = sub()
    for stages in (2, 3, 4):
        for n_blocks in (1, 2, 7):
            table = tables(m, stages, n_blocks)
            got = [table[jt][0] for jt in stream(n_blocks)]
            want = [p % stages for p in range(len(got))]
            assert got == want, (f"{stages} stages, {n_blocks} blocks: slots {got}, tile by tile "
                                 f"in the stream {list(stream(n_blocks))}; want {want}")


@pytest.mark.points(2)
def test_a_ring_runs_on_your_functions():
    """A 2-stage ring over 8 blocks: it runs to the end, each tile copied into its stream
    position's slot (from the log), no tile read before it landed, no slot refilled before both
    consumers released it, each refill claimed as soon as the slot is free."""
    assert_runs(*run_ring(sub(), 2, 8), 8, 2)


@pytest.mark.points(2)
def test_odd_and_deep_rings():
    """The same with 3 stages (K_j changes slot from block to block) over 7 blocks, many laps,
    and 4 stages over one block (fewer tiles than slots)."""
    m = sub()
    for stages, n_blocks in ((3, 7), (4, 1)):
        r, slots, bad = run_ring(m, stages, n_blocks, headdim=64, block_n=128)
        try:
            assert_runs(r, slots, bad, n_blocks, stages)
        except AssertionError as e:
            raise AssertionError(f"{stages} stages, {n_blocks} blocks: {e}") from None
