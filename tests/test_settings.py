"""Settings resolved once, before Spark: a bad value is one line naming its key (no Spark session here)."""

import pytest
from test_snapshot import EXAMPLE_NEW, EXAMPLE_OLD

from dirtiness.config import load_config
from dirtiness.errors import InputError
from dirtiness.settings import RunParams, resolve

PARAMS = RunParams(old=EXAMPLE_OLD, new=EXAMPLE_NEW, out="unused", run_id="r1")


def test_defaults_come_from_the_configuration_file():
    config = load_config()
    settings = resolve(PARAMS, config)
    assert (settings.holding.local_rows, settings.interning_buckets) == (config["local_rows"],
                                                                         config["interning_buckets"])
    assert settings.holding.lazy_checkpoints is config["lazy_checkpoints"] is True
    assert settings.holding.serialized_checkpoints is config["serialized_checkpoints"] is True
    assert (settings.strategy, settings.dialect.name, settings.run_id) == ("blue-green", "materialize", "r1")
    assert settings.small_catalog_objects == config["spark"]["small_catalog_objects"]
    assert settings.small_catalog_conf == {  # as the session takes them: strings, booleans in lower case
        key: str(value).lower() if isinstance(value, bool) else str(value)
        for key, value in config["spark"]["small_catalog_conf"].items()}
    assert settings.compute_conf["spark.sql.adaptive.enabled"] == "false"  # one job a round
    assert settings.compute_conf["spark.sql.autoBroadcastJoinThreshold"] == "-1"
    assert settings.plan_checked.path.endswith("plan_blue_green.dl")


def test_a_bad_small_catalog_threshold_is_named():
    config = load_config()
    config["spark"]["small_catalog_objects"] = -5
    with pytest.raises(InputError, match=r"^spark\.small_catalog_objects: expected a non-negative integer, not -5$"):
        resolve(PARAMS, config)


def test_a_bad_input_format_is_named():
    with pytest.raises(InputError, match=r"^--new-format 'xml': expected one of auto, snapshot, dbt, mz-deploy, moose$"):
        resolve(RunParams(old=EXAMPLE_OLD, new=EXAMPLE_NEW, out="unused", new_format="xml"), load_config())


@pytest.mark.parametrize("key, value, message", [
    ("local_rows", -1, "local_rows: expected a non-negative integer, not -1"),
    ("lazy_checkpoints", "no", "lazy_checkpoints: expected true or false, not 'no'"),
    ("serialized_checkpoints", 1, "serialized_checkpoints: expected true or false, not 1"),
    ("interning_buckets", 0, "interning_buckets: expected a positive integer, not 0"),
    ("delta_backend", "parquet", "delta_backend: expected auto, spark or deltalake, not 'parquet'"),
    ("outputs", {"DirtyStmt": "dirty_stmts"}, "outputs must name the tables dirty_clusters, dirty_schemas"),
])
def test_bad_settings_are_named(key, value, message):
    config = load_config()
    config[key] = value
    with pytest.raises(InputError) as error:
        resolve(PARAMS, config)
    assert message in str(error.value)
