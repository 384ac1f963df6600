"""What the chapters share: the committed measurements, whether a Hopper GPU is here, and the
kernels' own code beside the model's.

A chapter's GPU section runs live when `hopper_gpu()` names a GPU and the kernels' requirements
are installed (`on_hopper`); otherwise it plots what `measured()` finds in `results/` and says
what running the kernel needs (`KERNELS_NEED`). Prose that quotes a number the chapter computes
says it through `md(f"...")`, so the sentence and the number cannot drift apart
(`tests/test_prose.py`). `beside("sim.gemm.pipelined:consumer", "kernels.gemm.pipelined:...")`
shows a schedule of the model and the loop of its kernel side by side, read from their files by
name (never pasted), so the two cannot drift apart either.

Every chapter also runs as a plain script (`python notebooks/05_fa3_ablation.py`, as on a GPU
machine without Jupyter): there `md` prints its Markdown as text and `explore` draws the
sliders' starting values once.
"""
from __future__ import annotations

import ast
import html
import importlib.util
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"
# The widest line a chapter prints. JupyterLab 4 shows a code cell's output in its default
# monospace font (13 px, about 7.8 px a character) in a column that holds 107 characters in a
# 1280-px-wide window with the file browser open, 122 at 1400 px (measured in Chromium), and
# wraps a longer line mid-word: a printed table must fit. tests/test_lab_browser.py checks that
# no printed line wraps in Lab.
WIDTH = 100
# What a chapter's live kernel cell needs, said wherever it cannot run.
KERNELS_NEED = ("a Hopper GPU (sm_90a: H100, H200) and the kernels' requirements "
                "(`pip install -r requirements-kernels.txt`: triton 3.6.0 and torch)")


def _shell():
    """The IPython shell of a live Jupyter kernel (one that shows what `display` is given), or
    None: in a plain `python` run, and in a terminal `ipython`, which would print a display
    object's repr instead of showing it. IPython being importable (JupyterLab installs it) says
    nothing about whether a kernel is running."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell if getattr(shell, "kernel", None) is not None else None


def md(text: str):
    """Show `text` as Markdown: a sentence whose numbers are the variables beside it. In a
    plain script (no IPython shell), print it as text. Raises ValueError where a wrapped line
    starts with a number and a full stop: Markdown would render it as a numbered list item."""
    lines = text.splitlines()
    for before, line in zip(lines, lines[1:]):
        if re.match(r"\s*\d+[.)]\s", line) and before.strip() and not re.match(r"\s*\d+[.)]\s", before):
            raise ValueError(f"this line would render as a numbered list item: {line.strip()!r} "
                             "(move the number to the line before)")
    if _shell() is None:
        print(text + "\n")
        return
    from IPython.display import Markdown, display
    display(Markdown(text))


def say(text: str, width: int | None = None) -> None:
    """Print a sentence wrapped at `width` (default `WIDTH`): printed text does not reflow in a
    notebook's output, Lab wraps it mid-word where a line is too long."""
    import textwrap
    print(textwrap.fill(text, width or WIDTH, break_on_hyphens=False))


def kernels_installed() -> bool:
    """Whether triton and torch import here (`requirements-kernels.txt`)."""
    return all(importlib.util.find_spec(m) is not None for m in ("triton", "torch"))


def on_hopper(what: str, run):
    """`run()` when a Hopper GPU and the kernels' requirements are here (its value); otherwise
    print what `what` needs, and return None."""
    if kernels_installed() and hopper_gpu():
        return run()
    missing = "no Hopper GPU here" if kernels_installed() else \
        "triton and torch are not installed here"
    say(f"{what} runs here live with {KERNELS_NEED}; {missing}.")
    return None


def source(name: str) -> tuple[str, str]:
    """(file, source) of `"package.module:qualname"` (a function, a class or `Class.method`),
    read from the module's file without importing it: the kernels need triton to import, not
    to be read. Raises LookupError naming what is missing."""
    module, _, qualname = name.partition(":")
    path = ROOT.joinpath(*module.split(".")).with_suffix(".py")
    if not path.exists():
        raise LookupError(f"{name}: no file {path.relative_to(ROOT)}")
    text = path.read_text(encoding="utf-8")
    node: ast.AST = ast.parse(text)
    for part in qualname.split("."):
        node = next((n for n in ast.iter_child_nodes(node)
                     if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                     and n.name == part), None)
        if node is None:
            raise LookupError(f"{name}: {path.relative_to(ROOT)} defines no {qualname}")
    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
    lines = text.splitlines()[first - 1:node.end_lineno]
    return str(path.relative_to(ROOT)), "\n".join(lines)


# The longest line two listings side by side may have: at `beside`'s 11 px code font a
# character is about 6.6 px, so two columns of 60 and their gap fill the ~830-px output column
# Lab gives a 1280-px window with the file browser open. Longer listings go one under the other.
BESIDE_MAX = 60


def beside(model: str, kernel: str) -> None:
    """The model's `model` and the kernel's `kernel` (names as `source` takes them): side by
    side in a notebook where both fit half the output column (`BESIDE_MAX`), one under the
    other where they do not; never wrapped (a line too long for the page scrolls sideways, as
    code in an editor). One after the other in a plain script."""
    sides = [(f"{side}: {f} · {name.partition(':')[2]}", code)
             for side, name in (("model", model), ("kernel", kernel))
             for f, code in [source(name)]]
    if _shell() is None:
        for title, code in sides:
            print(f"--- {title}\n{code}\n")
        return
    from IPython.display import HTML, display
    display(HTML(beside_html(sides)))


def beside_html(sides: list[tuple[str, str]]) -> str:
    """`beside`'s HTML for [(title, code)]: `white-space:pre` on each listing (Lab's own style
    for a <pre> in HTML output wraps it mid-word), side by side only where every line fits."""
    widest = max(len(line) for _, code in sides for line in code.splitlines())
    flex = "flex:1;min-width:0" if widest <= BESIDE_MAX else "width:100%"
    cols = "".join(
        f'<div style="{flex}"><b>{html.escape(title)}</b>'
        f'<pre style="font-size:11px;white-space:pre;overflow-x:auto;margin:4px 0 10px 0">'
        f"{html.escape(code)}</pre></div>"
        for title, code in sides)
    wrap = "flex-wrap:nowrap" if widest <= BESIDE_MAX else "flex-direction:column"
    return f'<div style="display:flex;gap:12px;{wrap}">{cols}</div>'


def in_order(name: str, steps: list[str]) -> list[int]:
    """Where each of `steps` (regular expressions) first matches in the source of `name`, each
    after the one before: a schedule and its kernel take the same steps in the same order.
    Raises AssertionError naming the first step not found in order."""
    code, at, found = source(name)[1], 0, []
    for step in steps:
        m = re.compile(step).search(code, at)
        if m is None:
            raise AssertionError(f"{name}: no {step!r} after {code[max(0, at - 60):at]!r}")
        found.append(m.start())
        at = m.end()
    return found




def fit(table: str, key: int = 16, width: int = WIDTH) -> str:
    """A wide text table that fits `width`: rows cut at their " | " separators into blocks
    printed one under the other, each row of a later block led by the first `key` characters
    of the row (its key columns); other lines (notes) wrapped. Raises ValueError if a block
    is still too wide."""
    import textwrap

    rows = [ln for ln in table.splitlines() if " | " in ln]
    notes = [ln for ln in table.splitlines() if " | " not in ln]
    parts = [r.split(" | ") for r in rows]
    out = []
    for k in range(max((len(p) for p in parts), default=0)):
        out += [(r[:key] + p[k] if k else p[k]).rstrip() for r, p in zip(rows, parts) if k < len(p)]
        out.append("")
    out += [w for n in notes for w in (textwrap.wrap(n, width) or [""])]
    too_wide = [ln for ln in out if len(ln) > width]
    if too_wide:
        raise ValueError(f"{len(too_wide[0])} > {width} characters: {too_wide[0][:60]!r}...")
    return "\n".join(out).rstrip()

def hopper_gpu() -> str | None:
    """The Hopper GPU's name, or None (no torch, no CUDA, not sm_90)."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available() or torch.cuda.get_device_capability(0)[0] != 9:
        return None
    return torch.cuda.get_device_name(0)


def measured(subcommand: str, gpu: str = "h200") -> dict | None:
    """The committed results of `python -m instruments.bench <subcommand>` on `gpu`, or None."""
    for path in (RESULTS / f"{gpu}.json", RESULTS / f"{gpu}-{subcommand}.json"):
        if path.exists():
            data = json.loads(path.read_text())
            if subcommand in data:
                return data[subcommand]
            if "rows" in data:
                return data
    return None


def live_gemm(variants, size: int = 8192) -> dict[str, float]:
    """Time our Gluon GEMMs and torch.matmul (cuBLAS) at size³ fp16 in one run on this GPU:
    TFLOP/s, do_bench medians, fresh random inputs, each checked against cuBLAS first."""
    import torch

    import kernels
    from instruments.harness import measure, rel_error

    a = torch.randn(size, size, device="cuda", dtype=torch.float16)
    b = torch.randn(size, size, device="cuda", dtype=torch.float16)
    ref = (a.double() @ b.double())
    flops = 2.0 * size ** 3
    out = {"cublas": measure(lambda: a @ b, flops)["tflops"]}
    for v in variants:
        c = kernels.gemm(a, b, variant=v)
        err = rel_error(c, ref)
        if err > 3e-3:
            raise AssertionError(f"{v}: relative error {err:.1e} against float64")
        out[v] = measure(lambda v=v: kernels.gemm(a, b, variant=v), flops)["tflops"]
    return out


def live_attention(variants=("fa3",), batch=2, heads=16, seqlen=8192, headdim=128) -> dict:
    """Time our Gluon attention variants beside SDPA's flash (FA2) and cuDNN backends in one run:
    TFLOP/s (4·B·H·S²·d), do_bench medians, fresh random inputs, ours checked against SDPA first."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention as sdpa

    from kernels.attention import attention
    from instruments.harness import measure, rel_error

    q, k, v = (torch.randn(batch, heads, seqlen, headdim, device="cuda", dtype=torch.float16)
               for _ in range(3))
    flops = 4.0 * batch * heads * seqlen ** 2 * headdim
    out = {}
    for name, backend in (("sdpa_flash", SDPBackend.FLASH_ATTENTION),
                          ("cudnn", SDPBackend.CUDNN_ATTENTION)):
        with sdpa_kernel(backend):
            ref = sdpa(q, k, v)
            out[name] = measure(lambda: sdpa(q, k, v), flops)["tflops"]
    for variant in variants:
        err = rel_error(attention(q, k, v, variant=variant), ref.double())
        if err > 1e-2:
            raise AssertionError(f"{variant}: relative error {err:.1e} against SDPA")
        out[variant] = measure(lambda variant=variant: attention(q, k, v, variant=variant),
                               flops)["tflops"]
    return out


def gemm_ladder(variants) -> dict[str, float]:
    """TFLOP/s at 8192³ fp16 of `variants` and cuBLAS: live on a Hopper GPU with the kernels'
    requirements, else the best of the committed H200 measurements; prints which. Empty if
    neither exists."""
    gpu = hopper_gpu() if kernels_installed() else None
    if gpu:
        best = live_gemm(variants)
        print(f"measured live on {gpu}, 8192³ fp16:")
    elif (res := measured("gemm")) is not None:
        best = best_by_variant(res["rows"], M=8192, N=8192, K=8192, dtype="float16")
        say(f"not run live (that needs {KERNELS_NEED}): the committed measurements of "
            f"{res['environment']['gpu']} ({res['environment']['date']}), best per variant "
            "at 8192³ fp16:")
    else:
        say(f"not run live (that needs {KERNELS_NEED}), and no committed GEMM measurements")
        return {}
    for v in (*variants, "cublas"):
        if v in best:
            print(f"  {v:12s} {best[v]:6.0f} TFLOP/s")
    return best


def best_by_variant(rows: list[dict], **where) -> dict[str, float]:
    """The best TFLOP/s each variant reached among the rows matching `where` (e.g. M=8192)."""
    best: dict[str, float] = {}
    for r in rows:
        if all(r.get(k) == v for k, v in where.items()) and r.get("ok", True) and "tflops" in r:
            best[r["variant"]] = max(best.get(r["variant"], 0.0), r["tflops"])
    return best


def explore(fn, **sliders) -> None:
    """Redraw `fn(**values)` from sliders (ipywidgets), each given as (min, max, step, value).
    In a plain script, or without ipywidgets, draw the starting values once and say so: the
    chapter's static figures tell the same story."""
    start = {name: value for name, (_, _, _, value) in sliders.items()}
    try:
        from ipywidgets import IntSlider, interact
    except ImportError:
        interact = None
    if interact is None or _shell() is None:
        why = "ipywidgets is not installed" if interact is None else "no Jupyter here"
        say(f"{why}: no sliders, the figure at {start} (the static figures above tell the "
            "same story)")
        fn(**start)
        return
    interact(fn, **{name: IntSlider(min=lo, max=hi, step=step, value=value, description=name)
                    for name, (lo, hi, step, value) in sliders.items()})


# --- the kernel beside the model (chapters 02-04) -----------------------------------------------
def kernel_file(pair) -> str:
    """The file of a pair's kernel consumer (`fidelity.pairs`: a `Source`, or a function)."""
    import inspect

    kernel = pair[2]
    if hasattr(kernel, "path"):
        return kernel.path
    return str(Path(inspect.getsourcefile(getattr(kernel, "fn", kernel))).relative_to(ROOT))


def steps_beside(pair, model_name: str, kernel_name: str) -> None:
    """The model's consumer and the kernel's, step by step, as each file spells them: the steps
    are read from the functions' source (`fidelity.pairs.steps`), never typed here. In a
    notebook a two-column table (`steps_html`); in a plain script the same rows as text
    (`steps_text`)."""
    if _shell() is None:
        print(steps_text(pair, model_name, kernel_name) + "\n")
        return
    from IPython.display import HTML, display
    display(HTML(steps_html(pair, model_name, kernel_name)))


def _pair_rows(pair) -> list[tuple[bool, str, str]]:
    from fidelity.pairs import steps

    model, model_switches, kernel, kernel_switches = pair
    return _aligned(steps(model, **model_switches), steps(kernel, **kernel_switches))


def steps_text(pair, model_name: str, kernel_name: str) -> str:
    """The two listings side by side as text, a row where they differ led by ≠."""
    rows = _pair_rows(pair)
    w = max(len(model_name), *(len(a) for _, a, _ in rows)) + 2
    return "\n".join([f"   {model_name:<{w}}{kernel_name}"] +
                     [f"{' ' if same else '≠'}  {a:<{w}}{b}".rstrip() for same, a, b in rows])


def steps_html(pair, model_name: str, kernel_name: str) -> str:
    """The two listings as an HTML table: left-aligned (Lab right-aligns a table's cells
    unless told), spaces kept, so a loop's body stands indented under its `for`; a row where
    the two differ marked ≠ in the first column."""
    cell = ("text-align:left;white-space:pre;font-family:var(--jp-code-font-family);"
            "padding:1px 14px 1px 6px;")
    body = "".join(
        f'<tr><td style="{cell}">{"" if same else "≠"}</td>'
        f'<td style="{cell}">{html.escape(a)}</td><td style="{cell}">{html.escape(b)}</td></tr>'
        for same, a, b in _pair_rows(pair))
    head = "".join(f'<th style="{cell}font-weight:bold">{html.escape(t)}</th>'
                   for t in ("", model_name, kernel_name))
    return (f'<table style="margin:0;border-collapse:collapse"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table>")


def _aligned(a: list[str], b: list[str]) -> list[tuple[bool, str, str]]:
    """Two listings line against line (difflib's matching): (same?, line of a, line of b), a
    blank where one side has no line."""
    import difflib

    rows = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        left, right = a[i1:i2], b[j1:j2]
        n = max(len(left), len(right))
        rows += [(op == "equal", x, y) for x, y in zip(left + [""] * (n - len(left)),
                                                       right + [""] * (n - len(right)))]
    return rows


def run_kernels(workload: str, variants) -> dict[str, float] | None:
    """On a Hopper GPU: time `variants` of `workload` ("attention" or "gemm") beside their peers
    (SDPA's flash and cuDNN backends, or cuBLAS), each checked for correctness first, and print
    TFLOP/s. Without one (or without the kernels' packages), say what running them needs and
    return None (`on_hopper`)."""
    def run():
        gpu = hopper_gpu()
        if workload == "attention":
            out = live_attention(tuple(variants))
            print(f"measured live on {gpu}: attention, batch 2, 16 heads, S 8192, d 128, fp16")
        else:
            out = live_gemm(list(variants))
            print(f"measured live on {gpu}: GEMM 8192³ fp16")
        for name, tf in out.items():
            print(f"  {name:12s} {tf:6.0f} TFLOP/s")
        return out

    return on_hopper(f"Timing {', '.join(variants)} ({workload})", run)


def explore_options(fn, name: str, options: dict, value: str | None = None) -> None:
    """Redraw `fn(**options[label])` from one slider over the labels: only the settings listed,
    so every step of the slider is one that runs (ipywidgets' SelectionSlider). In a plain
    script, or without ipywidgets, draw the starting label once and say so, as `explore` does."""
    labels = list(options)
    value = value or labels[len(labels) // 2]
    try:
        from ipywidgets import SelectionSlider, interact
    except ImportError:
        interact = None
    if interact is None or _shell() is None:
        why = "ipywidgets is not installed" if interact is None else "no Jupyter here"
        say(f"{why}: no slider, the figure at {name} = {value!r} (the static figures above tell "
            "the same story)")
        fn(**options[value])
        return
    interact(lambda **kw: fn(**options[kw[name]]),
             **{name: SelectionSlider(options=labels, value=value,
                                      description=name, continuous_update=False,
                                      layout={"width": "600px"})})
