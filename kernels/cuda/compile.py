"""CPU-only build of the CUDA twins for sm_90a and a look at their SASS (no GPU, no torch).

What the CPU tests use to check that each kernel still has the Hopper pieces its name claims:
``nvcc -cubin`` with the same ``-gencode`` as the real build, ptxas's resource report (spills,
and the warnings it gives when it drops setmaxnreg or serializes wgmma), and the SASS from the
``cuobjdump`` that triton's wheel carries.

nvcc comes from the ``nvidia-cuda-nvcc`` wheel of the project's dev extras (``cuda``), so a
fresh CPU machine with only python and pip has it; a system nvcc (PATH, ``CUDA_HOME``) is the
fallback. Cubins are cached by a hash of the sources, flags and nvcc, under ``build/`` here.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

from . import HEADERS, HERE, NVCC_FLAGS

CACHE = HERE / "build" / "cubin"


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
    h.update(str(nvcc).encode())
    return h.hexdigest()[:16]


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
    flags = [f for f in NVCC_FLAGS if f != "-lineinfo"]
    cmd = [str(nvcc), "-cubin", *flags, "-Xptxas", "-v", "-I", str(HERE), str(HERE / source),
           "-o", str(cubin) + ".tmp"]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise RuntimeError(f"nvcc failed ({' '.join(cmd)}):\n{res.stdout}\n{res.stderr}")
    os.replace(str(cubin) + ".tmp", cubin)
    log.write_text(res.stdout + res.stderr)
    return cubin, log.read_text()


def sass_by_function(cubin: Path) -> dict[str, str]:
    """SASS of each kernel in ``cubin``: {mangled name: its instructions}."""
    tool = find_cuobjdump()
    if tool is None:
        raise FileNotFoundError("no cuobjdump: install the project's kernels extras (triton)")
    res = subprocess.run([str(tool), "-sass", str(cubin)], capture_output=True, text=True,
                         check=True)
    parts = re.split(r"^\s*Function : (\S+)\s*$", res.stdout, flags=re.MULTILINE)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}
