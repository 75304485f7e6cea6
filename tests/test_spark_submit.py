"""``spark-submit jobs/compute_dirty.py`` with bad input: exit 2 and one line, through spark-submit.

A good run through spark-submit: test_cluster.py (a standalone cluster) and test_airflow.py (local[2]).
"""

import os
import shutil
import subprocess
import sys

import pytest
from catalogs import EXAMPLE_NEW

from dirtiness.config import PROJECT_ROOT


@pytest.mark.processes
def test_spark_submit_bad_input_exits_2(tmp_path):
    submit = shutil.which("spark-submit", path=os.path.dirname(sys.executable)) or shutil.which("spark-submit")
    result = subprocess.run(
        [submit, str(PROJECT_ROOT / "jobs" / "compute_dirty.py"), "--old", str(tmp_path / "nope.yaml"),
         "--new", EXAMPLE_NEW, "--out", str(tmp_path / "out")],
        env={**os.environ, "PYSPARK_PYTHON": sys.executable}, capture_output=True, text=True, timeout=300)
    assert result.returncode == 2
    assert "nope.yaml: no such file or folder (--old)" in result.stdout + result.stderr
