"""`kstream perf produce|consume|pair|end-to-end|study`, like kafka-*-perf-test."""

from __future__ import annotations

import json
import os
from typing import Any

import click

from kstream.admin import Admin, NewTopic
from kstream.errors import TopicExistsError
from kstream.tools.cli.common import cluster_options, parse_pairs
from kstream.tools.perf import csv_report, payload, plan, runs, study
from kstream.tools.perf.pair import pair
from kstream.tools.perf.parallel import MAX_CLIENTS, run_together, split_partitions
from kstream.tools.perf.result import PerfResult


@click.group()
def perf() -> None:
    """Measure throughput and latency (records/s, MB/s, latency percentiles)."""


def _ensure_topic(ctx: click.Context, topic: str, partitions: int | None) -> None:
    """Create ``topic`` if missing (and the cluster, if the path holds none)."""
    with Admin(cluster_options(ctx)) as admin:
        try:
            admin.create_topics([NewTopic(topic, partitions or 1)])[topic].result()
        except TopicExistsError:
            pass


def _report(result: PerfResult, as_json: bool, csv_path: str | None, scenario: str) -> None:
    click.echo(json.dumps(result.as_dict()) if as_json else result.summary())
    if csv_path:
        csv_report.append(csv_path, [csv_report.row(result, scenario=scenario)])


_clients = click.IntRange(1, MAX_CLIENTS)
_csv = click.option("--csv", "csv_path", type=click.Path(dir_okay=False),
                    help="Append the result as a CSV row to this file (header when new).")
_json = click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")


@perf.command("produce")
@click.option("--topic", required=True)
@click.option("--num-records", type=click.IntRange(1), required=True, help="Records per producer.")
@click.option("--record-size", type=click.IntRange(0, payload.MAX_RECORD_SIZE), default=100, show_default=True)
@click.option("--producers", type=_clients, default=1, show_default=True,
              help="Producer processes started together; their results are summed.")
@click.option("--throughput", type=float, default=-1, help="Records/s cap per producer (-1: none).")
@click.option("--acks", type=click.Choice(["all", "1", "0", "-1"]), default="all", show_default=True)
@click.option("--batch-size", type=int, help="Producer batch.size in bytes.")
@click.option("--linger-ms", type=int)
@click.option("--compression", type=click.Choice(["none", "lz4", "zstd"]))
@click.option("--partitions", type=int, help="Create the topic with this many if missing.")
@click.option("--api", type=click.Choice(["record", "batch"]), default="record", show_default=True,
              help="produce() per record, or produce_batch() of Arrow tables.")
@click.option("--payload", "payload_kind", type=click.Choice(payload.KINDS), default="random", show_default=True,
              help="random: one value reused (as Kafka's tool); varied: distinct random; text: JSON-like.")
@click.option("--producer-config", "configs", multiple=True, metavar="K=V")
@_csv
@_json
@click.pass_context
def produce_perf(ctx: click.Context, topic: str, num_records: int, record_size: int, producers: int,
                 throughput: float, acks: str, batch_size: int | None, linger_ms: int | None,
                 compression: str | None, partitions: int | None, api: str, payload_kind: str,
                 configs: tuple[str, ...], csv_path: str | None, as_json: bool) -> None:
    """Produce NUM_RECORDS records of RECORD_SIZE bytes (per producer) and report throughput and latency."""
    _ensure_topic(ctx, topic, partitions)
    options = cluster_options(ctx, acks=acks, **{"batch.size": batch_size, "linger.ms": linger_ms,
                                                 "compression.type": compression},
                              **parse_pairs(configs, "--producer-config"))
    progress = None if as_json or producers > 1 else click.echo
    job: dict[str, Any] = {"topic": topic, "num_records": num_records, "record_size": record_size,
                           "producer_config": options, "throughput": throughput, "api": api,
                           "payload_kind": payload_kind}
    result = run_together([(runs.produce, dict(job, progress=progress)) if producers == 1 else (runs.produce, job)
                           for _ in range(producers)])
    _report(result, as_json, csv_path, "produce")


@perf.command("consume")
@click.option("--topic", required=True)
@click.option("--messages", type=click.IntRange(1),
              help="Records to read (one consumer); default: all there are when the run starts.")
@click.option("--consumers", type=_clients, default=1, show_default=True,
              help="Consumer processes, each reading its share of the partitions to their end; summed.")
@click.option("--api", type=click.Choice(["record", "batch"]), default="record", show_default=True)
@click.option("--timeout-ms", type=int, default=10_000, show_default=True)
@click.option("--consumer-config", "configs", multiple=True, metavar="K=V")
@_csv
@_json
@click.pass_context
def consume_perf(ctx: click.Context, topic: str, messages: int | None, consumers: int, api: str, timeout_ms: int,
                 configs: tuple[str, ...], csv_path: str | None, as_json: bool) -> None:
    """Read TOPIC from the beginning and report throughput."""
    if consumers > 1 and messages is not None:
        raise click.UsageError("--messages is for one consumer; several read their partitions to the end")
    options = cluster_options(ctx, **parse_pairs(configs, "--consumer-config"))
    with Admin(cluster_options(ctx)) as admin:
        partitions = len(admin.list_topics(topic).topics[topic].partitions)
    job: dict[str, Any] = {"topic": topic, "num_records": messages, "consumer_config": options, "api": api,
                           "timeout_s": timeout_ms / 1000}
    if consumers == 1:
        jobs = [(runs.consume, dict(job, progress=None if as_json else click.echo))]
    else:
        jobs = [(runs.consume, dict(job, partitions=share)) for share in split_partitions(partitions, consumers)]
    _report(run_together(jobs), as_json, csv_path, "consume")


@perf.command("pair")
@click.option("--topic", required=True)
@click.option("--num-records", type=click.IntRange(1), required=True)
@click.option("--record-size", type=click.IntRange(0, payload.MAX_RECORD_SIZE), default=100, show_default=True)
@click.option("--acks", type=click.Choice(["all", "1", "0", "-1"]), default="1", show_default=True)
@click.option("--partitions", type=int, help="Create the topic with this many if missing.")
@click.option("--api", type=click.Choice(["record", "batch"]), default="record", show_default=True,
              help="produce()/poll() per record, or produce_batch()/poll_batch().")
@click.option("--producer-config", "producer_configs", multiple=True, metavar="K=V")
@click.option("--consumer-config", "consumer_configs", multiple=True, metavar="K=V")
@_csv
@_json
@click.pass_context
def pair_perf(ctx: click.Context, topic: str, num_records: int, record_size: int, acks: str,
              partitions: int | None, api: str, producer_configs: tuple[str, ...],
              consumer_configs: tuple[str, ...], csv_path: str | None, as_json: bool) -> None:
    """One producer and one consumer process at once: records/s consumed, and latency."""
    _ensure_topic(ctx, topic, partitions)
    result = pair(topic, num_records, record_size,
                  cluster_options(ctx, acks=acks, **parse_pairs(producer_configs, "--producer-config")),
                  cluster_options(ctx, **parse_pairs(consumer_configs, "--consumer-config")), api)
    _report(result, as_json, csv_path, "pair")


@perf.command("end-to-end")
@click.option("--topic", required=True)
@click.option("--num-records", type=int, default=10_000, show_default=True)
@click.option("--record-size", type=int, default=100, show_default=True)
@click.option("--throughput", type=float, default=1000, show_default=True)
@click.option("--acks", type=click.Choice(["all", "1", "0", "-1"]), default="all", show_default=True)
@click.option("--partitions", type=int, help="Create the topic with this many if missing.")
@_csv
@_json
@click.pass_context
def end_to_end_perf(ctx: click.Context, topic: str, num_records: int, record_size: int,
                    throughput: float, acks: str, partitions: int | None, csv_path: str | None,
                    as_json: bool) -> None:
    """Latency from produce() to a consumer in another process seeing the record."""
    _ensure_topic(ctx, topic, partitions)
    result = runs.end_to_end(topic, num_records, record_size, cluster_options(ctx, acks=acks),
                             cluster_options(ctx), throughput,
                             progress=None if as_json else click.echo)
    _report(result, as_json, csv_path, "end-to-end")


@perf.command("study")
@click.argument("plan_path", metavar="PLAN", type=click.Path(dir_okay=False))
@click.option("--quick", is_flag=True, help="The plan's [quick] settings: the whole study in minutes.")
@click.option("--out", "out_dir", default="study-results", show_default=True,
              help="Where study.json, study.csv, results.md and the PNGs go.")
@click.option("--work-dir", help="Where the study cluster lives while it runs (default: OUT/work).")
@click.option("--only", multiple=True, metavar="SCENARIO", help="Run only these scenarios (repeat).")
@click.option("--keep", is_flag=True, help="Keep the study cluster afterwards.")
def study_perf(plan_path: str, quick: bool, out_dir: str, work_dir: str | None, only: tuple[str, ...],
               keep: bool) -> None:
    """Run every scenario of PLAN (e.g. conf/study.toml) on kstream, Apache Kafka (the peer: confluent-kafka and
    Kafka's perf tools, at Kafka's default durability and at flush.messages=1), Tansu and the ceiling.

    Without Java or the Kafka jars (`make kafka`) the Kafka lines are skipped with one line."""
    import sys

    chosen = plan.load(plan_path, quick)
    if only:
        chosen = chosen.only(list(only))
    command = "kstream perf study " + " ".join(sys.argv[3:])
    study.run(chosen, out_dir, work_dir or os.path.join(out_dir, "work"), command, click.echo, keep)
