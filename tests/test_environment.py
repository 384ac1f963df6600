"""environment.yml (conda) and pyproject.toml (pip) ask for the same packages and pins."""
import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CONDA_NAMES = {"pyyaml": "PyYAML"}


def _name(req: str) -> str:
    return re.split(r"[<>=!\[ ]", req.strip(), maxsplit=1)[0].lower()


def _spec(req: str) -> str:
    return req.strip()[len(_name(req)):].split(";")[0].replace(" ", "")


def _pyproject() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for deps in project["optional-dependencies"].values():
        reqs += [d for d in deps if not d.startswith("hopper-ws-course")]
    return {_name(r): _spec(r) for r in reqs}


def _conda() -> dict[str, str]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    out = {}
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            for r in dep["pip"]:
                if not r.startswith("-e"):
                    out[_name(r)] = _spec(r)
        elif not dep.startswith(("python=", "pip")):
            name = dep.split("=")[0].split("<")[0].split(">")[0].lower()
            spec = dep[len(name):]
            out[name] = "==" + spec[1:] if re.fullmatch(r"=[^=<>].*", spec) else spec
    return out


def test_same_packages_and_pins():
    assert _pyproject() == _conda()


def test_triton_pinned_to_the_gpu_machines():
    assert _pyproject()["triton"] == "==3.6.0"
    assert "<2.4" in _pyproject()["numpy"]
