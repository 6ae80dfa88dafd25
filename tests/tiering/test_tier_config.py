"""tier.delta.path / tier.lag.ms / tier.lag.bytes: validated as every topic config is."""

from __future__ import annotations

import pytest

from kstream import NewTopic
from kstream.errors import ConfigError, KStreamError
from kstream.log.storage.log_config import LogConfig


def test_defaults_are_untiered():
    config = LogConfig.from_options({}, {})
    assert not config.tiered and config.tier_table_dir is None
    assert config.tier_lag_ms == 600_000 and config.tier_lag_bytes == 256 << 20


@pytest.mark.parametrize("value,expected", [
    ("/data/lake/t", "/data/lake/t"),
    ("/data/lake/t/", "/data/lake/t"),
    ("file:///data/lake/my%20topic", "/data/lake/my topic"),
    ("file://localhost/data/lake/t", "/data/lake/t"),
])
def test_good_paths(value, expected):
    config = LogConfig.from_options({"tier.delta.path": value}, {})
    assert config.tiered and config.tier_table_dir == expected


@pytest.mark.parametrize("value,words", [
    ("lake/t", "is not absolute"),
    ("s3://bucket/t", "uses the scheme 's3'"),
    ("file://otherhost/t", "names the host 'otherhost'"),
    ("", "is empty"),
    ("/", "is the root directory"),
])
def test_bad_paths_refused(value, words):
    with pytest.raises(ConfigError, match="tier.delta.path") as caught:
        LogConfig.from_options({"tier.delta.path": value}, {})
    assert words in str(caught.value)


@pytest.mark.parametrize("name,value,words", [
    ("tier.lag.ms", "-1", "below the minimum 0"),
    ("tier.lag.ms", str(366 * 24 * 3600 * 1000), "above the maximum"),
    ("tier.lag.bytes", "0", "below the minimum 1"),
    ("tier.lag.bytes", str((1 << 40) + 1), "above the maximum"),
    ("tier.lag.ms", "soon", "not a valid int"),
])
def test_number_bounds(name, value, words):
    with pytest.raises(ConfigError, match=words):
        LogConfig.from_options({name: value}, {})


def test_create_topic_refuses_bad_path_and_compacted(admin, tmp_path):
    futures = admin.create_topics([NewTopic("rel", 1, 1, config={"tier.delta.path": "lake"})])
    with pytest.raises(KStreamError, match="is not absolute"):
        futures["rel"].result()
    lake = str(tmp_path / "lake")
    futures = admin.create_topics([NewTopic("cmp", 1, 1, config={"tier.delta.path": lake,
                                                                 "cleanup.policy": "compact"})])
    with pytest.raises(KStreamError, match="tiering a compacted topic is not built yet"):
        futures["cmp"].result()
    assert "rel" not in admin.cluster.list_topics() and "cmp" not in admin.cluster.list_topics()


def test_alter_refuses_compacting_a_tiered_topic(admin, make_topic, tmp_path):
    make_topic("t", config={"tier.delta.path": str(tmp_path / "lake")})
    with pytest.raises(ConfigError, match="tiering a compacted topic"):
        admin.cluster.alter_topic_config("t", {"cleanup.policy": "compact"})
    assert admin.cluster.log_config(admin.cluster.topic("t")).cleanup_policy == "delete"


def test_admin_describes_and_sets_the_tier_configs(admin, make_topic, tmp_path):
    from kstream.admin import AlterConfigOpType, ConfigEntry, ConfigResource

    make_topic("t")
    entries = admin.describe_configs([ConfigResource("topic", "t")])
    described = next(iter(entries.values())).result()
    assert described["tier.delta.path"].value is None  # unset: not the string "None"
    assert described["tier.lag.ms"].value == "600000"
    lake = str(tmp_path / "lake")
    resource = ConfigResource("topic", "t", incremental_configs=[
        ConfigEntry("tier.delta.path", lake, incremental_operation=AlterConfigOpType.SET)])
    next(iter(admin.incremental_alter_configs([resource]).values())).result()
    described = next(iter(admin.describe_configs([ConfigResource("topic", "t")]).values())).result()
    assert described["tier.delta.path"].value == lake
    assert admin.cluster.log_config(admin.cluster.topic("t")).tier_table_dir == lake
