"""`kstream topics describe` and `kstream get-offsets` after a power cut took a partition's
published HW (issue 27): they print the figures of the engine's bounds()."""

from __future__ import annotations

from click.testing import CliRunner

from kstream.tools.cli.main import cli


def run(cluster, *args):
    result = CliRunner().invoke(cli, ["--cluster", cluster, *args], catch_exceptions=False,
                                env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    return result.output


def test_topics_describe_prints_the_engine_s_bounds(lost_hw):
    path, expected = lost_hw
    lines = run(path, "topics", "describe", "t").splitlines()
    header = next([c.strip() for c in line.split("┃")[1:-1]] for line in lines if line.startswith("┃ Partition"))
    partition = next([c.strip() for c in line.split("│")[1:-1]] for line in lines if line.startswith("│ 0 "))
    got = dict(zip(header, partition, strict=False))
    assert (got["LogStart"], got["LEO"], got["HW"], got["LSO"]) == tuple(str(n) for n in (
        expected.log_start_offset, expected.log_end_offset, expected.high_watermark, expected.last_stable_offset))


def test_get_offsets_prints_the_engine_s_bounds(lost_hw):
    path, expected = lost_hw
    assert run(path, "get-offsets", "--topic", "t", "--time", "latest").split() == [f"t:0:{expected.high_watermark}"]
    assert run(path, "get-offsets", "--topic", "t", "--time", "earliest").split() == [
        f"t:0:{expected.log_start_offset}"]
