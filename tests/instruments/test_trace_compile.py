"""CPU-only: the Proton scopes of the five traced kernels are there only when asked.

Flag off (every kernel's default): no Proton clock reads, no globaltimer, no profile buffer — the
PTX of the shipped kernels does not change (their one clock read is steps.schedule_fence's, which
is no record). Flag on, under Proton's instrumentation passes: clock reads in
every partition and the scope names in the kernel's IR. Proton's own hook needs a GPU to set the
passes up (it asks the driver for shared memory), so `instrumented` below sets up the same passes
that `InstrumentationHook.activate` does (triton 3.6.0), with the H200's shared memory."""
from __future__ import annotations

import contextlib
import re
import tempfile

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton.experimental.gluon")

import triton
from triton.backends import backends

from instruments import trace
from kernels.attention import KERNELS as AK
from kernels.attention import host as acommon
from kernels.attention import config as aconfig
from kernels.gemm import KERNELS as GK
from kernels.gemm import common as gcommon
from kernels.gemm import config as gconfig

SMEM_H200 = 232448  # max dynamic shared memory per block, bytes (what the hook reads off the GPU)
# triton's cache key does not see the instrumentation passes: instrumented builds get a cache of
# their own, or a PROFILE build compiled without them (records dropped) would be handed back here
PROTON_CACHE = tempfile.mkdtemp(prefix="triton-proton-cache-")


@contextlib.contextmanager
def instrumented():
    from triton._C.libtriton import passes as tpasses
    from triton._C.libtriton import proton as tproton
    from triton.profiler.flags import flags
    from triton.profiler.hooks.instrumentation import Instrumentation

    mode = trace._mode(3 * trace.SEGMENT)

    def to_llvmir(pm):
        tproton.add_convert_proton_to_protongpu(
            pm, mode.metric_type, mode.sampling_strategy, mode.sampling_options, mode.granularity,
            mode.buffer_strategy, mode.buffer_type, mode.buffer_size, SMEM_H200, 1, 128, True)
        tpasses.common.add_cse(pm)
        tproton.add_allocate_proton_shared_memory(pm)

    def to_llvm(pm):
        tproton.add_allocate_proton_global_scratch_buffer(pm)
        tproton.add_convert_proton_nvidia_gpu_to_llvm(pm)

    compiler = backends["nvidia"].compiler
    saved = (compiler.instrumentation, triton.knobs.compilation.instrumentation_mode,
             triton.knobs.cache.dir)
    flags.instrumentation_on = True
    triton.knobs.cache.dir = PROTON_CACHE
    compiler.instrumentation = Instrumentation({"ttgpuir_to_llvmir": to_llvmir,
                                                "llvmir_to_llvm": to_llvm})
    triton.knobs.compilation.instrumentation_mode = str(mode)
    try:
        yield
    finally:
        flags.instrumentation_on = False
        (compiler.instrumentation, triton.knobs.compilation.instrumentation_mode,
         triton.knobs.cache.dir) = saved


def compile_kernel(name: str, profile: bool):
    spec = trace.ALL[name]
    if spec["workload"] == "attention":
        cfg = aconfig(spec["variant"], 128, stages=spec.get("stages"))
        return acommon.compile_sm90(AK[spec["variant"]], cfg, torch.float16, False, profile=profile)
    cfg = gconfig(spec["variant"], stages=spec.get("stages"))
    return gcommon.compile_sm90(GK[spec["variant"]], cfg, torch.float16, profile=profile)


SCOPES = {"attention_ws": {"wait Q", "wait K", "QK", "softmax", "wait V", "PV", "epilogue",
                           "wait slot", "TMA issue"},
          "attention_ws_pingpong": {"wait turn"}, "attention_fa3": {"wait turn"},
          "gemm_ws": {"wait full", "MMA", "epilogue", "wait slot", "TMA issue"},
          "gemm_ws_pingpong": {"wait turn"}}
SCOPES["attention_ws_pingpong"] |= SCOPES["attention_ws"]
SCOPES["attention_fa3"] |= SCOPES["attention_ws"]
SCOPES["gemm_ws_pingpong"] |= SCOPES["gemm_ws"]


def clock_reads(ptx: str) -> int:
    """Clock and timer reads, less the schedule fence's (`mov.u32 t, %clock;` in its asm)."""
    return len(re.findall(r"%clock|%globaltimer", ptx)) - ptx.count("mov.u32 t, %clock;")


@pytest.mark.parametrize("name", [*trace.KERNELS, "attention_sequential", "attention_pipelined",
                                  "attention_overlap"])
def test_flag_off_is_the_shipped_kernel(name):
    """Default (PROFILE off) and an explicit off compile to the same PTX, with no clock reads —
    even while Proton's passes are on."""
    ptx = compile_kernel(name, False).asm["ptx"]
    assert clock_reads(ptx) == 0
    with instrumented():
        ptx_session = compile_kernel(name, False).asm["ptx"]
    assert clock_reads(ptx_session) == 0
    # the default-argument kernel is the same kernel: PTX equal up to the source-line records
    spec = trace.ALL[name]
    if spec["workload"] == "attention":
        k = acommon.compile_sm90(AK[spec["variant"]], aconfig(spec["variant"], 128))
    else:
        k = gcommon.compile_sm90(GK[spec["variant"]], gconfig(spec["variant"]))
    assert _code(k.asm["ptx"]) == _code(ptx)


@pytest.mark.parametrize("name", list(trace.KERNELS))
def test_flag_on_records_each_scope(name):
    with instrumented():
        k = compile_kernel(name, True)
    ptx = k.asm["ptx"]
    # two clock reads (lo, hi) per scope edge, in every partition: many, and a profile buffer
    assert clock_reads(ptx) >= 2 * 2 * len(SCOPES[name])
    assert k.metadata.profile_scratch_size > 0
    names = set(re.findall(r'proton\.record (?:start|end) "([^"]+)"', k.asm["ttgir"]))
    assert names == SCOPES[name]
    # the kernel is still what it was: TMA, wgmma, setmaxnreg
    assert "wgmma.mma_async" in ptx and "cp.async.bulk.tensor" in ptx and "setmaxnreg" in ptx
    # each of the three sampled warpgroups records: the producer's partition has its scopes too
    assert len(re.findall(r"st\.global\.cg\.v2\.b32", ptx)) >= 3


def _code(ptx: str) -> str:
    """PTX without the debug records that hold source line numbers."""
    keep = [re.sub(r"\s*//.*$", "", ln) for ln in ptx.splitlines()
            if not ln.strip().startswith((".loc", ".file", "//", "$L__"))]
    text = "\n".join(keep)
    return text.split(".section\t.debug")[0]


def worker_states(ptx: str) -> dict[int, int]:
    """Triton's warp-specialize dispatch: warp id -> the worker partition it runs (its index in
    the warp_specialize list; higher = padding warps that idle), read from the byte table the
    default partition stores to shared memory and every worker warp loads its entry of."""
    base = int(re.search(r"ld\.shared\.b8\s+%r\d+, \[%r\d+\+(\d+)\];", ptx).group(1))
    for off, words in re.findall(r"st\.shared(?:\.v2)?\.b32\s+\[global_smem\+(\d+)\], \{?([\d, ]+)\}?;", ptx):
        off = int(off) - base
        if 0 <= off < 32:
            data = b"".join(int(w).to_bytes(4, "little") for w in words.split(","))
            return {off + k: b for k, b in enumerate(data)}
    raise AssertionError("no warp-specialize dispatch table in the PTX")


@pytest.mark.parametrize("name", list(trace.KERNELS))
def test_sampled_warps_are_the_roles(name):
    """The producer is the last worker partition in each kernel's warp_specialize list; Proton
    samples it at ROLES' producer warp, which must be the one warp running that partition (warp 8
    is padding: sampled, it records no producer events)."""
    ptx = compile_kernel(name, False).asm["ptx"]
    states = worker_states(ptx)
    producer = {w for w, r in trace.ROLES.items() if r == "producer"}.pop()
    workers = 1 if name == "gemm_ws" else 2          # [producer] or [consumer 1, producer]
    assert [w for w, s in states.items() if s == workers - 1] == [producer]
    if workers == 2:                                  # consumer 1: the 4-warp worker at 4-7
        assert [w for w, s in states.items() if s == 0] == [4, 5, 6, 7]


def scope_names(k) -> set[str]:
    return set(re.findall(r'proton\.record (?:start|end) "([^"]+)"', k.asm["ttgir"]))


def test_softmax_option_builds_the_switched_kernel():
    """`--softmax lane_sum,no_turns` on fa3 at d 256: the trace launches fa3 with exactly those
    switches (the SOFTMAX constexpr's bits), its files carry them in their name and its summary
    lists them, and under Proton the build has every fa3 scope but `wait turn` (no turns), which
    the default d 256 build (lane_sum alone) records."""
    from kernels.attention import host

    switched = ("lane_sum", "no_turns")
    name, spec = trace.with_softmax("attention_fa3_d256", switched)
    assert name == "attention_fa3_d256+lane_sum+no_turns"
    assert trace.softmax_built(spec) == list(switched)
    _, default_spec = trace.with_softmax("attention_fa3_d256", ())
    assert trace.softmax_built(default_spec) == ["lane_sum", "tree_max"]
    builds = {}
    with instrumented():
        for key, s in (("switched", spec), ("default", default_spec)):
            kernel, cfg, options = trace.attention_build(s, s["shape"][3])
            assert (cfg.head_dim, cfg.BM, cfg.BN) == (256, 128, 64)
            builds[key] = acommon.compile_sm90(kernel, cfg, torch.float16, False, profile=True,
                                               **options)
    bits = (AK["fa3"].arg_names.index("SOFTMAX"),)
    assert builds["switched"].src.constants[bits] == host.softmax_bits(switched)
    assert builds["default"].src.constants[bits] == host.softmax_bits(("lane_sum", "tree_max"))
    assert scope_names(builds["switched"]) == SCOPES["attention_fa3"] - {"wait turn"}
    assert scope_names(builds["default"]) == SCOPES["attention_fa3"]


@pytest.mark.parametrize("name,softmax,match", [
    ("gemm_ws", ("lane_sum",), "only the overlapped attention kernels"),
    ("attention_ws", ("no_turns",), "only the overlapped attention kernels"),
    ("attention_fa3", ("lane_summ",), "lane_summ")])
def test_softmax_option_refuses_what_no_build_has(name, softmax, match):
    with pytest.raises(ValueError, match=match):
        trace.with_softmax(name, softmax)


def test_the_persistent_probe_records_its_consumers_scopes():
    """fa3's default launch at d 64 S 1K causal (persistent, 128 x 128, pairs) builds with the
    consumers' step scopes on and without them when off. Its ring and turn waits are not steps
    of ``Tile`` (the persistent consumer takes them itself) and its producer has no scopes: in
    its trace they are the time between the scopes."""
    spec = trace.ALL["attention_fa3_s1k_d64_causal"]
    _, cfg, _ = trace.attention_build(spec, spec["shape"][3])
    assert cfg.persistent and cfg.pairs and (cfg.BM, cfg.BN, cfg.head_dim) == (128, 128, 64)
    with instrumented():
        on = acommon.compile_sm90(AK["fa3"], cfg, torch.float16, True, profile=True)
        off = acommon.compile_sm90(AK["fa3"], cfg, torch.float16, True, profile=False)
    names = set(re.findall(r'proton\.record (?:start|end) "([^"]+)"', on.asm["ttgir"]))
    assert names == {"wait Q", "QK", "softmax", "PV", "epilogue"}, names
    assert on.metadata.profile_scratch_size > 0 and clock_reads(on.asm["ptx"]) >= 4 * len(names)
    assert clock_reads(off.asm["ptx"]) == 0
