"""The h200 preset's wgmma issue cost and queue come from the issue microbenchmark
(instruments/micro/issue.py, results/h200-issue.json), and the model, running that same
benchmark, draws the measured curves.

* the three issue constants are the fit `issue.constants` makes to the committed rows;
* the model of the benchmark — G groups issued back to back by 1 or 2 warpgroups, the clock after
  each issue — matches one warpgroup's curves, first group and last wait, and a queue of 7
  matches them better than 6 or 8 (so the depth is measured, not free);
* with two warpgroups the model is fast by up to 40 % on the first group (part of the issue is
  shared between warpgroups, as results/h200-issue.json's two-warpgroup rows show); their total time stays within 10 %;
* the same queue explains the traced s2 GEMMs' ``MMA`` scopes: 12 wgmmas of one warpgroup
  (pingpong) against 4 of each of two (ws).
"""
import json
import statistics
from pathlib import Path

import pytest
import simpy

from records import RESULTS as RESULTS_DIR
from records import trace
from instruments.micro import issue
from sim.cta import CTA
from sim.hardware import H200 as H200_KERNELS

# the benchmark reuses one pair of descriptors: none of the kernels' per-wgmma address work
H200 = H200_KERNELS.with_(wgmma_descriptor_clk=0.0)
from sim.trace import Trace

RESULTS = RESULTS_DIR / "h200-issue.json"
ROWS = json.loads(RESULTS.read_text())["rows"]


def model_curve(row: dict, hw=H200) -> list[float]:
    """The benchmark in the model: warpgroup 0's clock after each group's issue, then after the
    wait for all of them (the row's ``clk_after_issue[0] + [clk_after_wait[0]]``)."""
    env = simpy.Environment()
    cta = CTA(env, hw, Trace(), "fp16", row["warpgroups"])
    curves = {}

    def warpgroup(w):
        times, last = [], None
        for g in range(row["groups"]):
            rs = row["mode"] == "RS" or (row["mode"] == "SS+RS" and g % 2)
            last = cta.wgmma(w, "MMA", 64, row["N"], 16 * row["instr_per_group"], not rs, None)
            yield cta.issued(w)
            times.append(env.now)
        yield last
        curves[w] = times + [env.now]

    for w in range(row["warpgroups"]):
        env.process(warpgroup(w))
    env.run()
    return curves[0]


def measured_curve(row: dict) -> list[float]:
    return row["clk_after_issue"][0] + [row["clk_after_wait"][0]]


def rel(a, b):
    return abs(a - b) / b


def test_every_row_checked_out():
    assert len(ROWS) >= 20 and all(r["ok"] and r["rel_err"] < 1e-3 for r in ROWS)


def test_issue_constants_are_the_fit():
    c = issue.constants(ROWS)
    assert c["rows"] >= 6 and c["worst_fit_clk"] < 10
    for name in ("wgmma_issue_clk", "wgmma_issue_clk_per_n", "wgmma_issue_rs_clk"):
        assert getattr(H200, name) == pytest.approx(c[name], rel=0.02), name
    # what the fit says: an SS m64n128k16 about 18 clk, an RS one about 11 more
    assert 15 < H200.wgmma_issue_clk + 128 * H200.wgmma_issue_clk_per_n < 21
    assert 8 < H200.wgmma_issue_rs_clk < 14


ONE_WG = [r for r in ROWS if r["warpgroups"] == 1]


@pytest.mark.parametrize("row", [r for r in ONE_WG if r["instr_per_group"] >= 4],
                         ids=lambda r: r["name"])
def test_one_warpgroup_groups(row):
    model, meas = model_curve(row), measured_curve(row)
    assert rel(model[0], meas[0]) < 0.10, (model[0], meas[0])      # the first issue
    # all of them done (one warpgroup's m64n64k16 runs at 44 clk, not 32: h200-micro.json, 5 %)
    assert rel(model[-1], meas[-1]) < 0.06, (model[-1], meas[-1])


def _blocked_error(depth: int) -> float:
    """Median error of the model's curve over the single-instruction RS and N 256 rows, once
    each has fallen to the pipe's pace (the steps where the depth shows)."""
    hw = H200.with_(wgmma_queue_depth=depth)
    errors = []
    for row in ONE_WG:
        if row["instr_per_group"] == 1 and (row["mode"] == "RS" or row["N"] == 256):
            model, meas = model_curve(row, hw), measured_curve(row)
            errors += [rel(m, c) for m, c in zip(model[12:-1], meas[12:-1])]
    return statistics.median(errors)


def test_queue_depth_fits_the_blocked_curves():
    at = {d: _blocked_error(d) for d in (6, 7, 8)}
    assert H200.wgmma_queue_depth == 7
    assert at[7] < 0.05 and at[7] < at[6] and at[7] < at[8], at


@pytest.mark.parametrize("row", [r for r in ROWS
                                 if r["warpgroups"] == 2 and r["instr_per_group"] >= 4],
                         ids=lambda r: r["name"])
def test_two_warpgroups_total(row):
    model, meas = model_curve(row), measured_curve(row)
    assert rel(model[-1], meas[-1]) < 0.10
    assert model[0] <= meas[0] * 1.05            # the known miss: the model's first group is early


def _issue_return(wgs, rows, n, k):
    env = simpy.Environment()
    cta = CTA(env, H200, Trace(), "fp16", wgs)
    out = []

    def warpgroup(w):
        cta.wgmma(w, "MMA", rows, n, k, True, None)
        yield cta.issued(w)
        out.append(env.now)

    for w in range(wgs):
        env.process(warpgroup(w))
    env.run()
    return statistics.mean(out)


def test_the_s2_gemms_mma_scopes():
    """The s2 GEMMs' `MMA` scope is mostly issue (the group it then waits for finished long
    before): pingpong's one warpgroup issues 3 × 4 m64n128k16, ws's two 4 m64n256k16 each."""
    pp = trace.load("gemm_ws_pingpong_s2")[1]["roles"]["consumer0"]["MMA"]["mean_clk"]
    ws = trace.load("gemm_ws_s2")[1]["roles"]["consumer0"]["MMA"]["mean_clk"]
    model_pp, model_ws = _issue_return(1, 192, 128, 64), _issue_return(2, 64, 256, 64)
    assert model_pp - model_ws == pytest.approx(pp - ws, rel=0.15)
    assert model_ws < model_pp < pp                 # the scope adds the wait and its clock reads


def test_descriptor_cost_is_the_ledgers():
    """`wgmma_descriptor_clk`: the uniform-datapath work ("other") fa3's consumer warps spend a
    block (Nsight Compute: h200-stall.json at d 128, h200-stall-dims.json at d 64 and 256) over
    the wgmmas a warpgroup issues a block — Q·Kᵀ's d/16 and P·V's BN/16 — within 25 % at each
    head dim."""
    from kernels.attention import config

    results = RESULTS.parent
    rows = [r for r in json.loads((results / "h200-stall.json").read_text())["rows"]
            if r["variant"] == "fa3"]
    rows += json.loads((results / "h200-stall-dims.json").read_text())["rows"]
    for r in rows:
        d = r.get("d", 128)
        wgmmas = d // 16 + config("fa3", d).BN // 16
        per = r["ledger"]["clk_per_block"]["other"] / wgmmas
        assert per == pytest.approx(H200_KERNELS.wgmma_descriptor_clk, rel=0.25), (d, per)
