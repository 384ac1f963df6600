"""Launch plans on the CPU (``kernels/plans.py``): the values a plan hands the compiled kernel
are the ones Triton's own JIT binds for the same launch, for every attention and GEMM launch
shape the front doors make; a plan keeps no tensor of the call that made it; a key changes with
everything a launch is derived from and is refused where an option cannot be one. The GPU side
(a second call launched by the plan, against float64 and bit for bit against the whole way) is
``test_plans_gpu.py``."""
from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

from kernels import plans  # noqa: E402
from kernels.attention import KERNELS, host  # noqa: E402

gcommon = importlib.import_module("kernels.gemm.common")
GKERNELS = importlib.import_module("kernels.gemm").KERNELS
gconfig = importlib.import_module("kernels.gemm").config


def triton_binder(kernel):
    """Triton's own binder for ``kernel`` (what ``kernel[grid](...)`` runs first), made with the
    sm_90 backend on the CPU."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend
    from triton.runtime.jit import create_function_from_signature

    backend = make_backend(GPUTarget(*host.SM90_TARGET))
    return create_function_from_signature(kernel.signature, kernel.params, backend)


def attention_launch(variant, D, causal, tile=None, persistent=False, strided=False,
                     softmax=None, fence=True):
    """The (args, kwargs) ``host.launch`` hands ``kernel[grid]``, on CPU tensors."""
    kernel = KERNELS[variant]
    cfg = host.config(variant, D, causal, None, tile, persistent)
    shape = (2, 512, 3, D) if strided else (2, 3, 512, D)
    q, k, v, o = (torch.empty(shape, dtype=torch.float16) for _ in range(4))
    if strided:
        q, k, v, o = (t.transpose(1, 2) for t in (q, k, v, o))
    lse = torch.empty(q.shape[:3], dtype=torch.float32)
    extra = (host.fence_args(kernel, fence)
             | host.softmax_args(kernel, softmax, D, variant, cfg.persistent)
             | host.persistent_args(kernel, host.persistent_arg(cfg)))
    (qd, kd, vd, oa), tails = host.tail_args(host.make_descriptors(q, k, v, o, cfg))
    args = (qd, kd, vd, oa, lse, q.shape[2], 0.18, cfg.BM, cfg.stages, cfg.consumers, causal)
    return kernel, cfg, args, extra | tails | host._launch_options(cfg), tails


ATTENTION_LAUNCHES = [
    ("fa3", 64, True, (128, 128), "pairs", False, None, True),
    ("fa3", 128, False, None, True, False, None, True),
    ("fa3", 256, False, (128, 80), False, False, None, True),  # K/V in two pieces: the tails
    ("fa3", 128, True, None, False, True, ("no_turns",), "hoisted"),  # rank-4 descriptors
    ("overlap", 64, False, None, False, False, ("lane_sum",), False),
    ("ws_pingpong", 256, True, None, False, False, None, True),
    ("sequential", 128, False, None, False, True, None, True),
]


@pytest.mark.parametrize("launch", ATTENTION_LAUNCHES, ids=lambda x: "-".join(map(str, x)))
def test_attention_values_are_tritons_binding(launch):
    kernel, _, args, kw, _ = attention_launch(*launch)
    bound, _, _ = triton_binder(kernel)(*args, **kw)
    mine = plans.bound_values(kernel, args, kw)
    assert len(mine) == len(bound) == len(kernel.arg_names)
    assert all(a is b for a, b in zip(mine, bound.values())), (mine, list(bound.values()))


@pytest.mark.parametrize("variant", list(GKERNELS))
@pytest.mark.parametrize("transposed", [False, True])
def test_gemm_values_are_tritons_binding(variant, transposed):
    cfg = gconfig(variant)
    a = torch.empty(512, 256, dtype=torch.bfloat16)
    b = torch.empty(384, 256, dtype=torch.bfloat16).t() if transposed else torch.empty(
        256, 384, dtype=torch.bfloat16)
    c = torch.empty(512, 384, dtype=torch.bfloat16)
    kernel = GKERNELS[variant]
    args = (*gcommon.make_descriptors(a, b, c, cfg), cfg.stages, cfg.group_m)
    kw = {"num_warps": cfg.num_warps, **({"maxnreg": cfg.maxnreg} if cfg.maxnreg else {}),
          **({"ROW_BLOCKS": cfg.row_blocks} if "ROW_BLOCKS" in kernel.arg_names else {}),
          **({"B_TRANSPOSED": True} if transposed else {})}
    bound, _, options = triton_binder(kernel)(*args, **kw)
    mine = plans.bound_values(kernel, args, kw)
    assert all(x is y for x, y in zip(mine, bound.values(), strict=True))
    if cfg.maxnreg:
        assert options["maxnreg"] == cfg.maxnreg  # an option: not among the values


def test_a_plan_keeps_no_tensor_of_the_call_that_made_it():
    kernel, cfg, args, kw, tails = attention_launch("fa3", 256, False, (128, 80))
    compiled = host.compile_sm90(kernel, cfg)
    plan = plans.make_plan(kernel, compiled, (132,), args, kw, host.PER_CALL + tuple(tails), cfg)
    assert plan.grid == (132, 1, 1)
    names = [kernel.arg_names[i] for i in plan.slots]
    assert names == ["q_desc", "k_desc", "v_desc", "o_ptr", "lse_ptr", "k_tail", "v_tail"]
    assert all(plan.values[i] is None for i in plan.slots)
    kept = [x for x in plan.values if isinstance(x, torch.Tensor) or hasattr(x, "base")]
    assert kept == []
    bound = plans.bound_values(kernel, args, kw)
    others = [i for i in range(len(bound)) if i not in plan.slots]
    assert [plan.values[i] for i in others] == [bound[i] for i in others]


def test_no_plan_without_a_compiled_kernel():
    kernel, cfg, args, kw, _ = attention_launch("fa3", 128, False)
    assert plans.make_plan(kernel, None, (1, 2), args, kw, host.PER_CALL, cfg) is None


class Recorder:
    """Stands for a CompiledKernel: keeps what ``[grid](*values)`` was called with."""

    def __init__(self):
        self.calls = []

    def __getitem__(self, grid):
        return lambda *values: self.calls.append((grid, values))


def test_a_plan_runs_with_the_calls_own_values_in_their_slots():
    rec = Recorder()
    plan = plans.Plan(rec, (4, 2, 1), ("a", None, 7, None, True), (3, 1), config=None)
    plan.run("x", "y")
    plan.run("z", "w")
    assert rec.calls == [((4, 2, 1), ("a", "y", 7, "x", True)),
                         ((4, 2, 1), ("a", "w", 7, "z", True))]
    assert plan.values == ("a", None, 7, None, True)
    with pytest.raises(ValueError):
        plan.run("only one")


def key(q, out=None, **options):
    base = dict(causal=False, variant="fa3", scale=None, stages=None, tile=None, fence=True,
                softmax=None, persistent=None)
    base.update(options)
    return plans.key((q, q, q, out), tuple(base.values()))


def test_a_key_changes_with_what_a_launch_is_derived_from():
    q = torch.empty(2, 3, 256, 64, dtype=torch.float16)
    same = torch.empty(2, 3, 256, 64, dtype=torch.float16)
    assert key(q) == key(same) and key(q) is not None
    others = [
        key(torch.empty(2, 3, 256, 64, dtype=torch.bfloat16)),
        key(torch.empty(2, 3, 255, 64, dtype=torch.float16)),
        key(torch.empty(2, 256, 3, 64, dtype=torch.float16).transpose(1, 2)),
        key(q, out=same),
        key(q, causal=True), key(q, variant="overlap"), key(q, scale=0.5),
        key(q, stages=3), key(q, tile=(128, 64)), key(q, fence="hoisted"),
        key(q, softmax=("lane_sum",)), key(q, persistent="pairs"), key(q, persistent=16),
    ]
    assert None not in others
    assert len({key(q), *others}) == len(others) + 1


def test_a_key_follows_tritons_compile_settings(monkeypatch):
    from triton import knobs

    q = torch.empty(2, 3, 256, 64, dtype=torch.float16)
    before = key(q)
    monkeypatch.setattr(knobs.compilation, "instrumentation_mode", "consan")
    assert key(q) != before


@pytest.mark.parametrize("options", [dict(tile=[128, 64]), dict(softmax=["lane_sum"]),
                                     dict(scale=torch.tensor(0.5)), dict(persistent={})])
def test_no_key_for_an_option_that_cannot_be_one(options):
    """A list, a tensor or a dict: the call goes the whole way (and its own checks speak)."""
    assert key(torch.empty(2, 3, 256, 64, dtype=torch.float16), **options) is None


def test_no_key_for_inputs_that_are_not_tensors():
    assert plans.key(([1, 2], None), ()) is None


def test_plans_keep_the_most_recently_used():
    cache = plans.Plans(kept=2)
    cache.put("a", "plan a")
    cache.put("b", "plan b")
    assert cache.get("a") == "plan a"  # "b" is now the least recently used
    cache.put("c", "plan c")
    assert cache.get("b") is None and cache.get("a") == "plan a" and cache.get("c") == "plan c"
    cache.put(None, "no key")
    cache.put("d", None)
    assert cache.get(None) is None and cache.get("d") is None


def test_unplanned_calls_neither_use_nor_keep_plans():
    cache = plans.Plans()
    cache.put("a", "plan a")
    with plans.unplanned():
        assert cache.get("a") is None
        cache.put("b", "plan b")
        with plans.unplanned():
            pass
        assert cache.get("a") is None  # still inside the outer block
    assert cache.get("a") == "plan a" and cache.get("b") is None


RESULTS = Path(__file__).resolve().parents[2] / "results"
DOC = " ".join(plans.__doc__.split())


def span(rows, field):
    lo, hi = (round(f(r[field] for r in rows)) for f in (min, max))
    return f"{lo}-{hi} us"


def test_the_host_times_in_the_docstring_are_the_measured_ones():
    """``kernels/plans.py`` quotes results/h100-host-path*.json: each range there is the file's."""
    measured = json.loads((RESULTS / "h100-host-path.json").read_text())
    att, gem = measured["attention"], measured["gemm"]
    for quoted in (span(att, "unplanned_us"), span(gem, "unplanned_us"), span(att, "planned_us"),
                   span(gem, "planned_us"), span(att, "sdpa_cudnn_us"),
                   span(gem, "torch_matmul_us")):
        assert quoted in DOC, quoted
    assert all(r["planned_us"] < r["unplanned_us"] / 2 for r in att + gem)
    slow = json.loads((RESULTS / "h100-host-path-slow-host.json").read_text())["attention"]
    assert f"{span(slow, 'unplanned_us')} the whole way and {span(slow, 'planned_us')}" in DOC


def test_the_slow_hosts_grid_in_the_docstring_is_the_measured_one():
    rows = json.loads((RESULTS / "h100-attention-grid-plans-slow-host.json").read_text())
    at = {}
    for r in rows["attention"]["rows"]:
        if r["S"] == 1024 and r["B"] == 16:
            at.setdefault((r["d"], r["causal"]), {})[r["variant"]] = r["tflops"]
    gains = [p["fa3"] / p["fa3+unplanned"] for p in at.values()]
    assert f"up to {max(gains):.1f}x faster by plan" in DOC
    d128 = at[(128, True)]
    whole, planned = (d128[v] / d128["sdpa_cudnn"] for v in ("fa3+unplanned", "fa3"))
    assert f"d 128 causal {whole:.2f}x cuDNN the whole way, {planned:.2f}x by plan" in DOC
