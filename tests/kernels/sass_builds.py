"""The SASS of the Gluon attention and GEMM builds, hashed: a refactor of the kernels' source
must leave the machine code byte-identical (or say which build moved and why).

    python tests/kernels/sass_builds.py record  FILE [NAME...]  # hash builds into FILE (JSON)
    python tests/kernels/sass_builds.py compare FILE [NAME...]  # the same builds now, against FILE

``record`` keeps the hashes FILE already holds for the builds it is not given.

Compiles for sm_90a on a CPU (``host.compile_sm90``), disassembles with the ``cuobjdump`` in
triton's wheel (``kernels/cuda/compile.py``), and hashes the instructions of every function (the
function names are left out: a renamed Python function is not a changed kernel). ``compare``
prints one line a build and exits 1 if any differ. ``sass_main.json``: the builds before the
aggregates (31d10ae; the GEMM builds before theirs, 5f13f46); ``sass_after.json``: after them —
every build identical but persistent d 128 non-causal (the same instructions in another order: its
PTX differs only in two debug-info labels of the deeper inlining), the d 256 builds recorded
again when tree_max joined d 256's default softmax (lane_sum + tree_max: ``host.SOFTMAX_DEFAULT``),
the causal builds when the causal mask became one test a score (``steps.mask``) and the
one_release builds when they met after their arrive (``ring.meet_after_arrive``).
An attention build is ``variant, head dim, causal`` plus the launcher's switches, a GEMM build
(named ``gemm ...``) ``variant`` plus ``config``'s keywords, ``profile`` and ``b_transposed``;
``BUILDS`` holds the default builds first, then the switched ones. The layout builds (``LAYOUTS``,
``... strided``: tensors that are not contiguous, through rank-4 descriptors; ``gemm ...
b_transposed``: B stored transposed) are builds of their own, added beside the defaults, which they
leave unchanged.
"""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

# name -> (variant, head dim, causal, keyword arguments of compile_sm90 / config)
DEFAULT = {
    "fa3 d64": ("fa3", 64, False, {}),
    "fa3 d128": ("fa3", 128, False, {}),
    "fa3 d256": ("fa3", 256, False, {}),
    "fa3 d128 causal": ("fa3", 128, True, {}),
    "fa3 d256 causal": ("fa3", 256, True, {}),
    "fa3 d128 persistent": ("fa3", 128, False, {"persistent": True}),
    "fa3 d128 causal persistent": ("fa3", 128, True, {"persistent": True}),
    "fa3 d128 causal pairs": ("fa3", 128, True, {"persistent": "pairs"}),
    "fa3 d256 persistent": ("fa3", 256, False, {"persistent": True}),
    "overlap d128": ("overlap", 128, False, {}),
    "ws d128": ("ws", 128, False, {}),
    "ws_pingpong d128": ("ws_pingpong", 128, False, {}),
    "pipelined d128": ("pipelined", 128, False, {}),
    "sequential d128": ("sequential", 128, False, {}),
}
SWITCHED = {
    "fa3 d128 one_release": ("fa3", 128, False, {"softmax": ("one_release",)}),
    "fa3 d128 named_turns": ("fa3", 128, False, {"softmax": ("named_turns",)}),
    "fa3 d128 one_release+named_turns": ("fa3", 128, False,
                                         {"softmax": ("one_release", "named_turns")}),
    "fa3 d128 rescale_early": ("fa3", 128, False, {"softmax": ("rescale_early",)}),
    "fa3 d256 no_turns": ("fa3", 256, False, {"softmax": ("no_turns", "lane_sum")}),
    "fa3 d128 tree_max": ("fa3", 128, False, {"softmax": ("tree_max",)}),
    "fa3 d128 fence=False": ("fa3", 128, False, {"fence": False}),
    "fa3 d128 fence=hoisted": ("fa3", 128, False, {"fence": "hoisted"}),
    "overlap d128 rescale_early": ("overlap", 128, False, {"softmax": ("rescale_early",)}),
}
PROFILED = {  # Proton scopes compiled in (instruments/trace.py); informational
    "fa3 d128 profile": ("fa3", 128, False, {"profile": True}),
    "ws_pingpong d128 profile": ("ws_pingpong", 128, False, {"profile": True}),
}
# name -> (variant, keyword arguments of kernels.gemm.config, plus ``profile``)
GEMM = {
    "gemm sequential": ("sequential", {}),
    "gemm pipelined": ("pipelined", {}),
    "gemm ws": ("ws", {}),
    "gemm ws_pingpong": ("ws_pingpong", {}),
    "gemm pipelined stages=2": ("pipelined", {"stages": 2}),
    "gemm ws stages=2": ("ws", {"stages": 2}),
    "gemm ws_pingpong stages=2": ("ws_pingpong", {"stages": 2}),
    "gemm ws profile": ("ws", {"profile": True}),
    "gemm ws_pingpong profile": ("ws_pingpong", {"profile": True}),
}
LAYOUTS = {
    "fa3 d64 strided": ("fa3", 64, False, {"strided": True}),
    "fa3 d128 strided": ("fa3", 128, False, {"strided": True}),
    "fa3 d256 strided": ("fa3", 256, False, {"strided": True}),
    "fa3 d128 causal strided": ("fa3", 128, True, {"strided": True}),
    "fa3 d128 persistent strided": ("fa3", 128, False, {"persistent": True, "strided": True}),
    "fa3 d256 persistent strided": ("fa3", 256, False, {"persistent": True, "strided": True}),
    "overlap d128 strided": ("overlap", 128, False, {"strided": True}),
    "ws d128 strided": ("ws", 128, False, {"strided": True}),
    "ws_pingpong d128 strided": ("ws_pingpong", 128, False, {"strided": True}),
    "pipelined d128 strided": ("pipelined", 128, False, {"strided": True}),
    "sequential d128 strided": ("sequential", 128, False, {"strided": True}),
}
GEMM_LAYOUTS = {
    "gemm sequential b_transposed": ("sequential", {"b_transposed": True}),
    "gemm pipelined b_transposed": ("pipelined", {"b_transposed": True}),
    "gemm ws b_transposed": ("ws", {"b_transposed": True}),
    "gemm ws_pingpong b_transposed": ("ws_pingpong", {"b_transposed": True}),
}
BUILDS = DEFAULT | SWITCHED | PROFILED | GEMM | LAYOUTS | GEMM_LAYOUTS
GEMM_BUILDS = GEMM | GEMM_LAYOUTS


def attention_build(variant: str, d: int, causal: bool, kw: dict):
    from kernels.attention import KERNELS, config, host

    kw = dict(kw)
    cfg = config(variant, d, causal, persistent=kw.pop("persistent", False))
    return host.compile_sm90(KERNELS[variant], cfg, causal=causal, **kw)


def gemm_build(variant: str, kw: dict):
    from kernels.gemm import KERNELS, common, config

    kw = dict(kw)
    profile = kw.pop("profile", False)
    b_transposed = kw.pop("b_transposed", False)
    return common.compile_sm90(KERNELS[variant], config(variant, **kw), profile=profile,
                               b_transposed=b_transposed)


def sass_hash(name: str) -> str:
    from kernels.cuda import compile as cc

    k = gemm_build(*GEMM_BUILDS[name]) if name in GEMM_BUILDS else attention_build(*BUILDS[name])
    return hashlib.sha256(cc.sass_of_cubin(k.asm["cubin"]).encode()).hexdigest()


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in ("record", "compare"):
        print(__doc__)
        return 2
    mode, path = argv[0], Path(argv[1])
    names = argv[2:] or list(BUILDS)
    unknown = [n for n in names if n not in BUILDS]
    if unknown:
        print(f"unknown build(s) {unknown}; the builds are: {', '.join(BUILDS)}")
        return 2
    old = json.loads(path.read_text()) if path.exists() else {}
    now, moved = {}, []
    for name in names:
        now[name] = sass_hash(name)
        if mode == "compare":
            same = old.get(name) == now[name]
            moved += [] if same else [name]
            print(f"{'identical' if same else 'CHANGED  '}  {name}", flush=True)
        else:
            print(f"{now[name][:16]}  {name}", flush=True)
    if mode == "record":
        path.write_text(json.dumps(old | now, indent=1) + "\n")
    return 1 if moved else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
