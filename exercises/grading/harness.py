"""What the exercises' tests use: the submission (its code runs in a sandbox, `student.py`), the
course's model run with a student-written role in place of the schedule's own (`sim.simulate`),
and the run judged from its event log.

The checks read only the log's plain events (`sim.EVENTS`), which the grader's own model wrote:
which K/V block each TMA copy put in which slot and when it landed, when each consumer's wgmma read
a block, when the producer claimed a slot (its `expect` on the slot's `full` barrier) and how often
the consumers had released it (phases completed on `empty`). Violations are collected, not raised,
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

    clk = property(lambda self: self.run.clk)
    finished = property(lambda self: self.run.finished)
    error = property(lambda self: self.run.error)
    trace = property(lambda self: self.run.trace)


def check_ring(events: list[tuple], stages: int, block_bytes: int) -> tuple[dict, dict]:
    """Replay one attention CTA's event log and judge its K/V rings: (copied, violations)."""
    full = {f"{r}.full[{s}]": (r, s) for r in "kv" for s in range(stages)}
    empty = {f"{r}.empty[{s}]": (r, s) for r in "kv" for s in range(stages)}
    fills = {(r, s): 0 for r, s in full.values()}          # the producer's claims per slot
    released = {(r, s): 0 for r, s in full.values()}       # phases completed on empty
    content: dict = {}                                     # (r, s) -> (block, landed?)
    copied: dict = {"k": [], "v": [], "q": 0}
    bad: dict[str, list[str]] = {"read_before_land": [], "overwrite": [], "copy": []}
    for kind, *f in events:
        if kind == "expect" and f[1] in full:
            t, name, nbytes = f
            r, s = full[name]
            n = fills[r, s]
            if released[r, s] < n:
                bad["overwrite"].append(
                    f"t={t:.0f}: the producer claimed {r}-slot {s} for its fill #{n + 1} while "
                    f"the consumers had released it only {released[r, s]} time(s)")
            if nbytes != block_bytes:
                bad["copy"].append(f"t={t:.0f}: expect of {nbytes} bytes on {name}, a block is "
                                   f"{block_bytes}")
            fills[r, s] = n + 1
        elif kind == "complete" and f[1] in empty:
            released[empty[f[1]]] += 1
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
            if not (isinstance(tile, tuple) and len(tile) == 2 and isinstance(tile[1], int)):
                bad["copy"].append(f"copy into {r}-slot {s} not tagged with cta.tile('kv', j)")
                block = None
            else:
                block = tile[1]
            if nbytes != block_bytes:
                bad["copy"].append(f"t={t:.0f}: a copy of {nbytes} bytes into {r}-slot {s}, a "
                                   f"block is {block_bytes}")
            copied[r].append(block)
            content[r, s] = (block, False)
        elif kind == "landed" and f[3] in full:
            t, _actor, _op, bar, tile, _nbytes = f
            key = full[bar]
            block = tile[1] if isinstance(tile, tuple) and len(tile) == 2 else None
            if content.get(key) == (block, False):
                content[key] = (block, True)
        elif kind == "wgmma" and f[2] in READS:
            _check_read(f, stages, content, bad)
    return copied, bad


def _check_read(event: list, stages: int, content: dict, bad: dict) -> None:
    """A wgmma event (its fields after the kind) that reads K or V block j: slot j % stages must
    hold block j, landed."""
    t, actor, op, tile = event[:4]
    r, j = READS[op], tile[1]
    s = j % stages
    have = content.get((r, s))
    if have != (j, True):
        what = ("nothing" if have is None else
                f"block {have[0]} ({'landed' if have[1] else 'still in flight'})")
        bad["read_before_land"].append(
            f"t={t:.0f}: {actor} read {r.upper()} block {j} from slot {s}, which holds {what}")


def check_shared_ring(events: list[tuple], stages: int, block_bytes: int, wake_clk: float,
                      ring: str = "k") -> tuple[dict, dict]:
    """Replay a CTA whose K_j and V_j share slot j % stages of ONE ring (`ring`.full[s] for both
    copies, `ring`.empty[s] for the consumers' release) and judge its producer: (copied,
    violations). Checks: which block went where; no read before land; no refill before release;
    one expect per fill, before its copies, of exactly the bytes they land; each fill claimed no
    later than `wake_clk` after its slot was free (or after the previous claim, if later) and its
    copies issued at the claim."""
    full = {f"{ring}.full[{s}]": s for s in range(stages)}
    empty = {f"{ring}.empty[{s}]": s for s in range(stages)}
    fills, released = [0] * stages, [0] * stages
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

    for kind, *f in events:
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
            if released[s] < n:
                bad["overwrite"].append(
                    f"t={t:.0f}: the producer claimed slot {s} for its fill #{n + 1} while the "
                    f"consumers had released it only {released[s]} time(s)")
            else:
                due = max(free_at.get((s, n), 0.0), last_claim) + wake_clk
                if t > due + 1e-6:
                    bad["starved"].append(f"t={t:.0f}: slot {s}'s fill #{n + 1} claimed "
                                          f"{t - due + wake_clk:.0f} clk after it could have been")
            fills[s] = n + 1
            fill[s] = {"n": n, "t": t, "expected": nbytes, "copies": [], "done": False}
            last_claim = t
        elif kind == "complete" and f[1] in empty:
            s = empty[f[1]]
            released[s] += 1
            free_at[s, released[s]] = f[0]
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
            block = tile[1] if isinstance(tile, tuple) and len(tile) == 2 and \
                isinstance(tile[1], int) else None
            if block is None:
                bad["copy"].append(f"{op} into slot {s} not tagged with cta.tile('kv', j)")
            elif block % stages != s:
                bad["copy"].append(f"t={t:.0f}: {op} of block {block} into slot {s}, block "
                                   f"{block}'s slot is {block % stages}")
            if nbytes != block_bytes:
                bad["copy"].append(f"t={t:.0f}: {op} of {nbytes} bytes, a tile is {block_bytes}")
            r = "k" if op == "load K" else "v"
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
            block = tile[1] if isinstance(tile, tuple) and len(tile) == 2 else None
            if content.get((r, s)) == (block, False):
                content[r, s] = (block, True)
        elif kind == "wgmma" and f[2] in READS:
            _check_read(f, stages, content, bad)
    return copied, bad


def run_cta(producer=None, consumer=None, variant: str = "ws", n_blocks: int = 8, stages: int = 2,
            hw: Hardware = H100, limit_clk: float = 5e6, shared_ring: bool = False,
            **cfg_kw) -> Checked:
    """One CTA of `variant` (tab. 2 tiles) over n_blocks K/V blocks, with the student's producer
    and/or consumer in place of the variant's own, judged from its event log (`check_ring`, or
    with `shared_ring` `check_shared_ring`: K_j and V_j in one slot of ring `k`)."""
    roles = {}
    if producer is not None:
        roles["producer"] = producer
    if consumer is not None:
        roles["consumer"] = consumer
    run = simulate(AttentionConfig(variant=variant, stages=stages, **cfg_kw), hw,
                   roles=roles or None, n_blocks=n_blocks, limit_clk=limit_clk)
    cfg = run.config
    block_bytes = cfg.block_n * cfg.headdim * (1 if cfg.dtype == "fp8" else 2)
    if shared_ring:
        copied, violations = check_shared_ring(
            run.events, cfg.stages, block_bytes, max(hw.mbarrier_clk, hw.mbarrier_probe_clk))
    else:
        copied, violations = check_ring(run.events, cfg.stages, block_bytes)
    return Checked(run, n_blocks, copied, violations)


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
