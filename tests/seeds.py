"""The seed scenarios and a few more, written by one real run: what ``explain`` and ``report`` read."""

import yaml
from catalogs import Scenario, batch_documents, changed, obj, seed_scenarios

from dirtiness.config import load_config
from dirtiness.pipeline import run
from dirtiness.settings import RunParams, resolve

HOSTILE = ("db", "we.ird <b>", 'x"<script>alert(1)</script>')


def explain_scenarios():
    s = seed_scenarios()
    # Dirty for two reasons in the same round: its dependency changed and its schema is forced.
    src, x = obj("db.up.src"), obj("db.both.x", deps=["db.up.src"])
    s.append(Scenario("two_reasons", [src, x], [changed(src), x], forced=["db.both"]))
    # An unchanged object on a cluster that a changed statement dirties.
    a, b = obj("db.c.a", cluster="c1"), obj("db.d.b", cluster="c1")
    s.append(Scenario("on_dirty_cluster", [a, b], [changed(a), b]))
    # Names that need quoting (dots, quotes, markup).
    weird = obj(HOSTILE)
    s.append(Scenario("hostile", [weird], [changed(weird)]))
    return s


def run_seeds(spark, folder):
    """The explain scenarios written by one real run into ``folder``: (output root, scenarios)."""
    scenarios = explain_scenarios()
    old, new, forced = batch_documents(scenarios)
    for name, document in (("old", old), ("new", new)):
        (folder / f"{name}.yaml").write_text(yaml.safe_dump(document))
    config = load_config()
    out = str(folder / "out")
    params = RunParams(old=str(folder / "old.yaml"), new=str(folder / "new.yaml"), out=out, forced_schemas=forced,
                       run_id="seeds", allow_destructive=True)  # the changed table's schema is swapped
    run(spark, resolve(params, config))
    return out, scenarios


