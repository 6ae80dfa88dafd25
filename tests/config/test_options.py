"""Options: parsing errors name what is wrong; the docs stay generated from one table."""

from __future__ import annotations

import os

import pytest

from kstream.config.options import (
    CLUSTER_OPTIONS,
    PRODUCER_OPTIONS,
    parse_options,
    render_markdown,
    render_properties,
)
from kstream.errors import ConfigError
from kstream.log.storage.log_config import LogConfig

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def test_parse_types_and_aliases():
    values = parse_options(PRODUCER_OPTIONS, {"acks": "-1", "linger.ms": "7", "enable.idempotence": "false"},
                           what="a Producer")
    assert (values["acks"], values["linger.ms"], values["enable.idempotence"]) == ("all", 7, False)
    cluster = parse_options(CLUSTER_OPTIONS, {"log.dirs": "/a, /b"}, what="a cluster")
    assert cluster["log.dirs"] == ("/a", "/b")


@pytest.mark.parametrize(("given", "message"), [
    ({"batch.size": "big"}, r'"batch.size": big: not a valid int'),
    ({"enable.idempotence": "maybe"}, r'"enable.idempotence": maybe: not a valid bool'),
    ({"compression.type": "gzip"}, r"allowed: none, lz4, zstd"),
    ({"batch.size": 0}, r"below the minimum 1"),
])
def test_bad_values(given, message):
    with pytest.raises(ConfigError, match=message):
        parse_options(PRODUCER_OPTIONS, given, what="a Producer")


def test_topic_config_inherits_cluster_defaults():
    config = LogConfig.from_options({"retention.ms": "5"}, {"log.segment.bytes": "4096"})
    assert (config.retention_ms, config.segment_bytes) == (5, 4096)


def test_conf_file_and_readme_match_the_option_tables():
    with open(os.path.join(ROOT, "conf", "kstream.properties")) as f:
        assert f.read() == render_properties(), "regenerate conf/kstream.properties (see docs/CONFIG.md)"
    with open(os.path.join(ROOT, "README.md")) as f:
        assert render_markdown() in f.read(), "regenerate the README options table (see docs/CONFIG.md)"


@pytest.mark.parametrize(("given", "policy"), [
    ("delete", "delete"), ("compact", "compact"), ("compact,delete", "compact,delete"),
    ("delete,compact", "compact,delete"), (" compact , delete ", "compact,delete"),
    (["delete", "compact"], "compact,delete"),
])
def test_cleanup_policy_takes_kafkas_spellings(given, policy):
    config = LogConfig.from_options({"cleanup.policy": given}, {})
    assert config.cleanup_policy == policy
    assert (config.compact, config.delete) == ("compact" in policy, "delete" in policy)


def test_compaction_settings_have_kafkas_defaults():
    config = LogConfig.from_options({}, {})
    assert (config.cleanup_policy, config.min_cleanable_dirty_ratio, config.min_compaction_lag_ms,
            config.max_compaction_lag_ms, config.delete_retention_ms) == (
        "delete", 0.5, 0, 9223372036854775807, 86_400_000)
    config = LogConfig.from_options({"min.cleanable.dirty.ratio": "0.25", "min.compaction.lag.ms": "10",
                                     "max.compaction.lag.ms": "20", "delete.retention.ms": "0"}, {})
    assert (config.min_cleanable_dirty_ratio, config.min_compaction_lag_ms,
            config.max_compaction_lag_ms, config.delete_retention_ms) == (0.25, 10, 20, 0)


@pytest.mark.parametrize(("given", "message"), [
    ({"cleanup.policy": "compacted"}, r'"cleanup.policy": compacted: not a valid comma-separated list; '
                                      r"allowed: compact, delete"),
    ({"cleanup.policy": ""}, r"allowed: compact, delete"),
    ({"cleanup.policy": "compact,,delete"}, r"allowed: compact, delete"),
    ({"min.cleanable.dirty.ratio": "1.01"}, r"'min.cleanable.dirty.ratio': 1.01 is above the maximum 1"),
    ({"min.cleanable.dirty.ratio": "-0.1"}, r"below the minimum 0"),
    ({"min.cleanable.dirty.ratio": "nan"}, r'"min.cleanable.dirty.ratio": nan: not a valid number'),
    ({"min.compaction.lag.ms": "-1"}, r"'min.compaction.lag.ms': -1 is below the minimum 0"),
    ({"max.compaction.lag.ms": "0"}, r"'max.compaction.lag.ms': 0 is below the minimum 1"),
    ({"delete.retention.ms": "-1"}, r"'delete.retention.ms': -1 is below the minimum 0"),
    ({"delete.retention.ms": str(2**63)}, r"above the maximum 9223372036854775807"),
    ({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"},
     r"'min.compaction.lag.ms' \(10\) is above 'max.compaction.lag.ms' \(5\)"),
])
def test_bad_compaction_settings_are_refused_by_name(given, message):
    with pytest.raises(ConfigError, match=message):
        LogConfig.from_options(given, {})
