"""The model's numbers for three device measurements, computed before they run, and set beside
what they measured once their files are in `results/`:

* **the SM pair's crossing** (`instruments/micro/pair.py` → `h200-pair.json`): a ping-pong of
  mbarrier arrivals between two warps of one SM and between the two CTAs of a cluster of two.
  The model's hand-off is `mbarrier_clk` (`h200`); a CTA pair's adds `sm_pair_hop_clk` — the
  `b200` preset's, the only value the model has, derived from Hopper's SM-to-SM load latency
  (`docs/constants.md`). The benchmark, in the model: two `MBarrier`s, a round trip each way.
* **O's rescale beside its own Q·Kᵀ** (`instruments/micro/rescale.py` → `h200-rescale.json`):
  one warpgroup issues fa3's d 256 Q·Kᵀ (16 SS m64n64k16), then O's 128 FMULs a thread, then
  waits. In the model: the attention CTA's own `qk` and `rescale` steps on one warpgroup of the
  kernel's tile, the clock read between them; also each alone.
* **the consumers' phase in fa3+lane_sum+no_turns at d 256** (`instruments/trace.py --softmax
  lane_sum,no_turns` → `traces/attention_fa3_d256+lane_sum+no_turns.*`): the model run at the
  committed d 256 trace's configuration with the switches the build has, its lanes read by
  `lanes.consumer_phase` — and with turns, beside the committed trace's own phase.

    python -m fidelity probes        # the predictions, and any measurement already committed

The measurements are read per board (`BOARDS`): `results/h200-*.json` and the traces in
`results/traces/`, and an H100's (the same GH100 die on the paper's board) as `h100-*.json` and
`results/traces/h100/` — the benchmarks write `h200-` names whatever they run on, so an H100's
files are renamed when they are committed.
"""
from __future__ import annotations

import json

import simpy

from records import RESULTS
from records import trace as rtrace
from sim import hardware
from sim.attention.cta import AttentionCTA
from sim.config import AttentionConfig
from sim.engine import MBarrier
from sim.trace import Trace

from . import lanes

ROUND_TRIPS = 16            # the model is deterministic: every round trip is the same
D256_TRACE = "attention_fa3_d256"
NO_TURNS = ("lane_sum", "no_turns")
RESCALE_MODES = ("FMULs after Q·Kᵀ", "FMULs alone", "Q·Kᵀ alone")   # rescale.py's rows


def _h200():
    return hardware.get("h200")


def pair_round_trips(hw=None, hop: float | None = None) -> dict:
    """The ping-pong in the model: clk per round trip between two warps of one SM (`local`) and
    across a CTA pair (`remote`: each hand-off `hop` later; default the `b200` preset's
    `sm_pair_hop_clk`), and the crossing per hand-off the benchmark reads,
    (remote − local) / 2."""
    hw = hw or _h200()
    hop = hardware.get("b200").sm_pair_hop_clk if hop is None else hop

    def round_trip(wake: float) -> float:
        env = simpy.Environment()
        ping_in, pong_in = (MBarrier(env, n, 1, wake) for n in ("ping", "pong"))
        back = []       # when each reply woke ping

        def ping():
            for i in range(ROUND_TRIPS):
                pong_in.arrive()
                yield from ping_in.wait(i & 1)
                back.append(env.now)

        def pong():
            for i in range(ROUND_TRIPS):
                yield from pong_in.wait(i & 1)
                ping_in.arrive()

        env.process(ping())
        env.process(pong())
        env.run()
        # steady round trips: the first send finds pong not yet waiting (no wake-up to pay)
        return (back[-1] - back[0]) / (len(back) - 1)

    local, remote = round_trip(hw.mbarrier_clk), round_trip(hw.mbarrier_clk + hop)
    return {"local": local, "remote": remote, "crossing_clk": (remote - local) / 2,
            "hop_clk": hop}


def rescale_spans(hw=None) -> dict[str, dict]:
    """The rescale benchmark in the model, per mode: clk from the first wgmma issued to the last
    (`issue`), the FMULs (`fmul`), the wait for the scores (`wait`), and their sum (`group`).
    One warpgroup of fa3's d 256 tile (64 rows, K blocks of 64)."""
    hw = hw or _h200()
    cfg = AttentionConfig(variant="fa3", headdim=256, block_m=64, block_n=64, consumers=1)
    out = {}
    for mode in RESCALE_MODES:
        env = simpy.Environment()
        cta = AttentionCTA(env, hw, cfg, Trace(), n_blocks=1)
        qk, fmul = mode != "FMULs alone", mode != "Q·Kᵀ alone"
        stamps = []

        def warpgroup():
            stamps.append(env.now)
            scores = cta.qk(0, 0) if qk else None
            if qk:
                yield cta.issued(0)
            stamps.append(env.now)
            if fmul:
                yield from cta.rescale(0, 0)
            stamps.append(env.now)
            if qk:
                yield scores
            stamps.append(env.now)

        env.process(warpgroup())
        env.run()
        t0, t1, t2, t3 = stamps
        out[mode] = {"issue": t1 - t0, "fmul": t2 - t1, "wait": t3 - t2, "group": t3 - t0}
    return out


def consumer_phases(hw=None) -> dict:
    """fa3 at the committed d 256 trace's configuration: the model's consumer phase and block
    with the build's switches (lane_sum, the default there) and with no_turns on top; the
    committed trace's own phase (median over its CTAs)."""
    hw = hw or _h200()
    trace, summary = rtrace.load(D256_TRACE)
    out = {"measured_with_turns": sorted(lanes.consumer_phase(c["lanes"])
                                         for c in rtrace.read_events(trace).values())}
    for key, softmax in (("with_turns", summary.get("softmax", ["lane_sum"])),
                         ("no_turns", list(NO_TURNS))):
        model, _ = lanes.run_model({**summary, "softmax": softmax}, hw)
        out[key] = {"phase_clk": lanes.consumer_phase(lanes.lanes(model)),
                    "block_clk": lanes.model_stats(model, "attention", rtrace.SKIP)["period_clk"]}
    return out


# h100: the same die (GH100) on an H100 SXM board; its traces in traces/h100
BOARDS = ("h200", "h100")


def measured() -> dict[str, dict]:
    """What the three measurements left in `results/`, per board where they have run: the pair
    and rescale rows (`<board>-pair.json`, `<board>-rescale.json`) and the d 256 traces'
    consumer phase and block, with turns and without (`traces/`, the h100's in `traces/h100/`)."""
    out: dict[str, dict] = {}
    traces = {"with_turns": D256_TRACE, "no_turns": "+".join((D256_TRACE, *NO_TURNS))}
    for board in BOARDS:
        got = {}
        for key in ("pair", "rescale"):
            path = RESULTS / f"{board}-{key}.json"
            if path.exists():
                got[key] = json.loads(path.read_text())
        where = rtrace.RESULTS if board == "h200" else rtrace.RESULTS / board
        for key, name in traces.items():
            if (where / f"{name}.summary.json").exists():
                trace, summary = rtrace.load(name, where)
                got[f"{key}_phase"] = sorted(lanes.consumer_phase(c["lanes"])
                                             for c in rtrace.read_events(trace).values())
                got[f"{key}_block"] = summary["period_clk"]
        if got:
            out[board] = got
    return out


def measured_lines(board: str, got: dict) -> list[str]:
    """The measured numbers in the model's terms (the report's lines above them)."""
    lines = []
    rows = {r.get("mode"): r for r in got.get("pair", []) if r.get("bench") == "sm_pair"}
    cross = next((r for r in got.get("pair", []) if r.get("bench") == "sm_pair_crossing"), None)
    if "local" in rows and cross:
        local = rows["local"]["clk_per_round_trip"]
        lines.append(f"  {board} measured pair: round trip local {local:.1f} clk; crossing"
                     f" {cross['remote_arrive_vs_local_clk']:.1f} clk a hand-off "
                     f"(remote arrive), {cross['remote_store_vs_local_clk']:.1f} (remote store)")
    if "rescale" in got:
        lines.append(f"  {board} measured rescale: " + "; ".join(
            f"{r['mode']}: FMULs {r.get('fmul_clk', float('nan')):.0f} clk, group "
            f"{r.get('group_clk', float('nan')):.0f}" for r in got["rescale"]))
    for key in ("with_turns", "no_turns"):
        if f"{key}_phase" in got:
            lines.append(f"  {board} measured {key}: phase "
                         f"{', '.join(f'{p:.0f}' for p in got[f'{key}_phase'])} clk, block "
                         f"{got[f'{key}_block']:.0f} clk")
    return lines


def report() -> str:
    pair = pair_round_trips()
    spans = rescale_spans()
    phases = consumer_phases()
    beside, alone = spans["FMULs after Q·Kᵀ"], spans["FMULs alone"]
    lines = [
        "SM pair ping-pong (h200 hand-off, b200's crossing): round trip local "
        f"{pair['local']:.1f} clk, across the pair {pair['remote']:.1f} clk; crossing "
        f"{pair['crossing_clk']:.1f} clk a hand-off",
        "O's rescale beside its own Q·Kᵀ (d 256, one warpgroup): " + "; ".join(
            f"{m}: " + ", ".join(f"{k} {v:.0f}" for k, v in s.items()) for m, s in spans.items()),
        f"  the FMULs {beside['fmul']:.0f} clk beside Q·Kᵀ, {alone['fmul']:.0f} alone "
        f"(x{beside['fmul'] / alone['fmul']:.2f})",
        f"fa3 d 256 consumers' phase: with turns {phases['with_turns']['phase_clk']:.0f} clk "
        f"(block {phases['with_turns']['block_clk']:.0f}; the committed trace's CTAs: "
        f"{', '.join(f'{p:.0f}' for p in phases['measured_with_turns'])}), no_turns "
        f"{phases['no_turns']['phase_clk']:.0f} clk (block {phases['no_turns']['block_clk']:.0f})",
    ]
    for board, got in measured().items():
        lines += measured_lines(board, got)
    return "\n".join(lines)


if __name__ == "__main__":
    print(report())
