"""Settings resolved once, before Spark: a bad value is one line naming its key (no Spark session here)."""

import re

import pytest
from catalogs import EXAMPLE_NEW, EXAMPLE_OLD

from dirtiness.config import load_config
from dirtiness.errors import InputError
from dirtiness.session import session_settings
from dirtiness.settings import RunParams, resolve

PARAMS = RunParams(old=EXAMPLE_OLD, new=EXAMPLE_NEW, out="unused", run_id="r1")


def test_defaults_come_from_the_configuration_file():
    config = load_config()
    settings = resolve(PARAMS, config)
    assert (settings.holding.local_rows, settings.interning_seed) == (config["local_rows"],
                                                                      config["interning_seed"])
    assert settings.holding.lazy_checkpoints is config["lazy_checkpoints"] is True
    assert settings.holding.storage == config["checkpoint_storage"] == "disk"
    assert (settings.strategy, settings.dialect.name, settings.run_id) == ("blue-green", "materialize", "r1")
    assert settings.small_catalog_objects == config["spark"]["small_catalog_objects"]
    assert settings.small_catalog_conf == {  # as the session takes them: strings, booleans in lower case
        key: str(value).lower() if isinstance(value, bool) else str(value)
        for key, value in config["spark"]["small_catalog_conf"].items()}
    local = {**settings.small_catalog_conf, **settings.local_catalog_conf}
    assert settings.small_catalog_settings(settings.holding.local_rows) == local  # held as rows: interpreted
    assert settings.small_catalog_settings(settings.holding.local_rows + 1) == settings.small_catalog_conf
    assert settings.small_catalog_conf == {  # one partition, and a query over held frames alone kept in it
        "spark.sql.shuffle.partitions": "1", "spark.sql.codegen.wholeStage": "false",
        "spark.sql.maxSinglePartitionBytes": "9223372036854775807b", "spark.sql.defaultSizeInBytes": "1",
        "spark.sql.optimizer.excludedRules": "org.apache.spark.sql.catalyst.optimizer.PushDownLeftSemiAntiJoin"}
    assert settings.local_catalog_conf == {"spark.sql.codegen.factoryMode": "NO_CODEGEN"}  # interpreted
    assert settings.computed_with(settings.holding.local_rows) == {**settings.compute_conf, **local}
    assert settings.computed_with(settings.small_catalog_objects + 1) == settings.compute_conf
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
    ("checkpoint_storage", "memory", "checkpoint_storage: expected one of disk, memory_and_disk, default, not 'memory'"),
    ("interning_seed", -1, "interning_seed: expected a non-negative integer, not -1"),
    ("delta_backend", "parquet", "delta_backend: expected auto, spark or deltalake, not 'parquet'"),
    ("outputs", {"DirtyStmt": "dirty_stmts"}, "outputs must name the tables dirty_clusters, dirty_schemas"),
])
def test_bad_settings_are_named(key, value, message):
    config = load_config()
    config[key] = value
    with pytest.raises(InputError) as error:
        resolve(PARAMS, config)
    assert message in str(error.value)


class _Conf:
    def __init__(self, values: dict) -> None:
        self.values = dict(values)

    def get(self, key, default=None):
        return self.values.get(key, default)

    def set(self, key, value):
        self.values[key] = value

    def unset(self, key):
        self.values.pop(key, None)


class _Session:
    def __init__(self, values: dict) -> None:
        self.conf = _Conf(values)


def test_overlapping_settings_blocks_give_the_session_its_own_back():
    """Two runs sharing a session from two threads: the first to leave must not restore under the other."""
    session = _Session({"spark.sql.shuffle.partitions": "2"})
    first, second = (session_settings(session, {"spark.sql.shuffle.partitions": "1", "x": "on"}) for _ in range(2))
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert session.conf.values == {"spark.sql.shuffle.partitions": "1", "x": "on"}  # the second still computes
    second.__exit__(None, None, None)
    assert session.conf.values == {"spark.sql.shuffle.partitions": "2"}  # its own value back, x unset again
    with session_settings(session, {"spark.sql.shuffle.partitions": "4"}):
        with session_settings(session, {"x": "on"}):
            assert session.conf.values == {"spark.sql.shuffle.partitions": "4", "x": "on"}
        assert session.conf.values == {"spark.sql.shuffle.partitions": "4"}
    assert session.conf.values == {"spark.sql.shuffle.partitions": "2"}


def test_an_overlay_setting_the_defaults_lack_is_named(tmp_path):
    """A misspelt or retired key (here the old ``serialized_checkpoints``) would otherwise change nothing."""
    overlay = tmp_path / "mine.yaml"
    overlay.write_text("serialized_checkpoints: false\n")
    with pytest.raises(InputError, match=rf"^{re.escape(str(overlay))}: unknown setting serialized_checkpoints "
                                         r"\(the settings are those of job\.yaml\)$"):
        load_config(str(overlay))
    overlay.write_text("spark:\n  small_catalog_object: 5\n")
    with pytest.raises(InputError, match=r"unknown setting spark\.small_catalog_object \("):
        load_config(str(overlay))


def test_an_overlay_may_name_its_own_spark_settings_tables_and_dialects(tmp_path):
    overlay = tmp_path / "mine.yaml"
    overlay.write_text("checkpoint_storage: memory_and_disk\nspark:\n  conf:\n    spark.executor.cores: 3\n"
                       "plan:\n  dialects:\n    mine:\n      parser: postgres\n")
    config = load_config(str(overlay))
    assert config["checkpoint_storage"] == "memory_and_disk"
    assert config["spark"]["conf"]["spark.executor.cores"] == 3
    assert config["plan"]["dialects"]["mine"] == {"parser": "postgres"}
    assert resolve(PARAMS, config).holding.storage == "memory_and_disk"


@pytest.mark.parametrize("path, value, same", [
    (("local_rows",), 5, True),
    (("lazy_checkpoints",), False, True),
    (("checkpoint_storage",), "memory_and_disk", True),
    (("delta_backend",), "deltalake", True),
    (("spark", "conf", "spark.sql.shuffle.partitions"), 16, True),
    (("sql", "reuse_from_objects"), 0, True),
    (("apply", "parallel"), 1, True),
    (("report", "max_rows"), 10, True),
    (("interning_seed",), 3, False),                      # ids, and so what a later run could take by id
    (("sql", "dependency_mismatch"), "warn", False),
    (("plan", "deploy_suffix"), "stg{hash8}", False),
    (("external_databases",), ["ext"], False),
])
def test_the_configuration_fingerprint_covers_what_changes_a_result_only(path, value, same):
    """Tuning what a run costs keeps the run the next one starts from (and ``--if-changed`` skipping)."""
    config = load_config()
    before = resolve(PARAMS, config).fingerprints["config_fingerprint"]
    place = config
    for key in path[:-1]:
        place = place[key]
    assert place[path[-1]] != value
    place[path[-1]] = value
    assert (resolve(PARAMS, config).fingerprints["config_fingerprint"] == before) is same
