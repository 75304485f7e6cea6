"""The seed scenarios (issue 2), all in one Spark run per rule program."""

import pytest
from catalogs import run_scenarios, seed_scenarios

M = "materialize"


@pytest.fixture(scope="module")
def default(spark):
    return run_scenarios(spark, seed_scenarios(), "dirty").outcomes


@pytest.fixture(scope="module")
def index_aware(spark):
    return run_scenarios(spark, seed_scenarios(), "index_aware").outcomes


def test_one_changed_table_dirties_its_whole_schema(default):
    got = default["schema_atomic"]
    assert set(got.stmts) == {"db.app.table1", "db.app.table2", "db.app.view1"}
    assert got.stmts["db.app.table1"]["change"] == "modified"
    assert got.stmts["db.app.table2"]["rule"] == "schema"
    assert set(got.schemas) == {"db.app"}
    assert got.clusters == {}


def test_index_cluster_never_makes_the_object_dirty(default):
    got = default["index_cluster"]
    assert set(got.clusters) == {"quickstart"}
    assert f"{M}.internal.winning_bids" not in got.stmts
    assert set(got.stmts) == {f"{M}.public.other"}
    assert "staging" not in got.clusters


def test_index_aware_program_dirties_index_only_objects_but_not_their_schema(index_aware):
    got = index_aware["index_cluster"]
    assert set(got.clusters) == {"quickstart"}
    assert got.stmts[f"{M}.internal.winning_bids"]["rule"] == "index"
    assert f"{M}.internal" not in got.schemas
    assert "staging" not in got.clusters


def test_schema_propagation_does_not_cascade_through_index_clusters(default, index_aware):
    for outcome in (default, index_aware):
        got = outcome["no_cascade"]
        assert set(got.schemas) == {f"{M}.public"}
        assert "quickstart" not in got.clusters
        assert f"{M}.internal.winning_bids" not in got.stmts
        assert set(got.stmts) == {f"{M}.public.flippers", f"{M}.public.flip_activities"}


def _chain(outcome, start: str) -> list[str]:
    """Follow ``cause`` back from an object until a base fact."""
    facts = {f"DirtyStmt({k})": r for k, r in outcome.stmts.items()}
    facts.update({f"DirtySchema({k.replace('.', ', ')})": r for k, r in outcome.schemas.items()})
    facts.update({f"DirtyCluster({k})": r for k, r in outcome.clusters.items()})
    chain, cause = [], f"DirtyStmt({start})"
    while cause in facts:
        chain.append(cause)
        cause = facts[cause]["cause"]
        assert len(chain) < 20, chain
    return chain + [cause]


def test_dependency_chain_dirties_everything_and_explains_back_to_the_change(default, index_aware):
    for outcome in (default, index_aware):
        got = outcome["chain"]
        assert set(got.stmts) == {f"{M}.internal.winning_bids", f"{M}.public.flip_activities", f"{M}.public.flippers"}
        assert set(got.schemas) == {f"{M}.internal", f"{M}.public"}
    chain = _chain(default["chain"], f"{M}.public.flippers")
    assert chain[-1] == f"ChangedStmt({M}.internal.winning_bids)"
    assert chain[:2] == [f"DirtyStmt({M}.public.flippers)", f"DirtyStmt({M}.public.flip_activities)"]
    assert default["chain"].stmts[f"{M}.public.flippers"]["round"] == 3


def test_changed_sink_dirties_no_cluster_and_no_schema(default):
    got = default["sink"]
    assert set(got.stmts) == {"db.out.sink"}
    assert got.clusters == {} and got.schemas == {}


def test_replacement_mv_stops_dependency_but_dirties_its_schema(default):
    got = default["replacement"]
    assert set(got.stmts) == {"db.api.stable", "db.api.sibling"}
    assert "db.reports.user" not in got.stmts
    assert set(got.schemas) == {"db.api"}


def test_forced_schema_dirties_objects_and_dependents_but_no_cluster(default):
    got = default["forced"]
    assert set(got.stmts) == {"db.forced.a", "db.down.b"}
    assert got.schemas["db.forced"]["rule"] == "forced"
    assert got.schemas["db.forced"]["cause"] == "ForcedSchema(db, forced)"
    assert set(got.schemas) == {"db.forced", "db.down"}
    assert got.clusters == {}
    assert got.stmts["db.forced.a"]["change"] is None


def test_added_and_deleted_objects(default):
    got = default["added_deleted"]
    assert got.stmts["db.adds.new"]["change"] == "added"
    assert got.stmts["db.dels.gone"]["change"] == "deleted"
    assert got.stmts["db.sinks.gone"]["change"] == "deleted"
    assert {"db.adds", "db.dels"} == set(got.schemas)  # the deleted sink leaves db.sinks clean
    assert "db.sinks.keep" not in got.stmts
    assert {"db.adds.keep", "db.dels.keep"} <= set(got.stmts)


def test_nothing_changed_nothing_dirty(default):
    got = default["unchanged"]
    assert got.stmts == {} and got.clusters == {} and got.schemas == {}
