"""What the exercises' tests use: the submission (its code runs in a sandbox, `student.py`), the
course's model run with a student-written role in place of the schedule's own (`sim.simulate`),
and the run judged from its event log.

The checks read only the log's plain events (`sim.EVENTS`), which the grader's own model wrote:
which K/V block each TMA copy put in which slot and when it landed, when each consumer's wgmma read
a block and (from the trace) until when its group read it, when the producer claimed a slot (its
`expect` on the slot's `full` barrier) and how often each consumer had released it (its arrivals
on `empty`: `run_cta` records which role was acting when each event was logged). A slot is free
only once every consumer released it and every wgmma reading it has ended: a release or a copy
into the slot before then is an overwrite. Violations are collected, not raised,
so one run answers every question (did it finish, did anyone read a slot before its block landed,
did the producer claim a slot the consumers had not released, were the copies the right ones, how
long it took).
"""
from __future__ import annotations

import atexit
import itertools
from dataclasses import dataclass, field
from pathlib import Path

from sim import H100, AttentionConfig, Hardware, Run, Trace, simulate

from . import runner
from .source import submission_files
from .student import Student, SubmissionModule

READS = {"QKᵀ": "k", "PV": "v"}          # which ring each of a consumer's GEMMs reads
_local: dict[Path, Student] = {}


def exercise_folder(test_file: str) -> Path:
    """The exercise a test file belongs to (a file in ``hidden/`` belongs to its parent)."""
    here = Path(test_file).resolve().parent
    return here.parent if here.name == "hidden" else here


def student(test_file: str) -> Student:
    """The submission being graded: under the runner, the student it is grading; under plain
    pytest, the files beside the tests."""
    st = runner.CURRENT.get()
    if st is None:
        folder = exercise_folder(test_file)
        if folder not in _local:
            files = {f: folder / f for f in submission_files(folder) if (folder / f).exists()}
            _local[folder] = Student(files, runner.adapters(folder.name, folder.parent))
        st = _local[folder]
    return st


def submission(test_file: str, rel: str) -> SubmissionModule:
    """The submission file `rel` as a test uses it: calls go to the submission's sandbox."""
    return student(test_file).module(rel)


def sandboxed(test_file: str, env: dict[str, str] | None = None, gpu: bool = False) -> Student:
    """The submission in a session of its own (close it when done), e.g. with TRITON_INTERPRET."""
    return student(test_file).variant(env, gpu)


def serving_cpu_s(test_file: str, rel: str, fn: str, calls: list[tuple], value=0.5) -> float:
    """The CPU seconds a sandbox like the submission's spends serving `calls` (argument tuples)
    to a function `fn` of file `rel` that does nothing but return `value`: the grader's own
    file, in a session of its own with the submission's limits, uid and cgroup, counted as
    `Student.timed_calls` counts the submission's. What the pipe, the codec and the serving
    loop cost for these calls on this machine, now: a budget for the submission's own work
    adds to it."""
    import shutil
    import tempfile
    d = Path(tempfile.mkdtemp(prefix="grader-serving-"))
    try:
        (d / rel).write_text(f"def {fn}(*args, **kwargs):\n    return {value!r}\n",
                             encoding="utf-8")
        null = student(test_file).alike({rel: d / rel})
        try:
            return null.timed_calls(f"{Path(rel).stem}:{fn}", calls)[1]
        finally:
            null.close()
    finally:
        shutil.rmtree(d, ignore_errors=True)


def memo(test_file: str, key, compute):
    """`compute()` once per submission (several tests read one kernel run), never shared between
    two students graded by one process."""
    cache = student(test_file).memo
    if key not in cache:
        cache[key] = compute()
    return cache[key]


def public(test_file: str, name: str):
    """The exercise's public test module `name`, as the runner imported it (a hidden test reuses
    its helpers; the hidden values stay in the hidden file)."""
    return runner._import(exercise_folder(test_file) / name)


@atexit.register
def _close_local() -> None:
    for st in _local.values():
        st.close()


@dataclass
class Checked:
    """A run of one CTA and what the checks found in its event log."""
    run: Run
    n_blocks: int
    copied: dict = field(default_factory=dict)       # ring -> blocks copied, in order; "q" -> count
    violations: dict = field(default_factory=dict)   # check -> messages
    actors: list | None = None                       # per event, the supplied role acting (or None)

    clk = property(lambda self: self.run.clk)
    finished = property(lambda self: self.run.finished)
    error = property(lambda self: self.run.error)
    trace = property(lambda self: self.run.trace)


class Releases:
    """How often each consumer has released each slot: its arrivals on the slot's `empty` barrier,
    told apart by who arrived (`actors`, one per event, and the consumers' names). Only the
    consumers release a slot: an arrival by any other role is an overwrite (a producer that
    arrives itself frees the slot before the consumers are done). Without `actors` (a run of the
    model's own roles) it counts the phases `empty` completed."""

    def __init__(self, actors: list | None, consumers: tuple[str, ...]):
        self.actors, self.consumers = actors, consumers
        self.arrivals: dict = {}                     # slot -> {consumer: its arrivals}
        self.phases: dict = {}                       # slot -> phases completed

    def arrive(self, i: int, slot, name: str, t: float) -> list[str]:
        """Event i, an arrival on `slot`'s empty barrier `name`: a violation unless a consumer
        made it."""
        if self.actors is None:
            return []
        who = self.actors[i]
        if who not in self.consumers:
            return [f"t={t:.0f}: {who or 'a role that is not a consumer'} arrived on {name}: "
                    "only the consumers release a slot, each once per fill"]
        mine = self.arrivals.setdefault(slot, {})
        mine[who] = mine.get(who, 0) + 1
        return []

    def complete(self, slot) -> None:
        self.phases[slot] = self.phases.get(slot, 0) + 1

    def released(self, slot) -> int:
        """How many fills of `slot` every consumer has released."""
        if self.actors is None:
            return self.phases.get(slot, 0)
        mine = self.arrivals.get(slot, {})
        return min((mine.get(c, 0) for c in self.consumers), default=0)


class Reads:
    """The wgmma groups that read each slot's content, and until when: a group reads its operands
    from shared memory until its last instruction is done, not only at its issue, so a slot may be
    released or copied into only once those groups have ended. `ends` (`group_ends`) is each
    group's end on the tensor core, from the run's trace."""

    def __init__(self, ends: dict | None):
        self.ends = ends or {}
        self.live: dict = {}                         # slot -> [(actor, op, tile)] reading it
        self.flagged: set = set()                    # each group named once

    def read(self, slot, actor: str, op: str, tile) -> None:
        self.live.setdefault(slot, []).append((actor, op, tile))

    def refill(self, slot) -> None:
        self.live.pop(slot, None)

    def still_read(self, slot, t: float, what: str, actor: str | None = None) -> list[str]:
        """A violation for each group (`actor`'s, or anyone's) still reading `slot` at t."""
        out = []
        for who, op, tile in self.live.get(slot, ()):
            end = self.ends.get((who, op, tile))
            if end is None or end <= t + 1e-6 or actor not in (None, who) or \
                    (slot, who, op, tile) in self.flagged:
                continue
            self.flagged.add((slot, who, op, tile))
            of = f"block {tile[1]}" if isinstance(tile, tuple) and len(tile) == 2 else tile
            out.append(f"t={t:.0f}: {what} while {who}'s {op} of {of} still reads it (until "
                       f"t={end:.0f})")
        return out


def group_ends(trace: Trace) -> dict:
    """(actor, op, tile) -> when that wgmma group's last instruction ended on the tensor core, for
    the GEMMs that read a K/V slot."""
    return {(actor, op, tile): end for op in READS
            for (actor, tile), (_start, end) in gemm_groups(trace, op).items()}


def _kv_block(tile) -> int | None:
    """Block j of a copy tagged ``cta.tile("kv", j)``: the tag names exactly the K/V block the
    copy brings (("kv", j), j an int); any other tag (Q's block, another table's, a malformed
    one) is None: such a copy brings no K/V block into its slot."""
    if isinstance(tile, tuple) and len(tile) == 2 and tile[0] == "kv" and \
            isinstance(tile[1], int) and not isinstance(tile[1], bool):
        return tile[1]
    return None


def _released(rel: Releases, reads: Reads, i: int, slot, regions: list, f: list,
              actors) -> list[str]:
    """An arrival (event i, fields `f`) on `slot`'s empty barrier: who made it, and whether that
    consumer's own groups still read the slot's `regions` (its K and V, in a shared ring)."""
    t, name = f[0], f[1]
    bad = rel.arrive(i, slot, name, t)
    who = actors[i] if actors else None
    if who is not None and not bad:
        for key in regions:
            bad += reads.still_read(key, t, f"{who} arrived on {name}", who)
    return bad


def check_ring(events: list[tuple], stages: int, block_bytes: int, ends: dict | None = None,
               actors: list | None = None, consumers: tuple[str, ...] = ()) -> tuple[dict, dict]:
    """Replay one attention CTA's event log and judge its K/V rings: (copied, violations).
    `ends` (`group_ends`): until when each wgmma group read its slot; `actors` (one per event)
    and `consumers`: who released each slot (`Releases`)."""
    full = {f"{r}.full[{s}]": (r, s) for r in "kv" for s in range(stages)}
    empty = {f"{r}.empty[{s}]": (r, s) for r in "kv" for s in range(stages)}
    fills = {(r, s): 0 for r, s in full.values()}          # the producer's claims per slot
    rel, reads = Releases(actors, consumers), Reads(ends)
    content: dict = {}                                     # (r, s) -> (block, landed?)
    copied: dict = {"k": [], "v": [], "q": 0}
    bad: dict[str, list[str]] = {"read_before_land": [], "overwrite": [], "copy": []}
    for i, (kind, *f) in enumerate(events):
        if kind == "expect" and f[1] in full:
            t, name, nbytes = f
            r, s = full[name]
            n = fills[r, s]
            if rel.released((r, s)) < n:
                bad["overwrite"].append(
                    f"t={t:.0f}: the producer claimed {r}-slot {s} for its fill #{n + 1} while "
                    f"the consumers had released it only {rel.released((r, s))} time(s)")
            if nbytes != block_bytes:
                bad["copy"].append(f"t={t:.0f}: expect of {nbytes} bytes on {name}, a block is "
                                   f"{block_bytes}")
            fills[r, s] = n + 1
        elif kind == "arrive" and f[1] in empty:
            key = empty[f[1]]
            bad["overwrite"] += _released(rel, reads, i, key, [key], f, actors)
        elif kind == "complete" and f[1] in empty:
            key = empty[f[1]]
            rel.complete(key)
            bad["overwrite"] += reads.still_read(key, f[0], f"{f[1]} completed (the slot is free "
                                                 "to refill)")
        elif kind == "tma":
            t, _actor, _op, bar, tile, nbytes = f
            if bar == "q_full":
                copied["q"] += 1
                continue
            if bar not in full:
                bad["copy"].append(f"t={t:.0f}: a TMA copy completes on {bar!r}, not a ring's "
                                   "full barrier")
                continue
            r, s = full[bar]
            block = _kv_block(tile)
            if block is None:
                bad["copy"].append(f"copy into {r}-slot {s} tagged {tile!r}, not "
                                   "cta.tile('kv', j)")
            if nbytes != block_bytes:
                bad["copy"].append(f"t={t:.0f}: a copy of {nbytes} bytes into {r}-slot {s}, a "
                                   f"block is {block_bytes}")
            bad["overwrite"] += reads.still_read((r, s), t, f"a copy into {r}-slot {s} was issued")
            reads.refill((r, s))
            copied[r].append(block)
            content[r, s] = (block, False)
        elif kind == "landed" and f[3] in full:
            t, _actor, _op, bar, tile, _nbytes = f
            key = full[bar]
            block = _kv_block(tile)
            if content.get(key) == (block, False):
                content[key] = (block, True)
        elif kind == "wgmma" and f[2] in READS:
            reads.read(_check_read(f, stages, content, bad), *f[1:4])
    return copied, bad


def _check_read(event: list, stages: int, content: dict, bad: dict) -> tuple[str, int]:
    """A wgmma event (its fields after the kind) that reads K or V block j: slot j % stages must
    hold block j, landed. Returns the slot it reads, (ring, slot)."""
    t, actor, op, tile = event[:4]
    r, j = READS[op], tile[1]
    s = j % stages
    have = content.get((r, s))
    if have != (j, True):
        what = ("nothing" if have is None else
                f"block {have[0]} ({'landed' if have[1] else 'still in flight'})")
        bad["read_before_land"].append(
            f"t={t:.0f}: {actor} read {r.upper()} block {j} from slot {s}, which holds {what}")
    return r, s


def check_shared_ring(events: list[tuple], stages: int, block_bytes: int, wake_clk: float,
                      ring: str = "k", ends: dict | None = None, actors: list | None = None,
                      consumers: tuple[str, ...] = ()) -> tuple[dict, dict]:
    """Replay a CTA whose K_j and V_j share slot j % stages of ONE ring (`ring`.full[s] for both
    copies, `ring`.empty[s] for the consumers' release) and judge its producer: (copied,
    violations). Checks: which block went where; no read before land; no refill before every
    consumer released the slot (`Releases`: their own arrivals) and its reads ended (`Reads`);
    one expect per fill, before its copies, of exactly the bytes they land; each fill claimed no
    later than `wake_clk` after its slot was free (or after the previous claim, if later) and its
    copies issued at the claim."""
    full = {f"{ring}.full[{s}]": s for s in range(stages)}
    empty = {f"{ring}.empty[{s}]": s for s in range(stages)}
    fills = [0] * stages
    rel, reads = Releases(actors, consumers), Reads(ends)
    free_at: dict = {}                                     # (slot, fill #) -> clk it became free
    fill: list = [None] * stages                           # the slot's current fill
    content: dict = {}                                     # ("k" | "v", slot) -> (block, landed?)
    copied: dict = {"k": [], "v": [], "q": 0}
    bad: dict[str, list[str]] = {k: [] for k in ("copy", "read_before_land", "overwrite", "bytes",
                                                 "starved")}
    last_claim = 0.0

    def close(s: int) -> None:
        f = fill[s]
        ops = sorted(op for op, _, _ in f["copies"])
        blocks = {b for _, b, _ in f["copies"]}
        landed = sum(n for *_, n in f["copies"])
        if f["expected"] != 2 * block_bytes or landed != f["expected"] or \
                ops != ["load K", "load V"] or len(blocks) != 1:
            bad["bytes"].append(
                f"fill #{f['n'] + 1} of slot {s}: expected {f['expected']} bytes, its copies "
                f"{[(op, b, n) for op, b, n in f['copies']]} landed {landed}; a fill is K_j and "
                f"V_j of one block, {2 * block_bytes} bytes")

    for i, (kind, *f) in enumerate(events):
        if kind == "expect" and f[1] in full:
            t, name, nbytes = f
            s = full[name]
            cur = fill[s]
            if cur is not None and not cur["done"] and len(cur["copies"]) < 2:
                bad["bytes"].append(f"t={t:.0f}: a second expect on {name} for one fill (the "
                                    "barrier expects one arrival per phase)")
                cur["expected"] += nbytes
                continue
            n = fills[s]
            if rel.released(s) < n:
                bad["overwrite"].append(
                    f"t={t:.0f}: the producer claimed slot {s} for its fill #{n + 1} while the "
                    f"consumers had released it only {rel.released(s)} time(s)")
            else:
                due = max(free_at.get((s, n), 0.0), last_claim) + wake_clk
                if t > due + 1e-6:
                    bad["starved"].append(f"t={t:.0f}: slot {s}'s fill #{n + 1} claimed "
                                          f"{t - due + wake_clk:.0f} clk after it could have been")
            fills[s] = n + 1
            fill[s] = {"n": n, "t": t, "expected": nbytes, "copies": [], "done": False}
            last_claim = t
        elif kind == "arrive" and f[1] in empty:
            s = empty[f[1]]
            bad["overwrite"] += _released(rel, reads, i, s, [("k", s), ("v", s)], f, actors)
        elif kind == "complete" and f[1] in empty:
            s = empty[f[1]]
            rel.complete(s)
            free_at[s, rel.phases[s]] = f[0]
            for key in (("k", s), ("v", s)):
                bad["overwrite"] += reads.still_read(key, f[0], f"{f[1]} completed (the slot is "
                                                     "free to refill)")
        elif kind == "complete" and f[1] in full:
            s = full[f[1]]
            if fill[s] is not None and not fill[s]["done"]:
                fill[s]["done"] = True
                close(s)
        elif kind == "tma":
            t, _actor, op, bar, tile, nbytes = f
            if bar.endswith("q_full"):
                copied["q"] += 1
                continue
            if bar not in full:
                bad["copy"].append(f"t={t:.0f}: {op} completes on {bar!r}, not on a slot's full "
                                   f"barrier {ring}.full[s]")
                continue
            s = full[bar]
            if op not in ("load K", "load V"):
                bad["copy"].append(f"t={t:.0f}: a copy named {op!r} (\"load K\" or \"load V\")")
                continue
            block = _kv_block(tile)
            if block is None:
                bad["copy"].append(f"t={t:.0f}: {op} into slot {s} tagged {tile!r}, not "
                                   "cta.tile('kv', j)")
            elif block % stages != s:
                bad["copy"].append(f"t={t:.0f}: {op} of block {block} into slot {s}, block "
                                   f"{block}'s slot is {block % stages}")
            if nbytes != block_bytes:
                bad["copy"].append(f"t={t:.0f}: {op} of {nbytes} bytes, a tile is {block_bytes}")
            r = "k" if op == "load K" else "v"
            bad["overwrite"] += reads.still_read((r, s), t, f"{op} into slot {s} was issued")
            reads.refill((r, s))
            copied[r].append(block)
            cur = fill[s]
            if cur is None or cur["done"]:
                bad["bytes"].append(f"t={t:.0f}: {op} of block {block} issued before its bytes "
                                    f"were announced on {bar} (expect)")
            else:
                cur["copies"].append((op, block, nbytes))
                if t > cur["t"] + 1e-6:
                    bad["starved"].append(f"t={t:.0f}: {op} of block {block} issued "
                                          f"{t - cur['t']:.0f} clk after its slot was claimed")
            content[r, s] = (block, False)
        elif kind == "landed" and f[3] in full:
            _t, _actor, op, bar, tile, _nbytes = f
            r, s = ("k" if op == "load K" else "v"), full[bar]
            block = _kv_block(tile)
            if content.get((r, s)) == (block, False):
                content[r, s] = (block, True)
        elif kind == "wgmma" and f[2] in READS:
            reads.read(_check_read(f, stages, content, bad), *f[1:4])
    return copied, bad


def _acting_as(role, name_of, acting: list, names: list):
    """`role` as `simulate` calls it, its generator stepped by `_stepped` under its actor's name
    (`name_of(view, *args)`, appended to `names`)."""
    def start(view, *args):
        gen = role(view, *args)
        if not hasattr(gen, "send"):
            return gen                                  # not a generator: the model says so
        names.append(name_of(view, *args))
        return _stepped(gen, names[-1], acting)
    return start


def _stepped(gen, name: str, acting: list):
    """Run generator `gen` as a SimPy process would, with acting[0] = `name` while it runs: the
    model logs each arrive in the step of the role that makes it, so the events logged in that
    step are that role's."""
    value, error = None, None
    while True:
        acting[0] = name
        try:
            event = gen.send(value) if error is None else gen.throw(error)
        except StopIteration as stop:
            return stop.value
        finally:
            acting[0] = None
        value, error = None, None
        try:
            value = yield event
        except GeneratorExit:
            gen.close()
            raise
        except Exception as e:  # noqa: BLE001 - a failed event or an interrupt: the role's to see
            error = e


def run_cta(producer=None, consumer=None, variant: str = "ws", n_blocks: int = 8, stages: int = 2,
            hw: Hardware = H100, limit_clk: float = 5e6, shared_ring: bool = False,
            **cfg_kw) -> Checked:
    """One CTA of `variant` (tab. 2 tiles) over n_blocks K/V blocks, with the student's producer
    and/or consumer in place of the variant's own, judged from its event log (`check_ring`, or
    with `shared_ring` `check_shared_ring`: K_j and V_j in one slot of ring `k`). Each event is
    tagged with the supplied role acting when it was logged (`Checked.actors`), so that a slot
    counts as released by the consumers' own arrivals when the consumers are supplied."""
    acting: list = [None]
    roles, consumers = {}, []
    if producer is not None:
        roles["producer"] = _acting_as(producer, lambda view: view.producer_name, acting, [])
    if consumer is not None:
        roles["consumer"] = _acting_as(consumer, lambda view, w: view.wg(w), acting, consumers)
    actors: list = []
    run = simulate(AttentionConfig(variant=variant, stages=stages, **cfg_kw), hw,
                   roles=roles or None, on_event=lambda _ev: actors.append(acting[0]),
                   n_blocks=n_blocks, limit_clk=limit_clk)
    cfg = run.config
    block_bytes = cfg.block_n * cfg.headdim * (1 if cfg.dtype == "fp8" else 2)
    who = {"ends": group_ends(run.trace)}
    if consumer is not None:                 # the model's own consumers are not told apart
        who.update(actors=actors, consumers=tuple(consumers))
    if shared_ring:
        copied, violations = check_shared_ring(
            run.events, cfg.stages, block_bytes, max(hw.mbarrier_clk, hw.mbarrier_probe_clk),
            **who)
    else:
        copied, violations = check_ring(run.events, cfg.stages, block_bytes, **who)
    return Checked(run, n_blocks, copied, violations, actors)


def reference_clk(variant: str, n_blocks: int = 8, stages: int = 2, hw: Hardware = H100,
                  **cfg_kw) -> float:
    run = run_cta(variant=variant, n_blocks=n_blocks, stages=stages, hw=hw, **cfg_kw)
    assert run.finished and not any(run.violations.values()), (run.error, run.violations)
    return run.clk


def gemm_groups(trace: Trace, op: str) -> dict[tuple[str, object], tuple[float, float]]:
    """(actor, tile) -> (first start, last end) of each wgmma group `op` on the tensor core."""
    spans: dict = {}
    for i in trace.intervals:
        if i.unit == "tensor" and i.op == op:
            key = (i.actor, i.tile)
            a, b = spans.get(key, (i.start, i.end))
            spans[key] = (min(a, i.start), max(b, i.end))
    return spans


def overlaps(trace: Trace, op: str) -> list[str]:
    """Pairs of `op` groups of different warpgroups whose spans overlap on the tensor core."""
    spans = sorted(gemm_groups(trace, op).items(), key=lambda kv: kv[1][0])
    found = []
    for (k1, (a1, b1)), (k2, (a2, b2)) in itertools.combinations(spans, 2):
        if k1[0] != k2[0] and a2 < b1 - 1e-9 and a1 < b2 - 1e-9:
            found.append(f"{k1[0]} {op} {k1[1]} [{a1:.0f}, {b1:.0f}) overlaps "
                         f"{k2[0]} {op} {k2[1]} [{a2:.0f}, {b2:.0f})")
    return found
