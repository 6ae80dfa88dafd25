"""`kstream perf produce|consume|end-to-end`, like kafka-*-perf-test."""

from __future__ import annotations

import json

import click

from kstream import perf as runs
from kstream.admin import Admin, NewTopic
from kstream.cli.common import cluster_options, parse_pairs
from kstream.errors import TopicExistsError


@click.group()
def perf() -> None:
    """Measure throughput and latency (records/s, MB/s, latency percentiles)."""


def _ensure_topic(ctx: click.Context, topic: str, partitions: int | None) -> None:
    with Admin(cluster_options(ctx)) as admin:
        try:  # (and the cluster, if the path holds none)
            admin.create_topics([NewTopic(topic, partitions or 1)])[topic].result()
        except TopicExistsError:
            pass


def _report(result: runs.PerfResult, as_json: bool) -> None:
    click.echo(json.dumps(result.as_dict()) if as_json else result.summary())


@perf.command("produce")
@click.option("--topic", required=True)
@click.option("--num-records", type=int, required=True)
@click.option("--record-size", type=int, default=100, show_default=True)
@click.option("--throughput", type=float, default=-1, help="Records/s cap (-1: none).")
@click.option("--acks", type=click.Choice(["all", "1", "0", "-1"]), default="all", show_default=True)
@click.option("--batch-size", type=int, help="Producer batch.size in bytes.")
@click.option("--linger-ms", type=int)
@click.option("--compression", type=click.Choice(["none", "lz4", "zstd"]))
@click.option("--partitions", type=int, help="Create the topic with this many if missing.")
@click.option("--api", type=click.Choice(["record", "batch"]), default="record", show_default=True,
              help="produce() per record, or produce_batch() of Arrow tables.")
@click.option("--producer-config", "configs", multiple=True, metavar="K=V")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.pass_context
def produce_perf(ctx: click.Context, topic: str, num_records: int, record_size: int,
                 throughput: float, acks: str, batch_size: int | None, linger_ms: int | None,
                 compression: str | None, partitions: int | None, api: str,
                 configs: tuple[str, ...], as_json: bool) -> None:
    """Produce NUM_RECORDS records of RECORD_SIZE bytes and report throughput and latency."""
    _ensure_topic(ctx, topic, partitions)
    options = cluster_options(ctx, acks=acks, **{"batch.size": batch_size, "linger.ms": linger_ms,
                                                 "compression.type": compression},
                              **parse_pairs(configs, "--producer-config"))
    progress = None if as_json else click.echo
    _report(runs.produce(topic, num_records, record_size, options, throughput, api,
                         progress=progress), as_json)


@perf.command("consume")
@click.option("--topic", required=True)
@click.option("--messages", type=int, required=True, help="Records to read.")
@click.option("--api", type=click.Choice(["record", "batch"]), default="record", show_default=True)
@click.option("--timeout-ms", type=int, default=10_000, show_default=True)
@click.option("--consumer-config", "configs", multiple=True, metavar="K=V")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def consume_perf(ctx: click.Context, topic: str, messages: int, api: str, timeout_ms: int,
                 configs: tuple[str, ...], as_json: bool) -> None:
    """Read MESSAGES records from the beginning of TOPIC and report throughput."""
    options = cluster_options(ctx, **parse_pairs(configs, "--consumer-config"))
    _report(runs.consume(topic, messages, options, api, timeout_ms / 1000,
                         progress=None if as_json else click.echo), as_json)


@perf.command("end-to-end")
@click.option("--topic", required=True)
@click.option("--num-records", type=int, default=10_000, show_default=True)
@click.option("--record-size", type=int, default=100, show_default=True)
@click.option("--throughput", type=float, default=1000, show_default=True)
@click.option("--acks", type=click.Choice(["all", "1", "0", "-1"]), default="all", show_default=True)
@click.option("--partitions", type=int, help="Create the topic with this many if missing.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def end_to_end_perf(ctx: click.Context, topic: str, num_records: int, record_size: int,
                    throughput: float, acks: str, partitions: int | None, as_json: bool) -> None:
    """Latency from produce() to a consumer in another process seeing the record."""
    _ensure_topic(ctx, topic, partitions)
    result = runs.end_to_end(topic, num_records, record_size, cluster_options(ctx, acks=acks),
                             cluster_options(ctx), throughput,
                             progress=None if as_json else click.echo)
    _report(result, as_json)
