"""The README's quickstart output says what examples/expected.json says (no Spark)."""

import json
import re

from dirtiness.config import PROJECT_ROOT
from dirtiness.model import BASE_RELATIONS


def test_quickstart_output_matches_the_golden_file():
    expected = json.loads((PROJECT_ROOT / "examples" / "expected.json").read_text())
    readme = (PROJECT_ROOT / "README.md").read_text()
    block = readme[readme.index("### 1. The bundled example"):].split("```")[1]
    counts = expected["counts"]
    dirty = ", ".join(f"{counts[t]} {t}" for t in ("dirty_stmts", "dirty_clusters", "dirty_schemas"))
    assert f"  dirty: {dirty}\n" in block
    phases = ", ".join(f"{n} {p}" for p, n in expected["plan"].items())
    assert f"  plan (blue-green): {counts['ddl_plan']} operations: {phases}\n" in block
    assert f"  base facts: {expected['base_facts']} rows in {len(BASE_RELATIONS)} relations\n" in block
    assert re.search(rf"\({expected['rounds']} rounds to the fixed point\)", block)
