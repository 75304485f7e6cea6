"""Checkouts of one mz-deploy project (written for these tests): ``write(folder, version)`` lays out the files
of a version in mz-deploy's layout (``models/<database>/<schema>/<object>.sql``, schema settings beside).

``v1``: tables in ``storage``; a connection, a source and a table from it in ``sources``; views and a
materialized view in ``core`` (one with an inline unit test, one reading ``mz_catalog``); a sink in ``out``;
a replacement materialized view in the stable schema ``api``.

``v2``, from ``v1``: a column added to ``storage.users`` and a new table ``storage.accounts`` (apply's
business); the connection's broker changed and the secret's value (apply's too); a new secret; a second unit test on ``core.user_events``
(not a change of the view); ``core.top_bids``' query changed; a new materialized view on a new cluster
``hot``, defined in ``clusters/hot.sql`` (the changes a deploy carries).
"""

from __future__ import annotations

from pathlib import Path

UNIT_TEST = """
EXECUTE UNIT TEST {name}
FOR materialize.core.user_events
MOCK materialize.storage.users(id integer, name text) AS (
  SELECT * FROM (VALUES (1, 'ada'))
),
MOCK materialize.storage.events(id integer, user_id integer, kind text) AS (
  SELECT * FROM (VALUES (1, 1, 'a;b'))
),
EXPECTED(name text, n bigint) AS (
  SELECT * FROM (VALUES ('ada', 1))
);
"""

V1 = {
    "storage/users.sql": "CREATE TABLE users (id integer, name text);",
    "storage/events.sql": "CREATE TABLE events (id integer, user_id integer, kind text);",
    "sources/kafka_conn.sql": "CREATE CONNECTION kafka_conn TO KAFKA (BROKER 'broker:9092', SECURITY PROTOCOL = "
                              "'PLAINTEXT');",
    "sources/api_key.sql": "CREATE SECRET api_key AS 'planted-v1-Zq9';",
    "sources/auctions.sql": "CREATE SOURCE auctions IN CLUSTER ingest FROM LOAD GENERATOR AUCTION;",
    "sources/bids.sql": "CREATE TABLE bids FROM SOURCE auctions (REFERENCE bids);",
    "core/user_events.sql": "CREATE MATERIALIZED VIEW user_events IN CLUSTER compute AS\n"
                            "SELECT u.name, count(*) AS n\nFROM storage.users u\n"
                            "JOIN storage.events e ON e.user_id = u.id\nGROUP BY u.name;\n"
                            + UNIT_TEST.format(name="test_counts"),
    "core/catalog_size.sql": "CREATE VIEW catalog_size AS\nSELECT count(*) AS n\nFROM mz_catalog.mz_objects;",
    "core/top_bids.sql": "CREATE VIEW top_bids AS SELECT buyer, amount FROM sources.bids WHERE amount > 100;",
    "out/events_sink.sql": "CREATE SINK events_sink IN CLUSTER sinks FROM core.user_events\n"
                           "INTO KAFKA CONNECTION sources.kafka_conn (TOPIC 'user_events')\n"
                           "FORMAT JSON ENVELOPE DEBEZIUM;",
    "api/summary.sql": "CREATE MATERIALIZED VIEW summary IN CLUSTER compute AS SELECT sum(n) AS n FROM core.user_events;",
}
SCHEMA_FILES = {"api.sql": "SET api = stable;"}

V2 = {
    **V1,
    "storage/users.sql": "CREATE TABLE users (id integer, name text, email text);",
    "storage/accounts.sql": "CREATE TABLE accounts (id integer, owner integer);",
    "sources/kafka_conn.sql": "CREATE CONNECTION kafka_conn TO KAFKA (BROKER 'broker-2:9092', SECURITY PROTOCOL = "
                              "'PLAINTEXT');",
    "core/user_events.sql": V1["core/user_events.sql"] + UNIT_TEST.format(name="test_counts_again"),
    "core/top_bids.sql": "CREATE VIEW top_bids AS SELECT buyer, amount FROM sources.bids WHERE amount > 500;",
    "sources/api_key.sql": "CREATE SECRET api_key AS 'planted-v2-Zq9';",
    "sources/token.sql": "CREATE SECRET token AS 'planted-new-Zq9';",
    "core/hot_bids.sql": "CREATE MATERIALIZED VIEW hot_bids IN CLUSTER hot AS\n"
                         "SELECT buyer, amount FROM sources.bids WHERE amount > 1000;",
}
CLUSTERS = {"v1": {}, "v2": {"hot.sql": "CREATE CLUSTER hot (SIZE = '50cc');\nGRANT USAGE ON CLUSTER hot TO analyst;"}}
PLANTED = "planted-"  # every secret value above starts so: no output of a run may contain it
VERSIONS = {"v1": V1, "v2": V2}


def write(folder: Path, version: str | dict, database: str = "materialize") -> Path:
    """The project's files under ``folder`` (a version's name, or files of your own); returns ``folder``."""
    files = VERSIONS[version] if isinstance(version, str) else version
    clusters = CLUSTERS[version] if isinstance(version, str) else {}
    placed = {**{f"models/{database}/{k}": v for k, v in {**files, **SCHEMA_FILES}.items()},
              **{f"clusters/{k}": v for k, v in clusters.items()}}
    for relative, text in placed.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n", encoding="utf-8")
    return folder
