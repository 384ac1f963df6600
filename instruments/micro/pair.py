"""The SM-to-SM crossing: an mbarrier hand-off between the two CTAs of a cluster of two (two
SMs, distributed shared memory) against the same hand-off between two warps of one SM.

The model charges a CTA pair's hand-off ``sm_pair_hop_clk`` beyond a local one (``sim/machine.py``;
the ``b200`` preset's 75.5 clk is half of Hopper's ~180 clk SM-to-SM load latency less its 29 clk
shared-memory latency, arXiv 2402.13499: no one had timed a one-way remote arrive). This
benchmark times it on Hopper. ``pair.cu`` (CUDA C++: Gluon 3.6 has neither clusters nor
``mapa``) runs a ping-pong of single threads, ``iters`` round trips, ``%clock64`` around ping's
loop, in four modes:

* ``local``: two warps of one CTA, ``mbarrier.arrive`` on each other's barrier (``mbar.py``'s
  warp row, in CUDA C++);
* ``cluster_self``: the same two warps, the arrive on a ``shared::cluster`` address ``mapa``
  gives for their own CTA (the remote instruction, ``SYNCS.ARRIVE.TRANS64.RED``, no crossing);
* ``remote_arrive``: ping in CTA rank 0, pong in rank 1, each arriving on the other's barrier
  (as CUTLASS's ``ClusterBarrier::arrive(cta_id)`` and FA4's pair barriers): one crossing per
  hand-off;
* ``remote_store``: the same pair, each send an ``st.async`` of 4 bytes into the peer's shared
  memory that completes 4 bytes of transaction on the peer's barrier (how a pair passes data;
  the receiver re-arms its barrier with one local ``arrive.expect_tx`` per hand-off, and checks
  the value).

Per row, over clusters (one CTA per SM, ``ONE_CTA_SMEM`` in ``pair.cu``; 66 clusters on 132
SMs): ``clk_per_round_trip`` (median of ping's cycles / iters) and ``clk_per_handoff`` (half of
it). The crossing: ``crossing_clk`` = (remote − local) / 2 per hand-off — the model's
``sm_pair_hop_clk``, which it adds to a local hand-off — and (remote − cluster_self) / 2, the
part that is the distance alone. Which SMs a cluster got is recorded (``%smid`` of both CTAs);
``same_tpc`` counts pairs {2k, 2k+1} — a reading of ``%smid``, which NVIDIA does not document as
a TPC index — and the remote rows give the round trip of those pairs and of the others apart.

Check: each side completes ``iters`` round trips (counted on the device; a lost or extra phase
hangs, so run under ``timeout``), every CTA wrote its stats and had an SM of its own, and in
``remote_store`` every value received is the round trip's number.

    python -m instruments.micro.pair --out DIR     # ~10 s on a Hopper GPU (the first run builds)
"""
from __future__ import annotations

import ctypes
import functools
import os
from pathlib import Path

from . import common

SOURCE = Path(__file__).resolve().with_name("pair.cu")
MODES = ("local", "cluster_self", "remote_arrive", "remote_store")   # pair.cu's Mode, in order
TWO_SMS = ("remote_arrive", "remote_store")
STATS = 8          # per CTA: clock start, end, globaltimer start, end, smid, rank, done, wrong
ITERS = 100_000
SEED = 31


@functools.cache
def library() -> ctypes.CDLL:
    """Build ``pair.cu`` (once: torch's cpp_extension, the CUDA twins' flags) and load it."""
    from torch.utils import cpp_extension

    from kernels.cuda import HERE, NVCC_FLAGS

    build = Path(os.environ.get("KERNELS_CUDA_BUILD", HERE / "build")) / "sm_pair"
    build.mkdir(parents=True, exist_ok=True)
    path = cpp_extension.load(name="sm_pair_pingpong", sources=[str(SOURCE)],
                              extra_cuda_cflags=list(NVCC_FLAGS), extra_include_paths=[str(HERE)],
                              build_directory=str(build), is_python_module=False, verbose=False)
    lib = ctypes.CDLL(str(path))
    lib.sm_pair_pingpong.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                     ctypes.c_void_p]
    lib.sm_pair_pingpong.restype = ctypes.c_char_p
    return lib


def pingpong(stats, iters: int, mode: str, clusters: int) -> None:
    """Launch ``clusters`` clusters of ``mode``'s ping-pong into ``stats`` (int64, 2·clusters x
    STATS, on the GPU)."""
    import torch

    err = library().sm_pair_pingpong(stats.data_ptr(), iters, MODES.index(mode), clusters,
                                     torch.cuda.current_stream().cuda_stream)
    if err is not None:
        raise RuntimeError(f"sm_pair_pingpong({mode}): {err.decode()}")


def compile_sm90() -> tuple[Path, str]:
    """``pair.cu`` compiled for sm_90a without a GPU (nvcc from the CUDA wheel): (cubin, ptxas
    report)."""
    from kernels.cuda import compile as cc

    return cc.compile_cubin(str(SOURCE))


def same_tpc(sm0: int, sm1: int) -> bool:
    return sm0 // 2 == sm1 // 2 and sm0 != sm1


def read(stats, iters: int, mode: str) -> dict:
    """A row from one launch's stats (host arithmetic only)."""
    s = stats.cpu().long()
    ping, pong = s[0::2], s[1::2]
    cycles = (ping[:, 1] - ping[:, 0]).double()
    ns = (ping[:, 3] - ping[:, 2]).double()
    sms = s[:, 4].tolist()
    pairs = list(zip(ping[:, 4].tolist(), pong[:, 4].tolist()))
    want = [(2 * iters, 0)] * len(pairs) if mode not in TWO_SMS else [(iters, iters)] * len(pairs)
    done = list(zip(ping[:, 6].tolist(), pong[:, 6].tolist()))
    # ping's clocks, both CTAs' SM and rank (rank 0 pings: pair.cu)
    written = bool((ping[:, :6] >= 0).all() and (pong[:, 4:6] >= 0).all()
                   and ping[:, 5].eq(0).all() and pong[:, 5].eq(1).all())
    rt = cycles / iters
    row = {"bench": "sm_pair", "mode": mode, "iters": iters, "clusters": len(pairs),
           "clk_per_round_trip": common.median(rt), "clk_per_handoff": common.median(rt) / 2,
           "round_trip_min": float(rt.min()), "round_trip_max": float(rt.max()),
           "clock_hz": float((cycles / ns).median()) * 1e9, "smid_pairs": pairs,
           "same_tpc": sum(same_tpc(a, b) for a, b in pairs),
           "one_cta_per_sm": len(set(sms)) == len(sms), "written": written,
           "round_trips_done": done == want, "wrong_values": int(s[:, 7].sum())}
    if mode in TWO_SMS:
        for key, keep in (("same_tpc", True), ("other_pairs", False)):
            sel = [i for i, (a, b) in enumerate(pairs) if same_tpc(a, b) == keep]
            if sel:
                row[f"clk_per_round_trip_{key}"] = common.median(rt[sel])
    row["ok"] = (row["one_cta_per_sm"] and row["written"] and row["round_trips_done"]
                 and row["wrong_values"] == 0)
    return row


def run(mode: str, iters: int = ITERS, clusters: int | None = None) -> dict:
    """A short warm-up launch, then one of ``iters`` round trips in every cluster."""
    import torch

    if mode not in MODES:
        raise ValueError(f"mode {mode!r}: expected one of {MODES}")
    clusters = clusters or common.sm_count() // 2

    def launch(n: int):
        stats = torch.full((2 * clusters, STATS), -1, dtype=torch.int64, device=common.DEVICE)
        pingpong(stats, n, mode, clusters)
        common.sync()
        return stats

    launch(100)
    return read(launch(iters), iters, mode)


def crossing(rows: list[dict]) -> dict:
    """Per hand-off: what crossing to the other SM adds to a local hand-off (the model's
    ``sm_pair_hop_clk``) and to the same remote instruction on the own SM."""
    by = {r["mode"]: r for r in rows if r["ok"]}
    out = {}
    for remote in TWO_SMS:
        if remote not in by:
            continue
        for base in ("local", "cluster_self"):
            if base in by:
                out[f"{remote}_vs_{base}_clk"] = (by[remote]["clk_per_handoff"]
                                                  - by[base]["clk_per_handoff"])
    return out


def rows(gen) -> list[dict]:
    out = [run(m) for m in MODES]
    summary = crossing(out)
    if summary:
        out.append({"bench": "sm_pair_crossing", "ok": True, **summary})
    return out


def line(r: dict) -> str:
    if r["bench"] == "sm_pair_crossing":
        return "crossing per hand-off (clk): " + ", ".join(
            f"{k.removesuffix('_clk')} {v:+.1f}" for k, v in r.items() if k.endswith("_clk"))
    text = (f"{r['mode']:14s} ok={r['ok']} round trip {r['clk_per_round_trip']:7.1f} clk "
            f"(hand-off {r['clk_per_handoff']:6.1f}; {r['round_trip_min']:.0f}-"
            f"{r['round_trip_max']:.0f}), {r['same_tpc']}/{r['clusters']} pairs on one TPC")
    if r["wrong_values"]:
        text += f", {r['wrong_values']} wrong values"
    return text


if __name__ == "__main__":
    raise SystemExit(common.cli(__doc__, "h200-pair.json", SEED, rows, line))
