"""Each chapter as a student sees it: JupyterLab in a real (headless) browser.

Lab is started exactly as `python3 tasks.py lab` starts it (`tasks.lab_command`: same command,
same environment, same Lab defaults from jupyter-config/), on a free port with a token and no
browser of its own, and opened in one page at `notebooks/`. For every chapter the test
double-clicks `NN_*.py` in Lab's file browser (it must open as a notebook, through jupytext),
runs Run → Run All Cells, waits for the kernel, and checks that

* no cell raised, and every figure cell (the rule of tests/test_notebooks.py) shows an <img>;
* no printed line wraps (a table keeps its columns), and the output column holds at least
  `course.WIDTH` characters, the width tests/test_notebooks.py holds every printed line to;
* where the chapter has sliders (`explore(...)`), pressing → on the first slider redraws the
  figure (the image's src changes);
* Ctrl+S after the run rewrites nothing: the .py has the same bytes (and `git diff` stays clean
  if it was clean), and no .ipynb appears;

and closes its tab, so the next chapter opens in the same page (`LabPage`).

And the student release (`python -m exercises release`) as a student gets it: a fresh virtual
environment (no system site packages) with only the release's `requirements.txt` (so no triton),
Lab started from the copy's root with the line its README gives (`release.LAB_LINE`), and each
chapter opened by double-clicking `notebooks/` and the chapter in Lab's file browser: it must open
as a notebook and its links to `../exercises/` must reach files of the copy. One chapter
(`RELEASE_RUN`) is also run there to the end, with the course's checks of errors, images and
wrapped lines: the chapters are the same files as the course's, each run in Lab above, so what
the copy can break is its environment, and every module the chapters and the packages they use
import must be found in the copy's venv (`test_release_venv_has_what_the_chapters_import`).
(The slider and the save are checked in the course repo: the chapters' code is the same.)

Screenshots for people to look at go to out/lab/ (gitignored: NN_*.png for the course repo,
release-NN_*.png for the release), with Lab's logs (lab.log, release-lab.log; under
pytest-xdist one per worker, and each fixture its own port and temporary folders).

It needs Chromium at /usr/bin/chromium and the playwright package (never a downloaded browser):
`apt-get install chromium` and `pip install playwright` (or `pip install -e .[test]`). Without
them it skips, unless COURSE_REQUIRE_BROWSER=1 (set by .ci/run), where it fails.
"""
from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
SHOTS = ROOT / "out" / "lab"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
CHAPTER_TIMEOUT_S = 300       # run all cells; chapter 05 is the slowest (~20-60 s of CPU)
SLIDER_TIMEOUT_S = 120        # one redraw after a slider step
POLL_MS = 100                 # how often a wait looks at the page again
SETTLE_MS = 300               # after a click that starts work, before the first look

pytestmark = pytest.mark.slow


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


tasks = _load("course_tasks", ROOT / "tasks.py")
nbtests = _load("course_test_notebooks", ROOT / "tests" / "test_notebooks.py")
CHAPTERS = nbtests.CHAPTERS


def _missing() -> str | None:
    why = []
    if not CHROMIUM.exists():
        why.append("no /usr/bin/chromium (Debian/Ubuntu: `sudo apt-get install chromium`)")
    if importlib.util.find_spec("playwright") is None:
        why.append("no playwright (`pip install playwright` or `pip install -e .[test]`; "
                   "no `playwright install` needed: the test uses /usr/bin/chromium)")
    return "; ".join(why) or None


@pytest.fixture(scope="module")
def lab():
    """A JupyterLab server started as `python3 tasks.py lab` starts it; yields (url, token)."""
    if why := _missing():
        if os.environ.get("COURSE_REQUIRE_BROWSER"):
            pytest.fail(f"the browser test must run here (COURSE_REQUIRE_BROWSER): {why}")
        pytest.skip(f"browser test skipped: {why}")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = secrets.token_hex(16)
    cmd, env = tasks.lab_command("--no-browser", "--ServerApp.ip=127.0.0.1", f"--port={port}",
                                 "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}")
    assert "MPLBACKEND" not in env, "the Lab server and its kernels must draw inline"
    workspaces = tempfile.mkdtemp(prefix="lab-workspaces-")  # leave the user's Lab tabs alone
    env = dict(env, JUPYTERLAB_WORKSPACES_DIR=workspaces)
    SHOTS.mkdir(parents=True, exist_ok=True)
    log = open(SHOTS / f"lab{_worker()}.log", "w")
    server = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"JupyterLab did not start (see {log.name})")
            time.sleep(0.5)
        yield url, token
    finally:
        server.terminate()
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
        shutil.rmtree(workspaces, ignore_errors=True)


def _worker() -> str:
    """"-gw0" under pytest-xdist (each worker its own Lab log), "" otherwise."""
    w = os.environ.get("PYTEST_XDIST_WORKER")
    return f"-{w}" if w else ""


@pytest.fixture(scope="module")
def chromium():
    """One Playwright driver for the module: its sync API allows one at a time in a process,
    and the course's and the release's Labs are open together."""
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def lab_page(lab, chromium):
    """The course's Lab in one page, its file browser in notebooks/ (`LabPage`)."""
    url, token = lab
    holder = LabPage(chromium, f"{url}/lab/tree/notebooks?reset&token={token}")
    yield holder
    holder.close()


def _api(lab, method: str, path: str):
    url, token = lab
    req = urllib.request.Request(f"{url}{path}", method=method,
                                 headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(req, timeout=30) as r:
        body = r.read()
    return json.loads(body) if body else None


def _dismiss_dialogs(page) -> list[str]:
    seen = []
    while page.locator(".jp-Dialog").count():
        seen.append(page.locator(".jp-Dialog").first.inner_text()[:200])
        page.locator(".jp-Dialog .jp-mod-accept").first.click()
        page.wait_for_timeout(300)
    return seen


def _double_click(page, name: str) -> None:
    item = page.locator(".jp-DirListing-itemText",
                        has_text=re.compile(rf"^\s*{re.escape(name)}\s*$"))
    item.first.wait_for(timeout=60_000)
    item.first.dblclick()


class LabPage:
    """The one browser page a Lab's chapters open in, one after another, by double-click in its
    file browser (after double-clicking `enter`'s folders once), as a student goes from chapter
    to chapter: Lab's own start in the browser (~4 s of Chromium's CPU) is paid once a Lab, not
    once a chapter. Each test ends with every tab closed (`close_tabs`, unsaved changes
    discarded: the save is checked where it is checked); a page that cannot be brought back to
    that is dropped, and the next chapter gets a fresh one."""

    def __init__(self, chromium, start_url: str, enter: tuple[str, ...] = ()):
        self.chromium, self.start_url, self.enter, self.page = chromium, start_url, enter, None

    def open(self, name: str):
        try:
            if self.page is None:
                self.page = self.chromium.new_page(viewport={"width": 1400, "height": 1000})
                self.page.goto(self.start_url)
                for folder in self.enter:
                    _double_click(self.page, folder)
            _double_click(self.page, name)
        except BaseException:
            if self.page is not None:
                self.page.screenshot(path=str(SHOTS / f"{name}-not-opened.png"))
                self.close()
            raise
        return self.page

    def close_tabs(self) -> None:
        page = self.page
        if page is None:
            return
        try:
            _dismiss_dialogs(page)
            page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^File$")).first.click()
            page.locator(".lm-Menu-itemLabel",
                         has_text=re.compile(r"^Close All Tabs$")).first.click()
            discard = page.locator(".jp-Dialog button", has_text=re.compile(r"^\s*Discard\s*$"))
            deadline = time.monotonic() + 30
            while page.locator(".jp-NotebookPanel").count() and time.monotonic() < deadline:
                if discard.count():
                    discard.first.click()
                page.wait_for_timeout(200)
            assert not page.locator(".jp-NotebookPanel").count()
        except Exception:
            page.close()
            self.page = None

    def close(self) -> None:
        if self.page is not None:
            self.page.close()
            self.page = None


KERNEL_IDLE = """() => {
  const bar = document.querySelector('#jp-main-statusbar');
  return !!bar && /Python 3[^|]*\\|\\s*Idle/.test(bar.textContent);
}"""
RUN_STATE = """() => {
  const prompts = [...document.querySelectorAll('.jp-NotebookPanel .jp-CodeCell')]
      .map(c => (c.querySelector('.jp-InputArea-prompt') || {}).textContent || '');
  return {
    running: prompts.some(p => p.includes('*')),
    done: prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p)),
    errors: [...document.querySelectorAll(
        '.jp-NotebookPanel [data-mime-type="application/vnd.jupyter.error"]')]
        .map(e => e.textContent.slice(0, 500)),
  };
}"""


# Printed lines Lab wraps: for each stdout/stderr block (and each result shown as plain text),
# the lines its text has against the lines it takes on the page (its height over the line
# height), and its longest line; and how many characters the output column holds in its font
# (course.WIDTH must fit).
WRAPPED = """() => [...document.querySelectorAll(
    '.jp-NotebookPanel .jp-OutputArea-output[data-mime-type^="application/vnd.jupyter.std"] pre, ' +
    '.jp-NotebookPanel .jp-OutputArea-output[data-mime-type="text/plain"] pre')].map(pre => {
  const cs = getComputedStyle(pre), ctx = document.createElement('canvas').getContext('2d');
  ctx.font = cs.font;
  const lines = pre.textContent.replace(/\\n$/, '').split('\\n');
  const shown = Math.round(pre.getBoundingClientRect().height / parseFloat(cs.lineHeight));
  return {columns: Math.floor(pre.clientWidth / (ctx.measureText('0'.repeat(100)).width / 100)),
          lines: lines.length, shown: shown,
          width: Math.max(...lines.map(l => l.length)),
          widest: lines.reduce((a, l) => l.length > a.length ? l : a, '').slice(0, 80)};
})"""


def _assert_nothing_wraps(page, name: str) -> None:
    """No printed line of the chapter wraps in Lab, none is wider than course.WIDTH (the column
    of a smaller screen than this window: the rule tests/test_notebooks.py holds a kernel's
    outputs to), and course.WIDTH fits the output column."""
    blocks = page.evaluate(WRAPPED)
    wide = [b for b in blocks if b["width"] > nbtests.course.WIDTH]
    assert not wide, f"{name}: printed lines wider than course.WIDTH ({nbtests.course.WIDTH}): " \
        + "; ".join(f"{b['width']} characters: {b['widest']!r}" for b in wide[:5])
    wrapped = [b for b in blocks if b["shown"] > b["lines"]]
    columns = min((b["columns"] for b in blocks), default=None)
    assert not wrapped, f"{name}: printed lines wrap in Lab ({columns} columns): " + "; ".join(
        f"{b['lines']} lines shown as {b['shown']}, widest {b['widest']!r}" for b in wrapped[:5])
    assert columns is None or columns >= nbtests.course.WIDTH, \
        f"{name}: the output column holds {columns} characters, course.WIDTH is {nbtests.course.WIDTH}"
    print(f"{name}: {len(blocks)} printed blocks, none wraps; the column holds {columns} characters")


def _wait_for_run(page, name: str) -> None:
    deadline = time.monotonic() + CHAPTER_TIMEOUT_S
    while True:
        state = page.evaluate(RUN_STATE)
        if not state["running"] and (state["done"] or state["errors"]):
            break
        if time.monotonic() > deadline:
            page.screenshot(path=str(SHOTS / f"{name}-timeout.png"))
            pytest.fail(f"{name}: cells still running after {CHAPTER_TIMEOUT_S} s")
        page.wait_for_timeout(POLL_MS)
    assert not state["errors"], f"{name} raised in Lab:\n" + "\n".join(state["errors"])
    page.wait_for_function(KERNEL_IDLE, timeout=60_000)


def _image_srcs(cell) -> list[str]:
    return cell.locator(".jp-OutputArea-output img").evaluate_all(
        "imgs => imgs.filter(i => i.complete && i.naturalWidth > 0).map(i => i.src)")


def _git_clean(path: Path) -> bool:
    return subprocess.run(["git", "diff", "--quiet", "--", str(path)], cwd=ROOT).returncode == 0


@pytest.mark.parametrize("py", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_in_lab(lab, lab_page, py):
    import jupytext

    url, token = lab
    name = py.stem
    nb = jupytext.read(py)
    figures = nbtests.figure_cells(nb)
    assert figures, f"{py.name} has no figure cell"
    sliders = [i for i in figures if re.search(r"\bexplore(_options)?\(", nb.cells[i].source)]
    before, was_clean = py.read_bytes(), _git_clean(py)
    ipynbs_before = set(NOTEBOOKS.glob("*.ipynb"))

    t0 = time.perf_counter()
    page = lab_page.open(py.name)
    try:
        try:
            page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=90_000)
        except Exception:
            page.screenshot(path=str(SHOTS / f"{name}-not-a-notebook.png"))
            raise AssertionError(f"{py.name} did not open as a notebook: Lab's defaultViewers "
                                 "(jupyter-config/labconfig) must map python to Jupytext Notebook")
        page.wait_for_function(KERNEL_IDLE, timeout=90_000)  # the kernel started, unasked
        dialogs = _dismiss_dialogs(page)
        cells = page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell")
        assert cells.count() == len(nb.cells), \
            f"Lab shows {cells.count()} cells, jupytext reads {len(nb.cells)}"

        page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).first.click()
        page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
        page.wait_for_timeout(SETTLE_MS)
        dialogs += _dismiss_dialogs(page)
        _wait_for_run(page, name)
        ran = time.perf_counter() - t0

        # every figure cell shows an image (give the browser a moment to decode them)
        deadline = time.monotonic() + 30
        while (missing := [i for i in figures if not _image_srcs(cells.nth(i))]) \
                and time.monotonic() < deadline:
            page.wait_for_timeout(POLL_MS)
        for k, i in enumerate(figures):     # every figure's output, for people to look at
            cells.nth(i).locator(".jp-OutputArea").first.scroll_into_view_if_needed()
            page.screenshot(path=str(SHOTS / (f"{name}.png" if k == 0 else f"{name}-{i}.png")))
        assert not missing, f"{py.name}: no image in figure cell(s) " + ", ".join(
            f"{i} ({nb.cells[i].source.splitlines()[0][:60]!r})" for i in missing)
        _assert_nothing_wraps(page, py.name)

        if sliders:  # one step right on the first slider: the figure is drawn again, differently
            cell = cells.nth(sliders[0])
            cell.scroll_into_view_if_needed()
            old = _image_srcs(cell)
            handle = cell.locator(".widget-slider .noUi-handle").first
            tried = []
            for key, times in (("ArrowRight", 1), ("ArrowLeft", 2)):  # one step, else the other way
                for _ in range(times):
                    handle.focus()
                    handle.press(key)
                deadline = time.monotonic() + SLIDER_TIMEOUT_S
                page.wait_for_timeout(SETTLE_MS)
                while (new := _image_srcs(cell)) in ([], old) and time.monotonic() < deadline:
                    if page.evaluate(KERNEL_IDLE) and not cell.locator(".jp-OutputArea-output img").count():
                        page.wait_for_timeout(1500)  # idle and no image: this value draws nothing
                        if not _image_srcs(cell):
                            break
                    page.wait_for_timeout(POLL_MS)
                value = cell.locator(".widget-readout").first.inner_text()
                tried.append(f"{key}: value {value}, " + ("redrawn" if new and new != old else
                             "no image" if not new else "same image"))
                if new and new != old:
                    break
            page.screenshot(path=str(SHOTS / f"{name}-slider.png"))
            assert new and new != old, \
                f"{py.name}: moving the first slider did not redraw the figure ({'; '.join(tried)})"

        # save as a student would: Ctrl+S after the run (never over an edit made meanwhile)
        if py.read_bytes() != before:
            pytest.fail(f"{py.name} changed on disk while the test ran: not saving over it")
        mtime = py.stat().st_mtime_ns
        page.locator(".jp-NotebookPanel .jp-Notebook").first.click(position={"x": 5, "y": 5})
        page.keyboard.press("Escape")
        page.keyboard.press("Control+s")
        deadline = time.monotonic() + 30
        while py.stat().st_mtime_ns == mtime and time.monotonic() < deadline:
            page.wait_for_timeout(POLL_MS)
        if page.locator(".jp-Dialog").count():  # e.g. "file changed on disk": do not overwrite
            text = page.locator(".jp-Dialog").first.inner_text()[:300]
            page.locator(".jp-Dialog .jp-mod-reject").first.click()
            pytest.fail(f"saving {py.name} asked: {text!r}")
        assert py.stat().st_mtime_ns != mtime, f"Ctrl+S did not save {py.name}"
        after = py.read_bytes()
        assert after == before, f"saving {py.name} from Lab changed it (outputs or metadata):\n" + \
            "".join(l for l in __import__("difflib").unified_diff(
                before.decode().splitlines(True), after.decode().splitlines(True), n=0))[:2000]
        if was_clean:
            assert _git_clean(py), f"git diff not clean for {py.name} after a save from Lab"
        assert set(NOTEBOOKS.glob("*.ipynb")) == ipynbs_before, "a save from Lab wrote an .ipynb"
        print(f"{py.name}: ran in {ran:.1f} s, {len(figures)} figure cells with images"
              f"{', slider redraws' if sliders else ''}; saved unchanged"
              f"{'; dialogs: ' + repr(dialogs) if dialogs else ''}")
    except BaseException:
        page.screenshot(path=str(SHOTS / f"{name}-failed.png"))
        raise
    finally:
        lab_page.close_tabs()
        for kernel in _api(lab, "GET", "/api/kernels") or []:
            _api(lab, "DELETE", f"/api/kernels/{kernel['id']}")


# --- the student release -----------------------------------------------------------------------
# `python -m exercises release` as a student gets it: a fresh virtual environment (no system site
# packages) with only the release's requirements.txt, Lab started with the line its README gives,
# from the copy's root, and each chapter opened by double-clicks in Lab's file browser.


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_up(url: str, token: str, server, log, seconds: float = 180) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if server.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"JupyterLab did not start (see {log})")
        time.sleep(0.5)


@pytest.fixture(scope="module")
def release_lab(tmp_path_factory):
    """(url, token, copy): the release in a fresh venv, Lab started as its README says."""
    if why := _missing():
        if os.environ.get("COURSE_REQUIRE_BROWSER"):
            pytest.fail(f"the browser test must run here (COURSE_REQUIRE_BROWSER): {why}")
        pytest.skip(f"browser test skipped: {why}")
    from exercises.grading.release import LAB_LINE, release

    base = tmp_path_factory.mktemp("student")
    copy = release(base / "course")
    readme = (copy / "README.md").read_text()
    assert LAB_LINE in readme, "the README must give the line that starts Lab"
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    # --no-compile: the same packages, their modules compiled as Lab imports them rather than
    # all at install (a third of pip's CPU time here); so the copy's processes must be free to
    # keep what they compile (no PYTHONDONTWRITEBYTECODE below), or the server and every
    # chapter's kernel compile Jupyter's, matplotlib's and numpy's modules again (~4 CPU-s each)
    pip = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                          "--no-compile", "-r", str(copy / "requirements.txt")],
                         capture_output=True, text=True, timeout=900)
    assert pip.returncode == 0, pip.stderr[-3000:]
    check = subprocess.run([str(venv / "bin" / "python"), "-c", "import triton"],
                           capture_output=True)
    assert check.returncode != 0, "requirements.txt alone must not bring triton"
    port, token = _free_port(), secrets.token_hex(16)
    flags = (f"--no-browser --ServerApp.ip=127.0.0.1 --port={port} --ServerApp.port_retries=0 "
             f"--IdentityProvider.token={token}"
             + (" --allow-root" if hasattr(os, "geteuid") and os.geteuid() == 0 else ""))
    env = {k: v for k, v in os.environ.items()
           if k not in ("MPLBACKEND", "PYTHONPATH", "JUPYTER_CONFIG_PATH", "VIRTUAL_ENV",
                        "PYTHONDONTWRITEBYTECODE")}
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", VIRTUAL_ENV=str(venv),
               JUPYTERLAB_WORKSPACES_DIR=str(base / "workspaces"), HOME=str(base / "home"))
    SHOTS.mkdir(parents=True, exist_ok=True)
    log_path = SHOTS / f"release-lab{_worker()}.log"
    log = open(log_path, "w")
    server = subprocess.Popen(["bash", "-c", f"{LAB_LINE} {flags}"], cwd=copy, env=env,
                              stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_up(url, token, server, log_path)
        yield url, token, copy
    finally:
        server.terminate()
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


# The packages a chapter's CPU path imports, in the copy; a module of requirements-kernels.txt
# (imported only where a Hopper GPU is) is left out, and must be absent (no triton above).
RELEASE_SCANNED = ("notebooks", "sim", "fidelity", "records")
KERNELS_ONLY = {"torch", "triton"}


def imported_modules(root: Path) -> set[str]:
    """Top-level names of every module imported anywhere (function bodies too) in the .py
    files of `root`'s RELEASE_SCANNED folders, less the standard library's and the copy's own."""
    names = set()
    for folder in RELEASE_SCANNED:
        for path in (root / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    names |= {a.name.split(".")[0] for a in node.names}
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names.add(node.module.split(".")[0])
    own = {p.stem for p in root.iterdir()} | {p.stem for p in (root / "notebooks").glob("*.py")}
    return names - set(sys.stdlib_module_names) - own


def test_release_venv_has_what_the_chapters_import(release_lab):
    """Every module the chapters and the packages they use import is found in the copy's venv
    (requirements.txt brings it), but for the kernels' own, which it must not bring."""
    _, _, copy = release_lab
    wanted = imported_modules(copy)
    assert {"matplotlib", "numpy", "simpy", "ipywidgets"} <= wanted, wanted  # the scan sees them
    venv_python = copy.parent / "venv" / "bin" / "python"
    probe = ("import importlib.util, json, sys; names = json.loads(sys.argv[1]); "
             "print(json.dumps([n for n in names if importlib.util.find_spec(n) is None]))")
    out = subprocess.run([str(venv_python), "-c", probe, json.dumps(sorted(wanted))],
                         capture_output=True, text=True, check=True)
    missing = set(json.loads(out.stdout))
    assert missing == wanted & KERNELS_ONLY, \
        f"requirements.txt does not bring {sorted(missing - KERNELS_ONLY)}"


@pytest.fixture(scope="module")
def release_page(release_lab, chromium):
    """The release's Lab in one page: notebooks/ double-clicked once (`LabPage`)."""
    url, token, _ = release_lab
    holder = LabPage(chromium, f"{url}/lab?reset&token={token}", enter=("notebooks",))
    yield holder
    holder.close()


RELEASE_RUN = "04_intra_warpgroup_overlap.py"   # links to both kinds of exercise, no triton here


def _run_in_release(page, py, name: str, figures: list[int]) -> None:
    """Run All in the release's Lab: no error, an image in every figure cell, nothing wraps."""
    cells = page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell")
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
    page.wait_for_timeout(SETTLE_MS)
    _dismiss_dialogs(page)
    _wait_for_run(page, name)
    deadline = time.monotonic() + 30
    while (missing := [i for i in figures if not _image_srcs(cells.nth(i))]) \
            and time.monotonic() < deadline:
        page.wait_for_timeout(POLL_MS)
    for k, i in enumerate(figures):     # every figure's output, for people to look at
        cells.nth(i).locator(".jp-OutputArea").first.scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / (f"{name}.png" if k == 0 else f"{name}-{i}.png")))
    assert not missing, f"{py.name} in the release: no image in figure cell(s) {missing}"
    _assert_nothing_wraps(page, f"release {py.name}")


@pytest.mark.parametrize("py", CHAPTERS, ids=lambda p: p.stem)
def test_release_chapter_in_lab(release_lab, release_page, py):
    """In the student's copy: double-click notebooks/, then the chapter: it opens as a notebook
    and its links to ../exercises open the exercise. `RELEASE_RUN`: Run All runs it without an
    error (no triton here), every figure cell shows an image and no printed line wraps."""
    import jupytext

    url, token, copy = release_lab
    name = f"release-{py.stem}"
    nb = jupytext.read(copy / "notebooks" / py.name)
    figures = nbtests.figure_cells(nb)
    page = release_page.open(py.name)
    try:
        try:
            page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=90_000)
        except Exception:
            page.screenshot(path=str(SHOTS / f"{name}-not-a-notebook.png"))
            raise AssertionError(f"{py.name} did not open as a notebook by double-click in the "
                                 "release: its jupyter-config/ must reach Lab")
        page.wait_for_function(KERNEL_IDLE, timeout=90_000)
        _dismiss_dialogs(page)
        if py.name == RELEASE_RUN:
            _run_in_release(page, py, name, figures)
        # Lab rewrites a relative link to the server's /files/<path>: a file under the root
        links = page.locator(".jp-NotebookPanel .jp-RenderedMarkdown a[href*='exercises/']")
        written = (copy / "notebooks" / py.name).read_text().count("](../exercises/")
        assert links.count() == written, f"{py.name}: {written} exercise links, Lab shows " \
            f"{links.count()}"
        for i in range(links.count()):
            href = links.nth(i).get_attribute("href")
            path = urllib.parse.unquote(urllib.parse.urlparse(href).path)
            assert "/files/" in path, f"{py.name}: {href} is not a file of the server"
            rel = path.split("/files/", 1)[1]
            assert (copy / rel).is_file(), f"{py.name}: dead link {href}"
            assert _api((url, token), "GET", f"/api/contents/{rel}?content=0")["path"] == rel
    except BaseException:
        page.screenshot(path=str(SHOTS / f"{name}-failed.png"))
        raise
    finally:
        release_page.close_tabs()
        for kernel in _api((url, token), "GET", "/api/kernels") or []:
            _api((url, token), "DELETE", f"/api/kernels/{kernel['id']}")
