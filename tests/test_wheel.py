"""The wheel, installed in a fresh virtualenv outside the source tree, runs the bundled example."""

import glob
import json
import os
import subprocess
import sys
import sysconfig

import pytest

from dirtiness.config import PROJECT_ROOT

EXAMPLE = PROJECT_ROOT / "examples"


@pytest.mark.processes
def test_the_wheel_runs_the_example_from_a_fresh_virtualenv(tmp_path, expected):
    dist, venv, work = tmp_path / "dist", tmp_path / "venv", tmp_path / "elsewhere"
    work.mkdir()
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(dist),
                            str(PROJECT_ROOT)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-2000:]
    wheel, = glob.glob(str(dist / "dirtiness-*.whl"))
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    installed = subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", wheel],
                               capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr[-2000:]
    # The dependencies (pyspark and the rest, hundreds of MB) come from the suite's own environment through
    # a path file; the suite's editable install of this project is not on that path, only the wheel is.
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (tmp_path / "venv" / os.path.relpath(site, venv) / "suite_dependencies.pth").write_text(
        sysconfig.get_paths()["purelib"] + "\n")
    where = subprocess.run([python, "-c", "import dirtiness.config as c; print(c.__file__); print(c.DEFAULT_CONFIG)"],
                           capture_output=True, text=True, cwd=work, check=True).stdout.split()
    assert all(path.startswith(str(venv)) for path in where), where  # the wheel's code and configuration

    summary = work / "summary.json"
    env = {**os.environ, "PYSPARK_PYTHON": python, "PYSPARK_DRIVER_PYTHON": python}
    run = subprocess.run([str(venv / "bin" / "dirtiness"), "run", "--old", str(EXAMPLE / "old.yaml"),
                          "--new", str(EXAMPLE / "new.yaml"), "--out", str(work / "out"),
                          "--summary-json", str(summary)], cwd=work, env=env, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads(summary.read_text())["counts"] == expected["counts"]
