"""`kstream mirror`: copy topics between Apache Kafka and kstream (MirrorMaker 2's job, issue 23).

One direction per run: ``--from kafka:HOST:PORT --to cluster:PATH`` copies Kafka topics
into kstream exactly once; ``--from cluster:PATH --to kafka:HOST:PORT`` copies kstream
topics into Kafka at least once, or exactly once with ``--exactly-once`` (Kafka
transactions, kstream.mirror.kafka_transactions; docs/MIRROR.md). Topics by ``--topics A,B`` or
``--pattern REGEX``. Without ``--until-end`` it runs until SIGINT or SIGTERM, which
finish the chunk in flight (commit it) and exit 0; with it, it copies up to each source
partition's end at start (its last stable offset) and exits 0. A progress line (records,
rate, lag per partition) goes to stderr every ``--progress-interval`` seconds, and the same
figures as a heartbeat into the kstream cluster's ``__kstream_mirror_status`` topic, which
``kstream console`` shows (kstream.mirror.status);
``--metrics-port`` serves the same figures to Prometheus (kstream.mirror.metrics).

``kstream mirror offsets --group G`` translates G's committed offsets across a mirror
(kstream.mirror.offset_translation): Spark ``startingOffsets`` JSON, the
``kafka-consumer-groups --reset-offsets --from-file`` CSV, or a table; ``--apply`` commits
them as G's offsets on the target side.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import click
from prometheus_client import start_http_server

from kstream.mirror import MirrorOptions, metrics, parse_endpoint
from kstream.mirror.into_kafka import IntoKafka
from kstream.mirror.into_kstream import IntoKstream
from kstream.mirror.offset_translation import OffsetsRequest, OffsetTranslator, format_table
from kstream.mirror.options import (
    DEFAULT_CHUNK_BYTES,
    DEFAULT_CHUNK_RECORDS,
    MAX_CHUNK_BYTES,
    MAX_CHUNK_RECORDS,
    MAX_SECONDS,
    MIN_CHUNK_BYTES,
    MIN_SECONDS,
)
from kstream.mirror.progress import Progress

SECONDS = click.FloatRange(MIN_SECONDS, MAX_SECONDS)  # --timeout, --progress-interval (MirrorOptions checks them too)


@contextmanager
def _stop_on_signals() -> Iterator[threading.Event]:
    """An event set by SIGINT or SIGTERM (the loop finishes its chunk, then returns)."""
    stop = threading.Event()
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    def handler(signum: int, _frame: object) -> None:
        print(f"mirror: {signal.Signals(signum).name}: finishing the chunk in flight, then stopping",
              file=sys.stderr, flush=True)
        stop.set()

    for sig in previous:
        signal.signal(sig, handler)
    try:
        yield stop
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


@contextmanager
def _metrics_server(runner: IntoKstream | IntoKafka, options: MirrorOptions, host: str, port: int | None
                    ) -> Iterator[None]:
    """The run's Prometheus figures served over HTTP while it runs (nothing without a port)."""
    if port is None:
        yield
        return
    progress: Progress = runner.progress
    direction = "into-kstream" if options.source.is_kafka else "into-kafka"
    try:
        server, thread = start_http_server(port, addr=host, registry=metrics.registry(progress, direction))
    except OSError as err:
        raise click.UsageError(f"--metrics-port {port}: cannot listen on {host}:{port} ({err.strerror}); "
                               f"choose a free port") from err
    print(f"mirror {options.name}: metrics on http://{host}:{server.server_port}/", file=sys.stderr, flush=True)
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@click.group("mirror", invoke_without_command=True)
@click.option("--from", "source", metavar="kafka:HOST:PORT|cluster:PATH",
              help="Where to copy from: Apache Kafka's bootstrap servers or a kstream cluster path "
                   "(default: the --cluster path, when --to is Kafka).")
@click.option("--to", "target", metavar="kafka:HOST:PORT|cluster:PATH",
              help="Where to copy to, the other kind (default: the --cluster path, when --from is Kafka; "
                   "a missing kstream cluster is created).")
@click.option("--topics", metavar="NAME[,NAME]", help="The topics to copy, by name.")
@click.option("--pattern", metavar="REGEX", help="The topics to copy: those whose whole name matches (no '__' ones).")
@click.option("--until-end", is_flag=True,
              help="Copy up to each source partition's end (last stable offset) at start, then exit 0.")
@click.option("--name", default="mirror", show_default=True,
              help="The mirror's name: its state is the kstream group (and transactional.id) __mirror.NAME, its "
                   "offset syncs the kstream topic __mirror.NAME.offset-syncs (1-188 characters of ASCII letters, "
                   "digits, '.', '_', '-').")
@click.option("--chunk-records", type=click.IntRange(1, MAX_CHUNK_RECORDS), default=DEFAULT_CHUNK_RECORDS,
              show_default=True,
              help="Records per kstream transaction, at most (into kstream; a transaction commits while the next "
                   "records are read) or per Kafka flush and commit (into Kafka; "
                   "with --exactly-once per Kafka transaction).")
@click.option("--chunk-bytes", type=click.IntRange(MIN_CHUNK_BYTES, MAX_CHUNK_BYTES), default=DEFAULT_CHUNK_BYTES,
              show_default=True,
              help="Into kstream: bytes of records per kstream transaction, at most (a chunk closes at the record "
                   "that reaches it; two chunks are in memory at once).")
@click.option("--exactly-once", is_flag=True,
              help="Into Kafka: each chunk is one Kafka transaction carrying the records and the mirror's positions "
                   "(transactional.id __mirror.NAME; MM2's exactly.once.support=enabled), so a killed and restarted "
                   "mirror writes nothing twice; read the target read_committed. Kafka -> kstream is always "
                   "exactly once.")
@click.option("--timeout", "timeout_s", type=SECONDS, default=10.0, show_default=True,
              help="Seconds a Kafka broker may take to answer before the mirror gives up.")
@click.option("--progress-interval", "progress_s", type=SECONDS, default=5.0, show_default=True,
              help="Seconds between progress lines on stderr, refreshes of the lag the metrics show, and heartbeats "
                   "into the kstream cluster's __kstream_mirror_status topic (the console's Mirrors page).")
@click.option("--metrics-port", type=click.IntRange(0, 65535), default=None,
              help="Serve the run's Prometheus figures (records, rate, position and lag per partition) "
                   "on http://HOST:PORT/ (0: a free port, printed on stderr; docs/MIRROR.md).")
@click.option("--metrics-host", default="127.0.0.1", show_default=True, help="Address the metrics listen on.")
@click.pass_context
def mirror(ctx: click.Context, source: str | None, target: str | None, topics: str | None, pattern: str | None,
           until_end: bool, name: str, chunk_records: int, chunk_bytes: int, exactly_once: bool, timeout_s: float,
           progress_s: float,
           metrics_port: int | None, metrics_host: str) -> None:
    """Copy topics between Apache Kafka and kstream, as MirrorMaker 2 does.

    Kafka -> kstream is exactly once (each kstream transaction commits the records and the
    Kafka positions they end at); kstream -> Kafka is at least once (positions committed
    after the Kafka producer confirmed the records), or exactly once with --exactly-once
    (each chunk one Kafka transaction with the records and the positions; a second mirror
    of the same --name fences the first). Partitions, keys, values, headers and timestamps
    are kept; a restarted mirror goes on from its committed positions.

    One of --from and --to may be left out: that side is the kstream cluster --cluster names.

    \b
    kstream mirror --from kafka:localhost:9092 --to cluster:./data --topics clicks --until-end
    kstream --cluster ./data mirror --to kafka:localhost:9092 --pattern 'orders.*'
    kstream --cluster ./data mirror --to kafka:localhost:9092 --topics orders --exactly-once

    `kstream mirror offsets --group G ...` translates a consumer group's offsets across a
    mirror (see its --help).
    """
    if ctx.invoked_subcommand is not None:
        if source or target or topics or pattern or until_end or exactly_once or ctx.get_parameter_source("name") != \
                click.core.ParameterSource.DEFAULT:
            raise click.UsageError(f"give the options after '{ctx.invoked_subcommand}' "
                                   f"(kstream mirror {ctx.invoked_subcommand} --from ... --to ... --name ...)")
        return
    source, target = _sides(ctx, source, target)
    options = MirrorOptions(
        parse_endpoint(source, "--from"), parse_endpoint(target, "--to"), name,
        topics=tuple(t for t in (topics or "").split(",") if t), pattern=pattern, until_end=until_end,
        chunk_records=chunk_records, chunk_bytes=chunk_bytes,
        timeout_s=timeout_s, progress_interval_s=progress_s, exactly_once=exactly_once)
    runner = IntoKstream(options, sys.stderr) if options.source.is_kafka else IntoKafka(options, sys.stderr)
    with _stop_on_signals() as stop, _metrics_server(runner, options, metrics_host, metrics_port):
        progress = runner.run(stop)
    click.echo(f"mirrored {progress.records} records from {options.source} to {options.target}")


def _sides(ctx: click.Context, source: str | None, target: str | None) -> tuple[str, str]:
    """--from and --to, the one left out being the kstream cluster of --cluster."""
    if source is None and target is None:
        raise click.UsageError("give --from or --to (or both): the side left out is the kstream cluster of --cluster")
    own = f"cluster:{ctx.find_root().obj['cluster']}"
    return source or own, target or own


@mirror.command("offsets")
@click.option("--group", required=True, help="The consumer group whose committed offsets on the source to translate.")
@click.option("--from", "source", metavar="kafka:HOST:PORT|cluster:PATH",
              help="The mirror's source, as `kstream mirror` was given it (default: the --cluster path).")
@click.option("--to", "target", metavar="kafka:HOST:PORT|cluster:PATH",
              help="The mirror's target, as `kstream mirror` was given it (default: the --cluster path).")
@click.option("--name", default="mirror", show_default=True,
              help="The mirror's name, as `kstream mirror` was given it.")
@click.option("--format", "output", type=click.Choice(["table", "json", "csv"]), default="table", show_default=True,
              help="table; json: Spark's startingOffsets for the target topics (every partition, -2 = earliest "
                   "where nothing translates); csv: topic,partition,offset lines for kafka-consumer-groups "
                   "--reset-offsets --from-file (translated partitions only).")
@click.option("--apply", is_flag=True,
              help="Also commit the translated offsets as the group's on the target: refused while the group has "
                   "active members there; a partition where the group is ahead keeps its offset.")
@click.option("--allow-backwards", is_flag=True,
              help="With --apply: move a partition back where the target group is ahead of the translation.")
@click.option("--timeout", "timeout_s", type=SECONDS, default=10.0, show_default=True,
              help="Seconds a Kafka broker may take to answer.")
@click.pass_context
def offsets(ctx: click.Context, group: str, source: str | None, target: str | None, name: str, output: str,
            apply: bool, allow_backwards: bool, timeout_s: float) -> None:
    """Translate a consumer group's committed offsets across a mirror (MM2's checkpoints).

    Reads GROUP's committed offsets on the mirror's source side and translates each with the
    offset syncs the mirror recorded (__mirror.NAME.offset-syncs in the kstream cluster): the
    last sync at or below the offset gives the target offset, never past what was copied. An
    offset past what was copied is clamped to the end of the copy (the group re-reads the
    rest once copied); one below the first sync is not translated (said on stderr).
    Kafka -> kstream translates exactly (identity where the offsets were kept 1:1);
    kstream -> Kafka exactly too when the mirror is the only writer of the Kafka topic.

    \b
    kstream mirror offsets --group etl --from kafka:localhost:9092 --to cluster:./data --format json
    kstream --cluster ./data mirror offsets --group etl --to kafka:localhost:9092 --format csv > reset.csv
    kafka-consumer-groups --bootstrap-server localhost:9092 --group etl --reset-offsets \\
        --from-file reset.csv --execute
    """
    if allow_backwards and not apply:
        raise click.UsageError("--allow-backwards only goes with --apply")
    source, target = _sides(ctx, source, target)
    request = OffsetsRequest(parse_endpoint(source, "--from"), parse_endpoint(target, "--to"), name, group,
                             timeout_s=timeout_s)
    with OffsetTranslator(request) as translator:
        report = translator.translate()
        applied = translator.apply(report, allow_backwards) if apply else None
    for note in report.notes():
        click.echo(f"note: {note}", err=True)
    if output == "json":
        click.echo(report.spark_json())
    elif output == "csv":
        click.echo(report.reset_csv(), nl=False)
    else:
        click.echo(format_table(report, applied), nl=False)
    if applied is not None:
        changed = sum(1 for _, what in applied if what.startswith("set"))
        click.echo(f"applied: {changed} partition(s) of group {group!r} set on {request.target}, "
                   f"{len(applied) - changed} kept", err=True)
