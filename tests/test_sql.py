"""SQL-aware statements without Spark: the extended Materialize dialect, qualification, staging rewrites."""

import pytest
import sqlglot

from dirtiness.sql.materialize import MaterializeDeploy
from dirtiness.sql.statement import SqlError, parse, render, render_row

DB = "materialize"
MV = ("CREATE MATERIALIZED VIEW flippers IN CLUSTER serving AS WITH recent AS (SELECT * FROM flip_activities) "
      "SELECT f.flipper_id, count(*) AS flips FROM recent f JOIN internal.winning_bids w ON w.buyer = f.flipper_id, "
      "generate_series(1, 2) AS g GROUP BY f.flipper_id")
FLIPPERS = (DB, "public", "flippers")


def key(text):
    return tuple(text.split("."))


OPAQUE = [  # sqlglot's own materialize dialect keeps these as a Command
    "CREATE MATERIALIZED VIEW m IN CLUSTER c AS SELECT 1 AS a",
    "CREATE REPLACEMENT MATERIALIZED VIEW s.m2 FOR s.m IN CLUSTER c AS SELECT 1 AS a",
    "CREATE MATERIALIZED VIEW m (a, b) IN CLUSTER c WITH (RETAIN HISTORY FOR '1h') AS SELECT 1, 2",
    "CREATE DEFAULT INDEX IN CLUSTER c ON v",
    "CREATE INDEX i IN CLUSTER c ON s.v (a, b + 1)",
    "CREATE SINK s IN CLUSTER k FROM m INTO KAFKA CONNECTION kc (TOPIC 't') FORMAT JSON ENVELOPE DEBEZIUM",
    "CREATE CONNECTION kc TO KAFKA (BROKER 'b:9092', SASL PASSWORD = SECRET pw)",
]
MISREAD = [  # ... and misreads these as something else
    "CREATE SOURCE src IN CLUSTER ingest FROM KAFKA CONNECTION kc (TOPIC 't')",
    "CREATE TABLE t FROM SOURCE src (REFERENCE public.t)",
]


@pytest.mark.parametrize("sql", OPAQUE + MISREAD)
def test_the_dialect_parses_what_sqlglot_keeps_opaque(sql):
    if sql in OPAQUE:
        assert isinstance(sqlglot.parse_one(sql, read="materialize"), sqlglot.exp.Command)
    tree = sqlglot.parse_one(sql, read=MaterializeDeploy)
    assert not isinstance(tree, sqlglot.exp.Command)
    again = tree.sql(MaterializeDeploy)
    assert sqlglot.parse_one(again, read=MaterializeDeploy) == tree  # generated text parses to the same tree


def test_references_are_qualified_and_ctes_and_functions_are_not_references():
    statement = parse(MV, "materialize", FLIPPERS, "materialized-view")
    assert statement.references == ((DB, "internal", "winning_bids"), (DB, "public", "flip_activities"))
    assert statement.cluster == "serving"
    text = render(statement)
    assert text.startswith('CREATE MATERIALIZED VIEW "materialize"."public"."flippers" IN CLUSTER "serving" AS')
    assert 'FROM "materialize"."public"."flip_activities"' in text and '"recent" AS "f"' in text
    assert '"materialize"."internal"."winning_bids" AS "w"' in text


def test_identifiers_fold_like_the_database():
    statement = parse('CREATE VIEW "Mixed" AS SELECT A FROM Upper JOIN "Quoted" ON true', "materialize",
                      (DB, "public", "Mixed"), "view")
    assert statement.references == ((DB, "public", "Quoted"), (DB, "public", "upper"))
    with pytest.raises(SqlError, match="creates materialize.public.mixed, not materialize.public.Mixed"):
        parse("CREATE VIEW Mixed AS SELECT 1", "materialize", (DB, "public", "Mixed"), "view")


def test_staging_rewrites_the_name_staged_references_and_the_cluster():
    statement = parse(MV, "materialize", FLIPPERS, "materialized-view")
    text = render(statement, name=(DB, "public_dpl", "flippers"),
                  references={(DB, "public", "flip_activities"): (DB, "public_dpl", "flip_activities")},
                  cluster="serving_dpl")
    assert text.startswith('CREATE MATERIALIZED VIEW "materialize"."public_dpl"."flippers" IN CLUSTER "serving_dpl"')
    assert '"materialize"."public_dpl"."flip_activities"' in text
    assert '"materialize"."internal"."winning_bids"' in text  # not redeployed: production
    assert "public\".\"flip_activities" not in text


def test_replacement_is_created_for_production_and_keeps_production_references():
    statement = parse("CREATE MATERIALIZED VIEW top IN CLUSTER serving AS SELECT * FROM public.flippers",
                      "materialize", (DB, "api", "top"), "materialized-view")
    text = render(statement, name=(DB, "api_dpl", "top"), replacement_for=(DB, "api", "top"))
    assert text == ('CREATE REPLACEMENT MATERIALIZED VIEW "materialize"."api_dpl"."top" FOR "materialize"."api"."top" '
                    'IN CLUSTER "serving" AS SELECT * FROM "materialize"."public"."flippers"')
    view = parse("CREATE VIEW v AS SELECT 1 AS x", "postgres", ("d", "s", "v"), "view")
    with pytest.raises(SqlError, match="only a Materialize materialized view has replacements"):
        render(view, replacement_for=("d", "s", "v"))


def test_the_cluster_is_added_where_the_statement_names_none():
    mv = parse("CREATE MATERIALIZED VIEW m AS SELECT 1 AS x", "materialize", ("d", "s", "m"), "materialized-view")
    assert render(mv, cluster="c") == 'CREATE MATERIALIZED VIEW "d"."s"."m" IN CLUSTER "c" AS SELECT 1 AS "x"'
    view = parse("CREATE VIEW v AS SELECT 1 AS x", "materialize", ("d", "s", "v"), "view")
    assert render(view, cluster="c") == 'CREATE VIEW "d"."s"."v" AS SELECT 1 AS "x"'  # a view runs nowhere


def test_sinks_read_their_upstream_and_connections():
    sql = ("CREATE SINK flippers_sink IN CLUSTER sinks FROM public.flippers INTO KAFKA CONNECTION auction.kafka_conn "
           "(TOPIC 'connection kafka_conn') FORMAT AVRO USING CONFLUENT SCHEMA REGISTRY CONNECTION csr ENVELOPE DEBEZIUM")
    statement = parse(sql, "materialize", (DB, "sinks", "flippers_sink"), "sink")
    assert statement.references == ((DB, "auction", "kafka_conn"), (DB, "public", "flippers"), (DB, "sinks", "csr"))
    assert render(statement) == (
        'CREATE SINK "materialize"."sinks"."flippers_sink" IN CLUSTER "sinks" FROM "materialize"."public"."flippers" '
        'INTO KAFKA CONNECTION "materialize"."auction"."kafka_conn" (TOPIC \'connection kafka_conn\') FORMAT AVRO '
        'USING CONFLUENT SCHEMA REGISTRY CONNECTION "materialize"."sinks"."csr" ENVELOPE DEBEZIUM')


def test_indexes_parse_with_their_cluster():
    tree = sqlglot.parse_one("CREATE INDEX i IN CLUSTER quickstart ON public.flippers (flipper_id)",
                             read=MaterializeDeploy)
    assert tree.args["cluster"].name == "quickstart" and tree.args["table"].db == "public"
    assert tree.sql(MaterializeDeploy, identify=True) == \
        'CREATE INDEX "i" IN CLUSTER "quickstart" ON "public"."flippers" ("flipper_id")'


@pytest.mark.parametrize("sql, kind, message", [
    ("CREATE VIEW v AS SELECT FROM WHERE", "view", "line 1, column 30: Expected table name but got 'WHERE'"),
    ("CREATE VIEW v AS SELECT 'open", "view", "line 1, column 29: cannot tokenize near"),
    ("CREATE VIEW w AS SELECT 1", "view", "creates d.s.w, not d.s.v"),
    ("CREATE VIEW v AS SELECT 1", "materialized-view", "creates a view, but the object is a materialized-view"),
    ("CREATE VIEW v AS SELECT 1; CREATE VIEW x AS SELECT 2", "view", "expected one CREATE statement, found 2"),
    ("SELECT 1", "view", "the materialize dialect cannot parse this statement"),
    ("ALTER TABLE v ADD COLUMN y int", "view", "the materialize dialect cannot parse this statement"),
])
def test_unusable_statements_say_where_and_why(sql, kind, message):
    with pytest.raises(SqlError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse(sql, "materialize", ("d", "s", "v"), kind)


def test_postgres_materialized_views_and_tables():
    mv = parse("CREATE MATERIALIZED VIEW core.clean AS SELECT * FROM raw.events WHERE ok AND v > 0", "postgres",
               ("db", "core", "clean"), "materialized-view")
    assert mv.references == (("db", "raw", "events"),) and mv.cluster is None
    assert render(mv, name=("db", "core_dpl", "clean")) == \
        'CREATE MATERIALIZED VIEW "db"."core_dpl"."clean" AS SELECT * FROM "db"."raw"."events" WHERE "ok" AND "v" > 0'
    table = parse("CREATE TABLE raw.events (id int PRIMARY KEY, ok boolean, parent int REFERENCES raw.parents (id))",
                  "postgres", ("db", "raw", "events"), "table")
    assert table.references == (("db", "raw", "parents"),)


def test_hostile_names_stay_one_identifier():
    name = 'x"; DROP TABLE t; --'
    statement = parse('CREATE VIEW "x""; DROP TABLE t; --" AS SELECT 1 AS a', "postgres", ("d", "s", name), "view")
    assert render(statement, name=("d", "s_dpl", name)) == 'CREATE VIEW "d"."s_dpl"."x""; DROP TABLE t; --" AS SELECT 1 AS "a"'


def test_render_row_carries_verbatim_only_what_needs_no_change():
    source = "CREATE SOURCE src FROM WEBHOOK BODY FORMAT TEXT CHECK (body = 'unterminated)"
    args = ("source", ("d", "s", "src"))
    assert render_row(source, *args, "s", None, None, None, False, "materialize", ("source",)) == (source, True, None)
    statement, verbatim, error = render_row(source, *args, "s_dpl", None, None, None, False, "materialize",
                                            ("source",))
    assert statement is None and not verbatim and "cannot stage or rewrite a statement carried verbatim" in error
    assert "d.s.src: line 1, column 76: cannot tokenize" in render_row(source, *args, "s", None, None, None, False, "materialize", ())[2]
    assert render_row(None, *args, "s", None, None, None, False, "materialize", ()) == (None, False, None)
