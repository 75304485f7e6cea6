"""What can be checked before any work is: an output root that cannot be written, a table-form snapshot's
unreadable parquet file. Exit 2, one line, nothing started."""

import pytest

from dirtiness.cli import main
from dirtiness.config import PROJECT_ROOT
from dirtiness.store.output_root import check_writable

EXAMPLE = PROJECT_ROOT / "examples"


@pytest.mark.parametrize("where, message", [
    ("file/out", r"--out .*file/out: cannot be created: .*file is a file, not a folder"),
    ("file", r"--out .*file: not a folder \(a file of that name is in the way\)"),
])
def test_an_unwritable_output_root_is_one_line_before_spark(tmp_path, capsys, monkeypatch, where, message):
    import re

    from dirtiness import session

    monkeypatch.setattr(session, "build_session", lambda *a, **k: pytest.fail("Spark started"))
    (tmp_path / "file").write_text("in the way\n")
    code = main(["run", "--old", str(EXAMPLE / "old.yaml"), "--new", str(EXAMPLE / "new.yaml"),
                 "--out", str(tmp_path / where)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and re.search(message, err[0]), err


def test_a_root_to_be_created_is_probed_where_it_would_be_and_nothing_is_left(tmp_path):
    check_writable(str(tmp_path / "a" / "b" / "out"))
    check_writable("s3a://bucket/out")  # an object store's root: its session's business
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # neither the folders nor the probe


def test_a_truncated_parquet_file_of_a_table_form_snapshot_is_named_before_spark(tmp_path, capsys, monkeypatch):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dirtiness import session

    monkeypatch.setattr(session, "build_session", lambda *a, **k: pytest.fail("Spark started"))
    folder = tmp_path / "new" / "objects"
    folder.mkdir(parents=True)
    pq.write_table(pa.table({"database": ["d"], "schema": ["s"], "name": ["a"], "kind": ["view"]}),
                   folder / "part-0.parquet")
    data = (folder / "part-0.parquet").read_bytes()
    (folder / "part-0.parquet").write_bytes(data[: len(data) // 2])  # a copy cut short
    code = main(["run", "--old", str(EXAMPLE / "old.yaml"), "--new", str(tmp_path / "new"),
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert f"{folder / 'part-0.parquet'}: not a readable parquet file (" in err[0]
