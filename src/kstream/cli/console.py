"""`kstream produce` and `kstream consume`: the console producer and consumer."""

from __future__ import annotations

import sys
from datetime import UTC, datetime

import click

from kstream.cli.common import cluster_options, parse_pairs
from kstream.consumer import Consumer
from kstream.message import OFFSET_BEGINNING, OFFSET_END, TopicPartition
from kstream.producer import Producer


@click.command()
@click.argument("topic")
@click.option("--key-separator", help="Split each line into key and value at this string.")
@click.option("--partition", type=int, default=-1, help="Write to this partition.")
@click.option("--header", "headers", multiple=True, metavar="K=V", help="Header on every record.")
@click.option("--acks", type=click.Choice(["all", "1", "0", "-1"]), default="all", show_default=True)
@click.option("--producer-config", "configs", multiple=True, metavar="K=V", help="Producer option.")
@click.pass_context
def produce(ctx: click.Context, topic: str, key_separator: str | None, partition: int,
            headers: tuple[str, ...], acks: str, configs: tuple[str, ...]) -> None:
    """Write each line of stdin to TOPIC as one record."""
    header_list = [(k, v.encode()) for k, v in parse_pairs(headers, "--header").items()] or None
    options = cluster_options(ctx, acks=acks, **parse_pairs(configs, "--producer-config"))
    count = 0
    with Producer(options) as producer:
        for line in sys.stdin.buffer:
            line = line.rstrip(b"\r\n")
            key = None
            if key_separator is not None:
                key, sep, value = line.partition(key_separator.encode())
                if not sep:
                    raise click.BadParameter(f"line {count + 1} has no key separator "
                                             f"{key_separator!r}", param_hint="--key-separator")
            else:
                value = line
            producer.produce(topic, value, key=key, partition=partition, headers=header_list)
            count += 1
            if count % 1000 == 0:
                producer.poll(0)
    click.echo(f"Produced {count} record(s) to {topic}.", err=True)


@click.command()
@click.argument("topic")
@click.option("--from-beginning", is_flag=True, help="Start at the log start (default: the end).")
@click.option("--offset", type=int, help="Start at this offset (needs --partition).")
@click.option("--partition", type=int, help="Read only this partition.")
@click.option("--max-messages", type=int, help="Exit after this many records.")
@click.option("--timeout-ms", type=int, default=None, help="Exit when nothing arrives for this long.")
@click.option("--print-key", is_flag=True)
@click.option("--print-headers", is_flag=True)
@click.option("--print-timestamp", is_flag=True)
@click.option("--print-offset", is_flag=True, help="Print partition and offset.")
@click.option("--key-separator", default="\t", show_default=True)
@click.option("--group", help="Consume as a member of this consumer group: start at its committed "
              "offsets (else --from-beginning / the end) and commit what was printed.")
@click.option("--consumer-config", "configs", multiple=True, metavar="K=V", help="Consumer option.")
@click.pass_context
def consume(ctx: click.Context, topic: str, from_beginning: bool, offset: int | None,
            partition: int | None, max_messages: int | None, timeout_ms: int | None,
            print_key: bool, print_headers: bool, print_timestamp: bool, print_offset: bool,
            key_separator: str, group: str | None, configs: tuple[str, ...]) -> None:
    """Print records of TOPIC, one per line."""
    if offset is not None and partition is None:
        raise click.BadParameter("--offset needs --partition", param_hint="--offset")
    if group is not None and (partition is not None or offset is not None):
        raise click.BadParameter("--group takes whole topics; drop --partition/--offset", param_hint="--group")
    start = offset if offset is not None else (OFFSET_BEGINNING if from_beginning else OFFSET_END)
    out = sys.stdout.buffer
    seen = 0
    extra = parse_pairs(configs, "--consumer-config")
    if group is not None:
        extra = {"group.id": group, "auto.offset.reset": "earliest" if from_beginning else "latest", **extra}
    with Consumer(cluster_options(ctx, **extra)) as consumer:
        info = consumer.cluster.topic(topic)
        partitions = [partition] if partition is not None else range(info.num_partitions)
        if group is not None:
            consumer.subscribe([topic])
        else:
            consumer.assign([TopicPartition(topic, p, start) for p in partitions])
        timeout = None if timeout_ms is None else timeout_ms / 1000
        while max_messages is None or seen < max_messages:
            message = consumer.poll(timeout)
            if message is None:
                break
            fields: list[bytes] = []
            if print_timestamp:
                ms = message.timestamp()[1]
                stamp = datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds")
                fields.append(f"CreateTime:{stamp}".encode())
            if print_offset:
                fields.append(f"Partition:{message.partition()} Offset:{message.offset()}".encode())
            if print_headers:
                headers = message.headers() or []
                fields.append(b",".join(k.encode() + b":" + (v or b"") for k, v in headers) or b"NO_HEADERS")
            if print_key:
                fields.append(message.key() if message.key() is not None else b"null")
            value = message.value()
            fields.append(value if isinstance(value, bytes) else str(value).encode()
                          if value is not None else b"null")
            out.write(key_separator.encode().join(fields) + b"\n")
            seen += 1
        out.flush()
    click.echo(f"Processed a total of {seen} messages", err=True)
