"""CPU-only build of the CUDA twins for sm_90a and a look at their SASS (no GPU, no torch).

What the CPU tests use to check that each kernel still has the Hopper pieces its name claims:
``nvcc -cubin`` with the same ``-gencode`` as the real build, ptxas's resource report (spills,
and the warnings it gives when it drops setmaxnreg or serializes wgmma), and the SASS from the
``cuobjdump`` that triton's wheel carries.

nvcc comes from the ``nvidia-cuda-nvcc`` wheel of the project's dev extras (``cuda``), so a
fresh CPU machine with only python and pip has it; a system nvcc (PATH, ``CUDA_HOME``) is the
fallback. Cubins are cached by a hash of the sources, the flags and nvcc's version, in the
user's cache (``$XDG_CACHE_HOME`` or ``~/.cache``, ``hopper-ws-course/cubin``), as Triton keeps its
own: every clone on a machine shares them, and a changed source or toolchain builds anew.
"""
from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from . import HEADERS, HERE, NVCC_FLAGS

CACHE = (Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
         / "hopper-ws-course" / "cubin")


def find_nvcc() -> Path | None:
    """The pip wheel's nvcc (nvidia/cu13/bin), else one on PATH or under CUDA_HOME."""
    try:
        import nvidia  # namespace package of the nvidia-* wheels

        for root in getattr(nvidia, "__path__", []):
            for cand in sorted(Path(root).glob("cu*/bin/nvcc")) + [Path(root) / "cuda_nvcc/bin/nvcc"]:
                if cand.is_file():
                    return cand
    except ImportError:
        pass
    found = shutil.which("nvcc")
    if found:
        return Path(found)
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home and (Path(home) / "bin" / "nvcc").is_file():
        return Path(home) / "bin" / "nvcc"
    return None


def find_cuobjdump() -> Path | None:
    """The cuobjdump bundled with triton (triton/backends/nvidia/bin), else one on PATH."""
    try:
        import triton

        cand = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
        if cand.is_file():
            return cand
    except ImportError:
        pass
    found = shutil.which("cuobjdump")
    return Path(found) if found else None


def _key(source: str, nvcc: Path) -> str:
    h = hashlib.sha256()
    for name in (source, *HEADERS):
        h.update((HERE / name).read_bytes())
    h.update(" ".join(NVCC_FLAGS).encode())
    h.update(_version(nvcc).encode())
    return h.hexdigest()[:16]


@functools.cache
def _version(nvcc: Path) -> str:
    """nvcc's own account of its release and build (the same wheel in two clones: one key)."""
    return subprocess.run([str(nvcc), "--version"], capture_output=True, text=True,
                          check=False).stdout


def compile_cubin(source: str, nvcc: Path | None = None) -> tuple[Path, str]:
    """Compile ``source`` (a file in kernels/cuda) for sm_90a; returns (cubin, ptxas report)."""
    nvcc = nvcc or find_nvcc()
    if nvcc is None:
        raise FileNotFoundError("no nvcc: install the project's dev extras (nvidia-cuda-nvcc) "
                                "or put a CUDA toolkit on PATH")
    out = CACHE / f"{Path(source).stem}-{_key(source, nvcc)}"
    cubin, log = out.with_suffix(".cubin"), out.with_suffix(".log")
    if cubin.is_file() and log.is_file():
        return cubin, log.read_text()
    CACHE.mkdir(parents=True, exist_ok=True)
    # one compile of a source at a time across processes (the test files that read one cubin
    # run on different workers): the others wait for it and read the cache
    with open(out.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (cubin.is_file() and log.is_file()):
            _nvcc(source, nvcc, cubin, log)
    return cubin, log.read_text()


def _nvcc(source: str, nvcc: Path, cubin: Path, log: Path) -> None:
    flags = [f for f in NVCC_FLAGS if f != "-lineinfo"]
    cmd = [str(nvcc), "-cubin", *flags, "-Xptxas", "-v", "-I", str(HERE), str(HERE / source),
           "-o", str(cubin) + ".tmp"]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise RuntimeError(f"nvcc failed ({' '.join(cmd)}):\n{res.stdout}\n{res.stderr}")
    # the log whole before the cubin appears: a reader that finds both reads a complete report
    Path(str(log) + ".tmp").write_text(res.stdout + res.stderr)
    os.replace(str(log) + ".tmp", log)
    os.replace(str(cubin) + ".tmp", cubin)


def sass_by_function(cubin: Path) -> dict[str, str]:
    """SASS of each kernel in ``cubin``: {mangled name: its instructions}."""
    tool = find_cuobjdump()
    if tool is None:
        raise FileNotFoundError("no cuobjdump: install the project's kernels extras (triton)")
    res = subprocess.run([str(tool), "-sass", str(cubin)], capture_output=True, text=True,
                         check=True)
    parts = re.split(r"^\s*Function : (\S+)\s*$", res.stdout, flags=re.MULTILINE)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


@functools.lru_cache(maxsize=16)
def sass_of_cubin(cubin: bytes) -> str:
    """SASS of a cubin held in memory (a Gluon kernel's ``asm["cubin"]``), all functions. Kept
    for the last few cubins: one disassembly costs about as much CPU as the ptxas that made it,
    and the compile checks read one build's SASS in several tests."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "k.cubin"
        path.write_bytes(cubin)
        return "".join(sass_by_function(path).values())


def softmax_under_pv(sass: str) -> list[int]:
    """The overlap check, in SASS: for each ``WARPGROUP.DEPBAR.LE gsb0, 0x1`` (the scores are in;
    P_{j-1}·V_{j-1} may still run), how many ``MUFU.EX2`` come before the next
    ``WARPGROUP.DEPBAR.LE gsb0, 0x0`` (P·V done). A softmax under its own P·V puts all of its
    exps there; zero means ptxas moved the wait in front of it."""
    ins = re.findall(r"/\*[0-9a-f]{4,}\*/\s+(.*?);", sass)
    counts = []
    for i, text in enumerate(ins):
        if "DEPBAR.LE gsb0, 0x1" in text:
            end = next((k for k in range(i, len(ins)) if "DEPBAR.LE gsb0, 0x0" in ins[k]), len(ins))
            counts.append(sum("MUFU.EX2" in t for t in ins[i:end]))
    return counts


def fa3_instance(mangled: str) -> dict:
    """The template arguments of an attention_fa3_kernel<D, BM, BN, BF16, CAUSAL, STAGES,
    COND_RESCALE, PERSISTENT> instance, from its mangled name: {"d", "block_m", "block_n",
    "bf16", "causal", "stages", "cond_rescale", "persistent"}."""
    m = re.search(r"attention_fa3_kernelILi(\d+)ELi(\d+)ELi(\d+)ELb([01])ELb([01])ELi(\d+)"
                  r"ELb([01])ELb([01])EE", mangled)
    if m is None:
        raise ValueError(f"not an attention_fa3_kernel instance: {mangled}")
    d, bm, bn, bf16, causal, stages, cond, persistent = (int(x) for x in m.groups())
    return {"d": d, "block_m": bm, "block_n": bn, "bf16": bool(bf16), "causal": bool(causal),
            "stages": stages, "cond_rescale": bool(cond), "persistent": bool(persistent)}


FA3_KEY = ("d", "block_m", "block_n", "bf16", "causal", "cond_rescale", "persistent")


def fa3_builds(nvcc: Path | None = None) -> dict[tuple, tuple[str, str]]:
    """attention_fa3.cu compiled (``compile_cubin``), by instance: {(its FA3_KEY values of
    ``fa3_instance``): (its SASS, its lines of the ptxas report)}."""
    cubin, report = compile_cubin("attention_fa3.cu", nvcc)
    out = {}
    for mangled, sass in sass_by_function(cubin).items():
        i = fa3_instance(mangled)
        ptxas = report.split(f"Compiling entry function '{mangled}'")[1].split("Compile time")[0]
        out[tuple(i[k] for k in FA3_KEY)] = (sass, ptxas)
    return out
