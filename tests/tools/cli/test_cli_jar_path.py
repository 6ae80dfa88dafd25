"""`kstream jar-path`: the JVM reader's jar for spark-submit --jars, or one line why there is none."""

from __future__ import annotations

import os

from click.testing import CliRunner

from kstream import jars
from kstream.tools.cli.main import cli


def test_prints_the_jar_or_says_why_not(monkeypatch, tmp_path):
    fake = tmp_path / jars.JAR_NAME
    fake.write_bytes(b"PK")
    monkeypatch.setattr(jars.os.path, "dirname", lambda _: str(tmp_path))
    result = CliRunner().invoke(cli, ["jar-path"])
    assert result.exit_code == 0 and result.output.strip() == os.path.abspath(fake)
    fake.unlink()
    result = CliRunner().invoke(cli, ["jar-path"])
    assert result.exit_code == 1 and "no kstream JVM jar was built" in result.output
