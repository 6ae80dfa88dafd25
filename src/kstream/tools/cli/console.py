"""`kstream produce` and `kstream consume`: the console producer and consumer.

Shaped like kafka-console-producer / kafka-console-consumer: the same option
names (``--topic``, ``--property``, ``--offset``, ``--partition``,
``--isolation-level``, ``--max-messages``, ``--timeout-ms``,
``--compression-codec``, ``--group``, ``--from-beginning``), the same line
format in (:mod:`kstream.tools.cli.line_reader`) and out
(:mod:`kstream.tools.cli.formatter`), and the same "Processed a total of N messages"
on stderr. kstream's shorter flags (``--key-separator``, ``--print-key``, ...)
are shorthands for the corresponding properties.

On a typed topic each line's value (after its key and headers) is a JSON object of
the columns, or with ``--format csv`` the columns in the schema's order
(:mod:`kstream.tools.cli.typed_lines`). A bad line stops the run, as it stops
kafka-console-producer: the lines before it are written, it and the rest are not,
and the error names its line number (and column).
"""

from __future__ import annotations

import sys

import click

from kstream.client.consumer import Consumer
from kstream.client.producer import Producer
from kstream.error import KafkaError
from kstream.errors import InvalidRecordError, TopicNotFoundError
from kstream.log.cluster.cluster import Cluster
from kstream.message import OFFSET_BEGINNING, OFFSET_END, TopicPartition
from kstream.tools.cli.common import cluster_options, parse_pairs, parse_properties, pick_topic
from kstream.tools.cli.formatter import MessageFormatter
from kstream.tools.cli.line_reader import LineReader
from kstream.tools.cli.typed_lines import FORMATS, TypedLineParser

_DEFAULT_FORMATTERS = ("kafka.tools.DefaultMessageFormatter",
                       "org.apache.kafka.tools.consumer.DefaultMessageFormatter", "default")


@click.command()
@click.argument("topic", required=False)
@click.option("--topic", "topic_option", metavar="TOPIC", help="The topic (Kafka's spelling of TOPIC).")
@click.option("--property", "--reader-property", "properties", multiple=True, metavar="K=V[,K=V]",
              help="Line reader property, as kafka-console-producer's: parse.key, key.separator, "
                   "parse.headers, headers.delimiter, headers.separator, headers.key.separator, "
                   "null.marker, ignore.error.")
@click.option("--key-separator", help="Shorthand for --property parse.key=true,key.separator=SEP.")
@click.option("--partition", type=int, default=-1, help="Write to this partition (default: by key).")
@click.option("--header", "headers", multiple=True, metavar="K=V", help="Header on every record.")
@click.option("--acks", "--request-required-acks", "acks", type=click.Choice(["all", "1", "0", "-1"]),
              default="all", show_default=True)
@click.option("--compression-codec", is_flag=False, flag_value="gzip", metavar="CODEC",
              help="compression.type of the batches written (none, lz4, zstd; alone: gzip, as Kafka).")
@click.option("--producer-config", "--producer-property", "--command-property", "configs", multiple=True,
              metavar="K=V", help="Producer option.")
@click.option("--format", "value_format", type=click.Choice(FORMATS),
              help="A typed topic's values: a JSON object of the columns per line (the default), or csv: "
                   "the columns in the schema's order, an empty field null, no header row.")
@click.pass_context
def produce(ctx: click.Context, topic: str | None, topic_option: str | None, properties: tuple[str, ...],
            key_separator: str | None, partition: int, headers: tuple[str, ...], acks: str,
            compression_codec: str | None, configs: tuple[str, ...], value_format: str | None) -> None:
    """Write each line of stdin to TOPIC as one record (on a typed topic: a JSON object of its
    columns per line, or CSV with --format csv). A bad line stops the run; the lines before
    it are written."""
    name = pick_topic(topic, topic_option)
    reader_properties = parse_properties(properties, "--property")
    if key_separator is not None:
        reader_properties.update({"parse.key": "true", "key.separator": key_separator})
    reader = LineReader.from_properties(reader_properties)
    fixed = [(k, v.encode()) for k, v in parse_pairs(headers, "--header").items()]
    extra = parse_pairs(configs, "--producer-config")
    if compression_codec is not None:
        extra["compression.type"] = compression_codec
    count = 0
    with Producer(cluster_options(ctx, acks=acks, **extra)) as producer:
        columns = _typed_parser(producer.cluster, name, value_format)
        for line in sys.stdin.buffer:
            line_number = count + 1
            try:
                record = reader.parse(line.rstrip(b"\r\n"), line_number)
                value = record.value if columns is None else columns.parse(record.value, line_number)
                record_headers = [*fixed, *(record.headers or [])] or None
                try:
                    producer.produce(name, value, key=record.key, partition=partition, headers=record_headers)
                except InvalidRecordError as err:  # the producer's check of a typed record: add the line
                    raise type(err)(f"line {line_number}: {err}") from err
            except InvalidRecordError:
                # As kafka-console-producer: the lines before it are sent (the producer's close
                # flushes them), this one and the rest are not.
                click.echo(f"Produced {count} record(s) to {name}; stopped at line {line_number}.", err=True)
                raise
            count += 1
            if count % 1000 == 0:
                producer.poll(0)
    click.echo(f"Produced {count} record(s) to {name}.", err=True)


def _typed_parser(cluster: Cluster, topic: str, value_format: str | None) -> TypedLineParser | None:
    """The parser of a typed topic's lines; None for a bytes topic (its lines are written as they
    are: --format is refused there) or a topic the producer may auto-create (a bytes topic)."""
    try:
        schema = Cluster.topic_schema(cluster.topic(topic))
    except TopicNotFoundError:
        schema = None
    if schema is None:
        if value_format is not None:
            raise click.BadParameter(f"topic {topic!r} is a bytes topic: its lines are written as they are "
                                     "(--format reads a typed topic's columns)", param_hint="--format")
        return None
    return TypedLineParser(topic, schema, value_format or "json")


def _start_offset(offset: str | None, from_beginning: bool) -> int:
    """--offset earliest|latest|N as kafka-console-consumer reads it; default: the end, or the
    beginning with --from-beginning."""
    if offset is None:
        return OFFSET_BEGINNING if from_beginning else OFFSET_END
    named = {"earliest": OFFSET_BEGINNING, "latest": OFFSET_END}
    if offset.lower() in named:
        return named[offset.lower()]
    try:
        number = int(offset)
    except ValueError:
        number = -1
    if number < 0:
        raise click.BadParameter(f"{offset!r}: expected earliest, latest or a non-negative offset",
                                 param_hint="--offset")
    return number


def _formatter(properties: tuple[str, ...], formatter: str | None, shorthands: dict[str, bool],
               key_separator: str | None) -> MessageFormatter:
    if formatter is not None and formatter not in _DEFAULT_FORMATTERS:
        raise click.BadParameter(f"{formatter!r}: kstream prints with the default formatter only "
                                 "(shape it with --property print.key=true,...)", param_hint="--formatter")
    chosen = {name: "true" for name, on in shorthands.items() if on}
    if key_separator is not None:
        chosen["key.separator"] = key_separator
    chosen.update(parse_properties(properties, "--property"))
    return MessageFormatter.from_properties(chosen)


@click.command()
@click.argument("topic", required=False)
@click.option("--topic", "topic_option", metavar="TOPIC", help="The topic (Kafka's spelling of TOPIC).")
@click.option("--from-beginning", is_flag=True, help="Start at the log start (default: the end); with "
              "--group, where the group has no committed offset.")
@click.option("--offset", metavar="earliest|latest|N", help="Start here (needs --partition).")
@click.option("--partition", type=int, help="Read only this partition.")
@click.option("--max-messages", type=int, help="Exit after this many records.")
@click.option("--timeout-ms", type=int, default=None, help="Exit when nothing arrives for this long.")
@click.option("--isolation-level", type=click.Choice(["read_committed", "read_uncommitted"]),
              help="read_uncommitted also prints records of open and aborted transactions "
                   "(default: the consumer's isolation.level, read_committed).")
@click.option("--property", "--formatter-property", "properties", multiple=True, metavar="K=V[,K=V]",
              help="Formatter property, as kafka-console-consumer's: print.timestamp, print.partition, "
                   "print.offset, print.headers, print.key, print.value, key.separator, line.separator, "
                   "headers.separator, null.literal.")
@click.option("--formatter", metavar="CLASS", help="Accepted for Kafka's default formatter only.")
@click.option("--print-key", is_flag=True, help="Shorthand for --property print.key=true.")
@click.option("--print-headers", is_flag=True, help="Shorthand for --property print.headers=true.")
@click.option("--print-timestamp", is_flag=True, help="Shorthand for --property print.timestamp=true.")
@click.option("--print-offset", is_flag=True, help="Shorthand for print.partition=true,print.offset=true.")
@click.option("--key-separator", help="Shorthand for --property key.separator=SEP (default: tab).")
@click.option("--group", help="Consume as a member of this consumer group: start at its committed "
              "offsets (else --from-beginning / the end) and commit what was printed.")
@click.option("--consumer-config", "--consumer-property", "--command-property", "configs", multiple=True,
              metavar="K=V", help="Consumer option.")
@click.pass_context
def consume(ctx: click.Context, topic: str | None, topic_option: str | None, from_beginning: bool,
            offset: str | None, partition: int | None, max_messages: int | None, timeout_ms: int | None,
            isolation_level: str | None, properties: tuple[str, ...], formatter: str | None,
            print_key: bool, print_headers: bool, print_timestamp: bool, print_offset: bool,
            key_separator: str | None, group: str | None, configs: tuple[str, ...]) -> None:
    """Print records of TOPIC, one per line."""
    name = pick_topic(topic, topic_option)
    if offset is not None and partition is None:
        raise click.BadParameter("the partition is required when offset is specified (--partition)",
                                 param_hint="--offset")
    if offset is not None and from_beginning:
        raise click.BadParameter("--from-beginning and --offset cannot be specified together",
                                 param_hint="--offset")
    if group is not None and partition is not None:
        raise click.BadParameter("--group takes whole topics; drop --partition/--offset", param_hint="--group")
    start = _start_offset(offset, from_beginning)
    printer = _formatter(properties, formatter, {
        "print.key": print_key, "print.headers": print_headers, "print.timestamp": print_timestamp,
        "print.partition": print_offset, "print.offset": print_offset}, key_separator)
    out = sys.stdout.buffer
    seen = 0
    extra = parse_pairs(configs, "--consumer-config")
    if isolation_level is not None:
        extra["isolation.level"] = isolation_level
    if group is not None:
        extra = {"group.id": group, "auto.offset.reset": "earliest" if from_beginning else "latest", **extra}
    interrupted = False
    try:
        with Consumer(cluster_options(ctx, **extra)) as consumer:
            info = consumer.cluster.topic(name)
            partitions = [partition] if partition is not None else range(info.num_partitions)
            if group is not None:
                consumer.subscribe([name])
            else:
                consumer.assign([TopicPartition(name, p, start) for p in partitions])
            timeout = None if timeout_ms is None else timeout_ms / 1000
            while max_messages is None or seen < max_messages:
                message = consumer.poll(timeout)
                if message is None:
                    break
                error = message.error()
                if error is not None and error.code() != KafkaError._PARTITION_EOF:
                    # As kafka-console-consumer: an error halts (a record never prints as data).
                    out.flush()
                    click.echo(f"Processed a total of {seen} messages", err=True)
                    raise click.ClickException(f"{message.topic()}-{message.partition()} offset {message.offset()}: "
                                               f"{error.str()}")
                if error is not None:
                    continue
                printer.write(message, out)
                seen += 1
            out.flush()
    except KeyboardInterrupt:  # Ctrl-C: kafka-console-consumer's shutdown hook prints the total too
        interrupted = True
        out.flush()
    click.echo(f"Processed a total of {seen} messages", err=True)
    if interrupted:
        raise click.exceptions.Abort  # exit 130, as a shell reports a command Ctrl-C stopped
