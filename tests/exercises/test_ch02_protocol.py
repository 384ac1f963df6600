"""exercises/ch02_ws_gluon/protocol.py: the producer/consumer protocol read from the TTGIR.

The source solution keeps every rule; small text edits of it (and the known-wrong submissions in
exercises/wrong/) break exactly the rule their bug is about, including the cheats that fool a PTX
regex: a wait that is only inline-asm comment text, a wait behind a branch that never runs.
The compiles run on CPU (sm_90a target, no GPU); each variant is compiled once per module."""
from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EX = ROOT / "exercises" / "ch02_ws_gluon"
WRONG = ROOT / "exercises" / "wrong"


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


protocol = _load("ch02_protocol", EX / "protocol.py")       # pure Python: no triton needed
SOURCE = (EX / "ws_gemm.py").read_text()
CONSUMER_WAITS = ("        mbarrier.wait(full_a.index(s), (it // STAGES) & 1)\n"
                  "        mbarrier.wait(full_b.index(s), (it // STAGES) & 1)\n")
CONSUMER_WAIT = "        mbarrier.wait(full_b.index(s), (it // STAGES) & 1)\n"
PRODUCER_WAIT = "        mbarrier.wait(empty.index(s), ((it // STAGES) & 1) ^ 1)\n"
EXPECT = "        mbarrier.expect(full.index(s), desc.block_type.nbytes)\n"
COPY = "tma.async_copy_global_to_shared(desc, {}, full.index(s), ring.index(s))\n"
COPIES = ("        if IS_B:\n            " + COPY.format("[k, off]")
          + "        else:\n            " + COPY.format("[off, k]"))
CALL_LOADERS = ("        (loader, (a_desc, a_ring, full_a, empty, STAGES, False)),\n"
                "        (loader, (b_desc, b_ring, full_b, empty, STAGES, True)),\n")
WGMMA = "        acc = warpgroup_mma(a_ring.index(s), b_ring.index(s), acc, is_async=True)\n"
RELEASE = "        mbarrier.arrive(empty.index((it + STAGES - 1) % STAGES), pred=it > 0)\n"
CONSUMER_LOOP = "    for it in range(k_steps):\n"
STORE = "[gl.program_id(0) * BM, gl.program_id(1) * BN], c_smem)"
WS_END = "    ], [LOADER_WARPS, LOADER_WARPS], [LOADER_REGS, LOADER_REGS])\n"

# name -> [(old, new), ...]: each old text must occur exactly once in ws_gemm.py
VARIANTS = {
    "source": [],
    "consumer_waits_on_empty": [(CONSUMER_WAIT, CONSUMER_WAIT.replace("full_b", "empty"))],
    "consumer_waits_for_a_only": [(CONSUMER_WAIT, "")],
    "producer_parity_without_xor": [(PRODUCER_WAIT, PRODUCER_WAIT.replace(
        "((it // STAGES) & 1) ^ 1", "(it // STAGES) & 1"))],
    "consumer_parity_flipped": [(CONSUMER_WAIT, CONSUMER_WAIT.replace(
        "(it // STAGES) & 1", "((it // STAGES) & 1) ^ 1"))],
    "asm_comment_wait": [(CONSUMER_WAIT, (
        '        gl.inline_asm_elementwise("// mbarrier.try_wait.parity.shared::cta.b64 P1, [b], 0;'
        '\\n\\tmov.b32 $0, $1;", "=r,r", [it], dtype=gl.int32, is_pure=False, pack=1)\n'))],
    "dead_branch_wait": [(CONSUMER_WAIT, "        if it > 1000000:\n    " + CONSUMER_WAIT)],
    "runtime_branch_wait": [(CONSUMER_WAIT, "        if gl.program_id(0) < 1000000:\n    "
                             + CONSUMER_WAIT)],
    "k_branch_wait": [(CONSUMER_WAIT, "        if K > 1000000:\n    " + CONSUMER_WAIT)],
    "wait_only_for_long_k": [(CONSUMER_WAIT, "        if K >= 512:\n    " + CONSUMER_WAIT)],
    "producer_wait_predicated_off": [(PRODUCER_WAIT, PRODUCER_WAIT.replace(") ^ 1)",
                                                                           ") ^ 1, pred=it < 0)"))],
    "missing_expect": [(EXPECT, "")],
    "expect_both_tiles": [(EXPECT, EXPECT.replace("desc.block_type.nbytes",
                                                  "2 * desc.block_type.nbytes"))],
    "copies_before_expect": [(EXPECT + COPIES, COPIES + EXPECT)],
    "producer_wrong_slot": [("        s = it % STAGES\n        mbarrier.wait(empty",
                             "        s = (it + 1) % STAGES\n        mbarrier.wait(empty")],
    "producer_keeps_registers": [("LOADER_REGS = gl.constexpr(40)",
                                  "LOADER_REGS = gl.constexpr(168)")],
    "one_full_for_both": [(CALL_LOADERS, CALL_LOADERS.replace("full_b, empty, STAGES, True",
                                                              "full_a, empty, STAGES, True")),
                          (CONSUMER_WAIT, "")],
    "box_b_in_first_column": [(COPY.format("[k, off]"), COPY.format("[k, 0]"))],
    "release_on_tile_condition": [(RELEASE, RELEASE + RELEASE.replace(
        "pred=it > 0", "pred=(it > 0) & (gl.program_id(1) > 1000000)"))],
    "two_wgmmas_a_step": [(WGMMA, WGMMA * 2)],
    "loader_releases_its_slot": [(COPIES, COPIES + "        mbarrier.arrive(empty.index(s))\n")],
    "consumer_primes_before_loop": [(CONSUMER_LOOP, "    for i in gl.static_range(STAGES):\n"
                                     "        mbarrier.arrive(empty.index(i))\n" + CONSUMER_LOOP)],
    "c_stored_at_origin": [(STORE, "[0, 0], c_smem)")],
    "full_count_two": [("mbarrier.init(full_b.index(slot), count=1)",
                        "mbarrier.init(full_b.index(slot), count=2)")],
    # rewrites that keep the protocol (they must keep every rule)
    "wgmma_wait_zero": [("acc = warpgroup_mma_wait(1, deps=(acc,))",
                         "acc = warpgroup_mma_wait(0, deps=(acc,))")],
    "wgmma_synchronous": [(WGMMA, WGMMA.replace(", is_async=True", "")),
                          ("        acc = warpgroup_mma_wait(1, deps=(acc,))\n", "")],
    "barriers_invalidated_after": [(WS_END, WS_END + "    for slot in gl.static_range(STAGES):\n"
                                    "        mbarrier.invalidate(empty.index(slot))\n")],
    "carried_slot_and_phase": [
        ("    for it in range(gl.cdiv(K, BK)):\n        k = it * BK\n",
         "    s = 0\n    phase = 1\n    for it in range(gl.cdiv(K, BK)):\n        k = it * BK\n"),
        ("        s = it % STAGES\n        mbarrier.wait(empty", "        mbarrier.wait(empty"),
        (PRODUCER_WAIT, "        mbarrier.wait(empty.index(s), phase)\n"),
        (COPIES, COPIES + "        s += 1\n        if s == STAGES:\n            s = 0\n"
         "            phase = phase ^ 1\n")],
    "producer_skips_first_lap_wait": [(PRODUCER_WAIT, "        if it >= STAGES:\n    "
                                       + PRODUCER_WAIT)],
    "consumer_wait_with_deps": [(CONSUMER_WAIT, CONSUMER_WAIT.replace(
        "& 1)", "& 1, deps=[a_ring.index(s), b_ring.index(s)])"))],
    "consumer_waits_b_first": [(CONSUMER_WAITS, CONSUMER_WAITS[CONSUMER_WAITS.index("\n") + 1:]
                                + CONSUMER_WAITS[:CONSUMER_WAITS.index("\n") + 1])],
    # identification by role, not by name: the barrier rings swap names everywhere
    "names_swapped": [("empty", "\0"), ("full_a", "empty"), ("\0", "full_a")],
}
PRODUCER = set(protocol.RULES_BY_TEST["test_producer_protocol"]) - {"structure"}
CONSUMER = set(protocol.RULES_BY_TEST["test_consumer_protocol"]) - {"structure"}
# variant -> the rules it must break (all the others must hold)
BREAKS = {
    "consumer_waits_on_empty": {"consumer.wait"},
    "consumer_waits_for_a_only": {"consumer.wait"},
    "producer_parity_without_xor": {"producer.wait"},
    "consumer_parity_flipped": {"consumer.wait"},
    "asm_comment_wait": {"consumer.wait", "consumer.extra"},
    "dead_branch_wait": {"consumer.wait"},
    "runtime_branch_wait": {"consumer.wait", "consumer.extra"},
    "k_branch_wait": {"consumer.wait", "consumer.extra"},
    "wait_only_for_long_k": {"consumer.wait", "consumer.extra"},
    "producer_wait_predicated_off": {"producer.wait"},
    "missing_expect": {"producer.expect"},
    "expect_both_tiles": {"producer.expect"},
    "copies_before_expect": {"producer.copies"},
    "producer_wrong_slot": {"producer.wait", "producer.expect", "producer.copies"},
    "producer_keeps_registers": {"setmaxnreg"},
    "one_full_for_both": {"producer.copies"},
    "box_b_in_first_column": {"producer.copies"},
    "release_on_tile_condition": {"consumer.extra"},
    "two_wgmmas_a_step": {"consumer.wgmma"},
    "loader_releases_its_slot": {"producer.extra"},
    "consumer_primes_before_loop": {"consumer.extra"},
    "c_stored_at_origin": {"consumer.store"},
    "full_count_two": {"barriers"},
}
_compiled: dict = {}
_tmp = Path(tempfile.mkdtemp(prefix="ch02-protocol-"))


def _edit(text: str, edits) -> str:
    for old, new in edits:
        if old in ("full_a", "empty", "\0"):
            text = re.sub(rf"\b{re.escape(old)}\b" if old != "\0" else "\0", new, text)
            continue
        assert text.count(old) == 1, f"ws_gemm.py changed: {old!r} is not there exactly once"
        text = text.replace(old, new)
    return text


def compiled(name: str, path: Path | None = None) -> dict:
    """compile_kernel's dict for a variant of ws_gemm.py (or a file), compiled once."""
    pytest.importorskip("triton")
    if name not in _compiled:
        if path is None:
            path = _tmp / f"{name}.py"
            path.write_text(_edit(SOURCE, VARIANTS[name]))
        comp = _load("ch02_compile", EX / "_compile.py")
        _compiled[name] = comp.compile_kernel(comp.load(path))
    return _compiled[name]


def violations(k: dict, key: str = "ttgir_ws", bind: bool = True) -> dict:
    """The grader's reading (protocol.judge: K bound, and K free), or without the kernel's
    arguments at all."""
    v = (protocol.judge(k[key], k["stages"], k["k_steps"], k["scalar_args"]) if bind else
         protocol.check(protocol.analyze(k[key], k["stages"], k["k_steps"])))
    return {rule: msgs for rule, msgs in v.items() if msgs}


@pytest.mark.parametrize("key", ["ttgir_ws", "ttgir"])
@pytest.mark.parametrize("bind", [True, False])
def test_source_keeps_every_rule(key, bind):
    k = compiled("source")
    assert k[key], key
    v = protocol.check(protocol.analyze(k[key], k["stages"], k["k_steps"],
                                        k["scalar_args"] if bind else None))
    assert set(v) == set(protocol.RULES)
    assert not any(v.values()), v
    assert not violations(k, key, bind)


def test_source_keeps_every_rule_over_many_laps():
    """The hidden test's reading: the source's protocol holds over 13 laps of its ring."""
    assert not many_laps_violations(compiled("source"))


def test_source_protocol_as_read():
    """What the analysis reads of the source: the roles, the registers, and one k-step of each
    loader and of the consumers, against the values ws_gemm.py's own constants imply."""
    pytest.importorskip("triton")
    k = compiled("source")
    mod = _load("ch02_ws_gemm_src", EX / "ws_gemm.py")
    p = protocol.analyze(k["ttgir_ws"], k["stages"], k["k_steps"], k["scalar_args"])
    assert p.found and k["stages"] == mod.STAGES and p.maxnreg == mod.MAXNREG
    assert sorted(p.roles.values()) == ["empty", "full", "full"]
    assert p.loaders == ["partition0", "partition1"] and sorted(p.operands.values()) == ["A", "B"]
    loaders, cons = [p.partitions[x] for x in p.loaders], p.partitions["consumer"]
    assert all(q.num_warps == int(mod.LOADER_WARPS) for q in loaders)
    assert cons.num_warps == mod.NUM_WARPS
    assert all(q.trips == k["k_steps"] for q in [*loaders, cons])
    assert p.requested_regs[:2] == [int(mod.LOADER_REGS)] * 2
    assert p.actual_regs[1] < mod.MAXNREG < p.actual_regs[0]
    it = mod.STAGES + 1                      # second lap: parities differ from the first
    s = it % mod.STAGES
    fulls = []
    for q, tile in zip(loaders, (mod.BM * mod.BK * 2, mod.BK * mod.BN * 2)):
        ev = [(e.kind, p.roles.get(e.alloc), e.slot, e.value) for e in q.events if e.it == it]
        assert ev == [("wait", "empty", s, 0), ("expect", "full", s, tile),
                      ("copy", "full", s, None)], ev
        fulls.append(next(e.alloc for e in q.events if e.kind == "copy"))
    assert fulls[0] != fulls[1]
    ev = [(e.kind, e.alloc if e.kind == "wait" else p.roles.get(e.alloc), e.slot, e.value)
          for e in cons.events if e.it == it]
    assert ev == [("wait", fulls[0], s, 1), ("wait", fulls[1], s, 1), ("dot", None, None, 1),
                  ("dotwait", None, None, 1), ("arrive", "empty", (it - 1) % mod.STAGES, 1)], ev
    assert [e.status for e in cons.events if e.it == 0 and e.kind == "arrive"] == ["no"]
    # the boxes, with the program ids symbolic: A at [pid_x·BM, it·BK], B at [it·BK, pid_y·BN]
    x, y = protocol.Lin(0, (mod.BM, 0, 0)), protocol.Lin(0, (0, mod.BN, 0))
    assert [e.coords for q in loaders for e in q.events if e.it == it and e.kind == "copy"] == [
        (x, it * mod.BK), (it * mod.BK, y)]
    # outside the k-loops: the inits before warp_specialize, the last wgmma wait and C's store
    assert sorted((p.roles[e.alloc], e.slot, e.value) for e in p.outside) == sorted(
        (r, i, 1) for r in ("full", "full", "empty") for i in range(mod.STAGES))
    assert [(e.kind, e.value, e.coords) for e in cons.events if e.where == "after"
            and e.kind != "other"] == [("dotwait", 0, ()), ("store", None, (x, y))]


@pytest.mark.parametrize("name", sorted(BREAKS))
def test_variant_breaks_its_rule(name):
    v = violations(compiled(name))
    assert set(v) == BREAKS[name], json.dumps(v, indent=1)


@pytest.mark.parametrize("name", ["carried_slot_and_phase", "consumer_wait_with_deps",
                                  "producer_skips_first_lap_wait", "consumer_waits_b_first",
                                  "wgmma_wait_zero", "wgmma_synchronous",
                                  "barriers_invalidated_after"])
def test_equivalent_rewrites_keep_every_rule(name):
    assert not violations(compiled(name))


def test_messages_say_found_and_expected():
    v = violations(compiled("consumer_waits_on_empty"))["consumer.wait"]
    assert "wait on empty[0] with parity 0 runs; expected only the waits on the two full" in \
        "\n".join(v)
    assert "no such wait runs; expected a wait on full_b[0] (the loader of B's) with parity 0" \
        in "\n".join(v), v
    v = violations(compiled("producer_parity_without_xor"))["producer.wait"]
    assert "wait on empty[0] with parity 0; expected wait on empty[0] with parity 1" in v[0]
    assert "false" in "\n".join(violations(compiled("dead_branch_wait"))["consumer.wait"])
    assert "run-time" in "\n".join(violations(compiled("runtime_branch_wait"))["consumer.wait"])
    assert "expected expect of 16384 bytes" in \
        violations(compiled("expect_both_tiles"))["producer.expect"][0]
    v = violations(compiled("ch02_gluon_release_split.py", WRONG / "ch02_gluon_release_split.py"))
    assert "expected two, one copying A and one copying B" in v["structure"][0]


def test_a_condition_on_k_is_decided_when_the_arguments_are_known():
    """`if K > 1000000:` around the wait: with K bound the analysis evaluates it (false); in the
    grader's second reading (K free) and without the arguments it is a run-time condition. Either
    way no wait runs. `if K >= 512:` holds for every K the CPU tests read, not for the GPU's
    smaller ones: only the K-free reading sees it."""
    k = compiled("k_branch_wait")
    assert "false here" in "\n".join(violations(k, bind=True)["consumer.wait"])
    assert "run-time" in "\n".join(violations(k, bind=True)["consumer.extra"])
    assert "run-time" in "\n".join(violations(k, bind=False)["consumer.wait"])
    k = compiled("wait_only_for_long_k")
    assert not any(protocol.check(protocol.analyze(k["ttgir_ws"], k["stages"], k["k_steps"],
                                                   k["scalar_args"])).values())
    assert "run-time" in "\n".join(violations(k)["consumer.extra"])


def test_linear_values_of_the_program_ids():
    """The values a TMA box's coordinates are made of: linear in the program ids, wrapped like
    the type; a product of two ids, a comparison or an i1 is not linear (a branch on the tile's
    position stays a run-time one)."""
    lin, x = protocol.Lin, protocol.Lin(0, (1, 0, 0))
    assert protocol._lin("arith.muli", "%a, %b : i32", [x, 128]) == lin(0, (128, 0, 0))
    assert protocol._lin("arith.addi", "%a, %b : i32", [lin(0, (128, 0, 0)), 64]) == \
        lin(64, (128, 0, 0))
    assert protocol._lin("arith.subi", "%a, %b : i32", [x, x]) == lin(0)
    assert protocol._lin("arith.extsi", "%a : i32 to i64", [x]) == x
    assert protocol._lin("arith.muli", "%a, %b : i32", [lin(0, (1 << 30, 0, 0)), 4]) == lin(0)
    for name, body, args in (("arith.muli", "%a, %b : i32", [x, x]),
                             ("arith.cmpi", "sgt, %a, %b : i32", [x, 0]),
                             ("arith.trunci", "%a : i32 to i1", [x]),
                             ("arith.divsi", "%a, %b : i32", [x, 2])):
        assert protocol._lin(name, body, args) is None, name
    assert str(lin(64, (128, 0, 1))) == "128·pid_x + pid_z + 64" and str(lin(0)) == "0"


def test_m_and_n_are_run_time_values():
    """The compile's M = BM and N = BN are one case of many: a branch on N (the known-wrong
    ch02_gluon_wait_if_one_column.py) is taken there, so with every argument bound its wait would
    run; the grader binds K alone (what it varies), and the wait depends on a run-time value."""
    name = "ch02_gluon_wait_if_one_column.py"
    k = compiled(name, WRONG / name)
    every = protocol.analyze(k["ttgir_ws"], k["stages"], k["k_steps"], k["scalar_args"],
                             bound=None)
    assert not any(protocol.check(every).values())
    assert "run-time" in "\n".join(violations(k)["consumer.extra"])


def test_names_do_not_decide_the_roles():
    k = compiled("names_swapped")
    assert not violations(k)
    p = protocol.analyze(k["ttgir_ws"], k["stages"], k["k_steps"], k["scalar_args"])
    assert p.roles == {"%empty": "full", "%full_a": "empty", "%full_b": "full"}


def _loses(path: Path) -> set[str]:
    head = path.read_text().split('"""', 1)[0]
    line = next(x for x in head.splitlines() if x.startswith("# loses:"))
    return {t.strip() for t in line.split(":", 1)[1].split(",")}


GRADER_TESTS = {"test_producer_protocol", "test_consumer_protocol", "test_compiles_for_sm90a",
                "test_setmaxnreg", "test_gpu_correct", "test_gpu_consan", "test_many_laps"}


def many_laps_violations(k: dict, laps: int = 13) -> dict:
    """What the hidden test_many_laps finds: the rules over `laps` laps of the ring (K set in the
    compile's shapes: A's shape[1] and stride[0], B's shape[0]), or the ring too shallow to run."""
    if k["stages"] < 2:
        return {"stages": [k["stages"]]}
    n, args = k["stages"] * laps + 1, list(k["scalar_args"])
    args[2] = args[3] = args[6] = n * (args[2] // k["k_steps"])
    v = protocol.judge(k["ttgir_ws"], k["stages"], n, args)
    return {rule: msgs for rule, msgs in v.items() if msgs}
WRONG_FILES = sorted(p.name for p in WRONG.glob("ch02_*.py")
                     if "# exercise: ch02_ws_gluon\n" in p.read_text())


def test_there_are_wrong_gluon_files():
    assert len(WRONG_FILES) >= 4, WRONG_FILES


@pytest.mark.parametrize("fname", WRONG_FILES)
def test_wrong_file_loses_what_its_header_says(fname):
    """A known-wrong submission breaks a rule of each protocol test its header names, and keeps
    the rules of the protocol tests it does not name."""
    path = WRONG / fname
    v = violations(compiled(fname, path))
    loses = _loses(path)
    if loses - GRADER_TESTS:
        # a header that still names the PTX-regex tests: at least the protocol must see a bug
        assert v, f"{fname}: no rule broken"
        pytest.skip(f"{fname} names tests the grader no longer has: {sorted(loses - GRADER_TESTS)}")
    for test, rules in protocol.RULES_BY_TEST.items():
        broken = set(v) & set(rules)
        assert bool(broken) == (test in loses), (test, json.dumps(v, indent=1))
    assert bool(many_laps_violations(compiled(fname, path))) == ("test_many_laps" in loses)


def test_text_is_not_an_op():
    """An op's name in a comment line or in a string operand is not an op."""
    pytest.importorskip("triton")
    ttgir = compiled("source")["ttgir_ws"]
    lines = ttgir.splitlines()
    start = next(n for n, x in enumerate(lines) if x.strip() == "default {")   # the consumers
    i = next(n for n, x in enumerate(lines) if n > start and "ttng.wait_barrier" in x)
    real = lines[i]
    lines[i] = "// " + real.strip()
    lines.insert(i, '        %zz = tt.elementwise_inline_asm "' + real.strip().replace('"', "")
                 + '" {constraints = "=r", pure = false} : -> i32')
    k = compiled("source")
    v = protocol.check(protocol.analyze("\n".join(lines), k["stages"], k["k_steps"],
                                        k["scalar_args"]))
    assert v["consumer.wait"] and not v["producer.wait"], v


@pytest.mark.parametrize("text", ["", "garbage {\n}}}\n", "module {\n" * 500,
                                  "%x = arith.shli %a, %b : i64\n" * 10, 12345])
def test_bad_ir_is_reported_not_raised(text):
    v = protocol.check(protocol.analyze(text, 3, 8))
    assert all(v[r] for r in protocol.RULES), v


def test_interpreter_arith():
    """The scalar interpreter on a synthetic loop: C-style signed division and remainder,
    shifts, select, casts, cmpi — the slot and parity it reads for each k-step."""
    ir = """module attributes {ttg.maxnreg = 168 : i32, "ttg.num-warps" = 4 : i32} {
  tt.func @k(%n: i32) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %cm3 = arith.constant -3 : i32
    %c40 = arith.constant 40 : i32
    %bar = ttg.local_alloc : () -> !ttg.memdesc<3x1xi64, #s, #smem, mutable>
    ttg.warp_specialize(%bar) attributes {requestedRegisters = array<i32: 40>}
    default {
      scf.for %it = %c0 to %n step %c1  : i32 {
        %neg = arith.subi %c0, %it : i32
        %q = arith.divsi %neg, %cm3 : i32
        %r = arith.remsi %neg, %cm3 : i32
        %s = arith.subi %c0, %r : i32
        %w = arith.extsi %q : i32 to i64
        %t = arith.trunci %w : i64 to i32
        %sh = arith.shli %t, %c40 : i32
        %big = arith.cmpi sge, %t, %c1 : i32
        %ph = arith.select %big, %c1, %c0 : i32
        %b = ttg.memdesc_index %bar[%s] : !ttg.memdesc<3x1xi64> -> !ttg.memdesc<1xi64>
        ttng.wait_barrier %b, %ph, %big : !ttg.memdesc<1xi64>
        ttng.arrive_barrier %b, 1, %sh : !ttg.memdesc<1xi64>
      }
      ttg.warp_yield
    }
    partition0(%a: !ttg.memdesc<3x1xi64>) num_warps(1) {
      ttg.warp_return
    } : (!ttg.memdesc<3x1xi64>) -> ()
    tt.return
  }
}"""
    p = protocol.analyze(ir, 3, 7, [5], bound=None)
    cons = p.partitions["consumer"]
    assert cons.trips == 5 and cons.num_warps == 4 and p.partitions["partition0"].num_warps == 1
    waits = [(e.it, e.slot, e.value, e.status) for e in cons.events if e.kind == "wait"]
    assert waits == [(i, i % 3, int(i // 3 >= 1), "yes" if i >= 3 else "no") for i in range(5)]
    # a shift by 40 of an i32 is poison: the arrive's predicate is unknown, so "cond"
    assert {e.status for e in cons.events if e.kind == "arrive"} == {"cond"}


def test_compile_cli_prints_one_json_line():
    pytest.importorskip("triton")
    out = subprocess.run([sys.executable, str(EX / "_compile.py"), str(EX / "ws_gemm.py")],
                         capture_output=True, text=True, timeout=300, check=False)
    k = json.loads(out.stdout.strip().splitlines()[-1])
    assert ".target sm_90a" in k["ptx"] and "ttg.warp_specialize" in k["ttgir"]
    assert k["num_warps"] == 12 and k["shared"] > 0 and "actualRegisters" in k["ttgir_ws"]
    bad = subprocess.run([sys.executable, str(EX / "_compile.py"), str(_tmp / "missing.py")],
                         capture_output=True, text=True, timeout=300, check=False)
    assert "error" in json.loads(bad.stdout.strip().splitlines()[-1])


def _ar(name: str, body: str, *args):
    return protocol._arith("arith." + name, body, list(args))


def test_casts_read_the_source_type():
    """extui and index_castui zero-extend from the source width, extsi and index_cast sign-extend
    from it (an i1 true is -1), trunci keeps the low bits; a cast of widths that cannot be, or of
    a type that is no integer, is unknown."""
    lo = -(1 << 31) + 5
    assert _ar("extui", "%x : i32 to i64", lo) == (1 << 31) + 5
    assert _ar("extsi", "%x : i32 to i64", lo) == lo
    assert _ar("index_castui", "%x : i32 to index", -1) == (1 << 32) - 1
    assert _ar("index_cast", "%x : i32 to index", -1) == -1
    assert _ar("index_cast", "%x : index to i32", (1 << 32) + 7) == 7
    assert _ar("extsi", "%x : i1 to i32", 1) == -1 and _ar("extui", "%x : i1 to i32", 1) == 1
    assert _ar("extui", "%x : i8 to i32", -1) == 255 and _ar("extsi", "%x : i8 to i32", 255) == -1
    assert _ar("trunci", "%x : i64 to i32", 1 << 31) == -(1 << 31)
    assert _ar("trunci", "%x : i32 to i1", 2) == 0 and _ar("trunci", "%x : i32 to i1", 3) == 1
    assert _ar("bitcast", "%x : i32 to i32", -1) == -1
    for name, body in (("extui", "%x : i64 to i32"), ("extsi", "%x : i32 to i32"),
                       ("trunci", "%x : i32 to i64"), ("bitcast", "%x : f32 to i32"),
                       ("bitcast", "%x : i32 to i64"), ("extui", "%x : i32 to i128"),
                       ("extui", "%x to i64")):
        assert _ar(name, body, 1) is None, (name, body)
    # the red team's tell: ((it + INT_MIN) as uint32 as int64 >> 32) & 1 is 0 on the GPU
    wide = _ar("extui", "%x : i32 to i64", _ar("addi", "%a, %b : i32", 3, -(1 << 31)))
    assert _ar("andi", "%a, %b : i64", _ar("shrsi", "%a, %b : i64", wide, 32), 1) == 0


def test_signed_and_unsigned_ops():
    """Each op reads its operands' bits the way the hardware does: ..ui ops and u.. comparisons
    unsigned, ..si ops and s.. comparisons signed; poison (division by zero, INT_MIN / -1, a shift
    by the width or more) is unknown."""
    b = "%a, %b : i32"
    assert _ar("shrui", b, -1, 28) == 15 and _ar("shrsi", b, -1, 28) == -1
    assert _ar("shli", b, 1, 31) == -(1 << 31) and _ar("shli", b, 1, 32) is None
    assert _ar("shrsi", b, 1, -1) is None
    assert _ar("divui", b, -2, 2) == (1 << 31) - 1 and _ar("divsi", b, -7, 2) == -3
    assert _ar("remui", b, -1, 10) == 5 and _ar("remsi", b, -7, 2) == -1
    assert _ar("floordivsi", b, -7, 2) == -4 and _ar("ceildivsi", b, -7, 2) == -3
    assert _ar("ceildivui", b, -1, 1 << 31) == 2
    assert _ar("divsi", b, -(1 << 31), -1) is None and _ar("remui", b, 1, 0) is None
    assert _ar("maxui", b, -1, 1) == -1 and _ar("maxsi", b, -1, 1) == 1
    assert _ar("minui", b, -1, 1) == 1 and _ar("minsi", b, -1, 1) == -1
    assert _ar("cmpi", "ult, " + b, -1, 1) == 0 and _ar("cmpi", "slt, " + b, -1, 1) == 1
    assert _ar("cmpi", "uge, " + b, -1, 1) == 1 and _ar("cmpi", "eq, " + b, -1, (1 << 32) - 1) == 1
    assert _ar("cmpi", "sgt, %a, %b : i1", 0, 1) == 1          # an i1 true is -1 signed
    assert _ar("constant", "-1 : i1") == 1 and _ar("constant", "4294967295 : i32") == -1
    assert _ar("mulsi_extended", b, 2, 3) is None               # not modeled: unknown


def test_linear_casts_are_exact_or_unknown():
    """A widening cast of a value linear in the program ids is that value only where the form
    cannot leave the source type's range (signed for extsi, non-negative for extui) for any
    program id; a truncation keeps the low bits."""
    lin, x = protocol.Lin, protocol.Lin(0, (1, 0, 0))
    assert protocol._lin("arith.extui", "%a : i32 to i64", [x]) == x
    assert protocol._lin("arith.index_castui", "%a : i32 to index", [x]) == x
    assert protocol._lin("arith.extsi", "%a : i32 to i64", [lin(-5, (0, 1, 0))]) == \
        lin(-5, (0, 1, 0))
    for name, v in (("arith.extui", lin(-(1 << 31), (1, 0, 0))),
                    ("arith.extui", lin(-1, (0, 1, 0))), ("arith.extsi", lin(0, (128, 0, 0))),
                    ("arith.index_cast", lin(1, (1, 0, 0)))):
        assert protocol._lin(name, "%a : i32 to i64", [v]) is None, (name, v)
    assert protocol._lin("arith.trunci", "%a : i64 to i32", [lin(1 << 32, (1 + (1 << 32), 0, 0))]) \
        == x
