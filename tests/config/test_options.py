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
