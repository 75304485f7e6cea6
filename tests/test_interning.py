"""Ids are a function of the key alone (the same in every run, whatever else the catalog holds), and two keys
with the same id are found."""

from chispa import assert_df_equality
from pyspark.sql import functions as F

from dirtiness.changeset.catalog import clash_detail, id_clashes, numbered_names, numbered_objects

EDGE = "database string, schema string, name string, dep_database string, dep_schema string, dep_name string"


def test_an_id_does_not_depend_on_the_other_keys_or_the_run(spark):
    small = spark.createDataFrame([("db", "s", "a"), ("db", "s", "b")], "database string, schema string, name string")
    large = spark.createDataFrame([("db", "s", f"x{i}") for i in range(200)] + [("db", "s", "b"), ("db", "s", "a")],
                                  "database string, schema string, name string")
    edges = spark.createDataFrame([("db", "s", "a", "db", "t", "only_an_edge_names_it")], EDGE)
    no_edges = spark.createDataFrame([], EDGE)
    numbered = {label: numbered_objects(frame, e, seed).select(F.lit(label).alias("label"), "name", "id")
                for label, frame, e, seed in (("small", small, edges, 0), ("large", large, no_edges, 0),
                                              ("seeded", small, edges, 7))}
    names = numbered_names(spark.createDataFrame([("db",), ("a",)], "value string"), 0)
    rows = (numbered["small"].unionByName(numbered["large"]).unionByName(numbered["seeded"])
            .unionByName(names.select(F.lit("names").alias("label"), F.col("value").alias("name"), "id")).collect())
    ids = {(r["label"], r["name"]): r["id"] for r in rows}
    assert ids[("small", "a")] == ids[("large", "a")] and ids[("small", "b")] == ids[("large", "b")]
    assert ("small", "only_an_edge_names_it") in ids  # an object only an edge names is numbered too
    assert ids[("seeded", "a")] != ids[("small", "a")]  # the seed is what a clash is resolved by
    assert all(i >= 0 for i in ids.values())  # never the padding of narrow tuples (-1)
    assert len({i for (label, _), i in ids.items() if label == "large"}) == 202


def test_two_keys_with_one_id_are_named(spark):
    objects = spark.createDataFrame([("db", "s", "a", 5), ("db", "s", "b", 5), ("db", "s", "c", 6)],
                                    "database string, schema string, name string, id long")
    names = spark.createDataFrame([("x", 5), ("y", 6)], "value string, id long")  # ids of names are apart
    assert_df_equality(id_clashes(objects, names), spark.createDataFrame([("objects", 5)], "kind string, id long"),
                       ignore_nullable=True)
    assert id_clashes(objects.where(F.col("name") != "b"), names).count() == 0
    assert clash_detail(objects, names, "objects", 5) == "objects db.s.a and db.s.b"


def test_a_run_whose_keys_clash_stops_before_the_rules_and_says_what_to_change(spark, tmp_path, capsys,
                                                                                 monkeypatch):
    from dirtiness import pipeline
    from dirtiness.cli import main
    from dirtiness.config import PROJECT_ROOT

    def clashing(objects, names):  # what the check finds once in many millions of runs, planted
        return id_clashes(objects, names).unionByName(objects.limit(1).select(F.lit("objects").alias("kind"), "id"))

    monkeypatch.setattr(pipeline, "id_clashes", clashing)
    monkeypatch.setattr(pipeline, "clash_detail", lambda objects, names, kind, id_: "objects db.s.a and db.s.b")
    example = PROJECT_ROOT / "examples"
    out = tmp_path / "out"
    assert main(["run", "--old", str(example / "old.yaml"), "--new", str(example / "new.yaml"), "--out", str(out),
                 "--strategy", "none"]) == 1
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error == ("dirtiness: two keys have the same id (objects db.s.a and db.s.b): set interning_seed in the "
                     "configuration to another integer and run again")
    assert not (out / "dirty_stmts").exists()
