"""The install the docs give trains: the `hf` extra holds every package lorasim_hf imports to
train and measure, and README's and docs/python.md's install lines ask for it."""
import os
import re
import tomllib

from lorasim_hf import _deps

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _extras(path):
    with open(os.path.join(ROOT, path), "rb") as f:
        return tomllib.load(f)["project"]["optional-dependencies"]


def _pins(requirements):
    return dict(r.split("==") for r in requirements)


def test_hf_extra_holds_every_package_training_imports():
    # trl: tune of an SFTTrainer (probe_runs, tune_trials); datasets: lengths of Parquet/Arrow files.
    needed = {**_deps.PINNED, **_deps.ALSO_PINNED, "trl": "1.16.0"}
    for path in ("pyproject.toml", "python/pyproject.toml"):
        hf = _pins(_extras(path)["hf"])
        assert hf == needed, f"{path}: [hf] is {hf}, training needs {needed}"
        for part in ("sft", "lengths"):  # the smaller extras pin the same versions
            for name, version in _pins(_extras(path)[part]).items():
                assert hf[name] == version, f"{path}: [{part}] pins {name}=={version}, [hf] {hf[name]}"


def _section(path, heading):
    text = open(os.path.join(ROOT, path)).read()
    start = text.index(heading)
    end = text.find("\n#", start + len(heading))
    return text[start:end if end >= 0 else None]


def test_documented_installs_ask_for_the_hf_extra():
    for path, heading in (("README.md", "## Python users: one install"), ("docs/python.md", "## Install")):
        installs = re.findall(r"^pip install (.+)$", _section(path, heading), re.M)
        assert installs, f"{path} '{heading}' has no pip install line"
        assert all(re.fullmatch(r'"?[^\s"]*\[hf\]"?', line) for line in installs), (path, installs)
