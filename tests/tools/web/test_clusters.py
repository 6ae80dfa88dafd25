"""Which clusters a console serves, and `kstream console`'s start-up checks."""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner

from kstream.errors import ClusterNotFoundError, ConfigError
from kstream.tools.cli.main import cli
from kstream.tools.web.clusters import ClusterRef, check_clusters, parse_cluster_option, read_clusters_file


def test_cluster_option_names(tmp_path):
    assert parse_cluster_option(str(tmp_path / "prod")) == ClusterRef("prod", str(tmp_path / "prod"))
    assert parse_cluster_option(f"east={tmp_path}/x/") == ClusterRef("east", str(tmp_path / "x"))
    with pytest.raises(ConfigError, match="cluster name"):
        parse_cluster_option("bad name=/tmp/x")


def test_clusters_file(tmp_path):
    (tmp_path / "c.toml").write_text('[clusters.a]\npath = "data/a"\n[clusters.b]\npath = "/abs/b"\n')
    assert read_clusters_file(str(tmp_path / "c.toml")) == [ClusterRef("a", str(tmp_path / "data" / "a")),
                                                             ClusterRef("b", "/abs/b")]
    (tmp_path / "bad.toml").write_text("[clusters.a]\nnopath = 1\n")
    with pytest.raises(ConfigError, match="needs path"):
        read_clusters_file(str(tmp_path / "bad.toml"))
    (tmp_path / "broken.toml").write_text("[clusters\n")
    with pytest.raises(ConfigError, match="cannot read"):
        read_clusters_file(str(tmp_path / "broken.toml"))


def test_check_refuses_missing_and_duplicate_clusters_and_creates_nothing(tmp_path, cluster_dir):
    missing = tmp_path / "missing"
    with pytest.raises(ClusterNotFoundError, match="creates none"):
        check_clusters([ClusterRef("m", str(missing))])
    assert not missing.exists()
    with pytest.raises(ConfigError, match="two clusters are named"):
        check_clusters([ClusterRef("a", cluster_dir), ClusterRef("a", cluster_dir)])
    with pytest.raises(ConfigError, match="at least one"):
        check_clusters([])


def test_console_command_checks_then_serves(monkeypatch, tmp_path, cluster_dir):
    served = {}

    def fake_run(app, host, port, log_level):
        served.update(app=app, host=host, port=port)

    monkeypatch.setattr("uvicorn.run", fake_run)
    missing = CliRunner().invoke(cli, ["console", "--cluster", str(tmp_path / "nope")])
    assert missing.exit_code != 0 and "no kstream cluster" in str(missing.exception)
    assert not os.path.exists(tmp_path / "nope") and not served
    result = CliRunner().invoke(cli, ["console", "--cluster", f"main={cluster_dir}", "--port", "8181",
                                      "--read-only", "--sample-interval-s", "0"])
    assert result.exit_code == 0, result.output
    assert "http://127.0.0.1:8181/" in result.output and "read-only" in result.output
    assert served["port"] == 8181 and served["app"].read_only
    bad = CliRunner().invoke(cli, ["console", "--cluster", cluster_dir, "--sample-interval-s", "0.01"])
    assert bad.exit_code != 0 and "--sample-interval-s" in str(bad.exception)
