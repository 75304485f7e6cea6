"""Sail (pysail: a Spark Connect server in Rust, no JVM) runs the same job, and writes Delta itself.

The run takes ``examples/sail/config.yaml``: the native ``spark`` Delta
backend (``format("delta")``), eager checkpoints, and the settings PySpark's
client asks a server for. Its rows must equal the classic run's, also when it
reuses what an earlier run kept.
"""

import os
import re
import shutil
import sys
from pathlib import Path

import polars as pl
import pytest
from catalogs import batch_documents
from local_servers import TABLES, assert_same_rows, free_port, run_remote, serving

from dirtiness.config import PROJECT_ROOT

EXAMPLE = PROJECT_ROOT / "examples"
SAIL_CONFIG = ("--config", str(EXAMPLE / "sail" / "config.yaml"))


@pytest.fixture(scope="module")
def sail_server(tmp_path_factory):
    """A Sail server on a loopback port. Its Python runs the job's UDFs, so it is this environment's."""
    sail = shutil.which("sail", path=os.path.dirname(sys.executable))
    folder = tmp_path_factory.mktemp("sail")
    (folder / "checkpoints").mkdir()
    port, log = free_port(), folder / "server.log"
    env = {**os.environ, "SAIL_EXECUTION__CHECKPOINT__PATH": str(folder / "checkpoints")}
    command = [sail, "spark", "server", "--ip", "127.0.0.1", "--port", str(port)]
    with serving(command, port, log, cwd=folder, env=env) as remote:
        yield remote


@pytest.mark.processes
def test_the_example_under_sail_gives_the_classic_rows_in_native_delta(sail_server, example_run, tmp_path):
    # statements parsed and rendered once across runs (sql.reuse_from_objects 0): the kept work is written and
    # read by Sail's own Delta too
    config = tmp_path / "reuse.yaml"
    config.write_text((EXAMPLE / "sail" / "config.yaml").read_text() + "\nsql:\n  reuse_from_objects: 0\n")
    out, documents = tmp_path / "out", (EXAMPLE / "old.yaml", EXAMPLE / "new.yaml")
    summary = run_remote(sail_server, out, "example", *documents, "--config", str(config))
    assert "(spark backend)" in summary
    assert_same_rows(example_run.out, out)
    # written by Sail's own Delta writer: files at the table's root, none of delta-rs's commit folders
    assert not [p for table in TABLES for p in (out / table).iterdir() if p.is_dir() and p.name != "_delta_log"]

    # a retry of the same run replaces its rows (replaceWhere on tables that now exist), parsing and rendering
    # nothing: what the first attempt kept is read back
    summary = run_remote(sail_server, out, "example", *documents, "--config", str(config))
    assert re.search(r"SQL: 0 statements parsed, [1-9]\d* as earlier runs analysed them; "
                     r"0 plan statements rendered, [1-9]\d* as earlier runs rendered them", summary), summary
    assert_same_rows(example_run.out, out)
    runs = pl.read_delta(str(out / "runs")).filter(pl.col("run_id") == "example")
    assert runs.get_column("status").to_list() == ["succeeded"]


@pytest.mark.processes
def test_the_seed_scenarios_under_sail_give_the_classic_rows(sail_server, seeds, tmp_path):
    classic_out, scenarios = seeds
    folder = Path(classic_out).parent  # the seeds run's own old.yaml and new.yaml
    _, _, forced = batch_documents(scenarios)
    run_remote(sail_server, tmp_path / "out", "seeds", folder / "old.yaml", folder / "new.yaml", *SAIL_CONFIG,
               "--allow-destructive", *(f"--forced-schema={schema}" for schema in forced))
    assert_same_rows(Path(classic_out), tmp_path / "out")

