"""kstream <-> Apache Kafka: MirrorMaker 2's job for one machine (issue 23, docs/MIRROR.md).

Two directions, one-shot (``until_end``) or continuous, topics by name or pattern:

- :class:`~kstream.mirror.into_kstream.IntoKstream` copies Kafka topics into kstream exactly
  once: each kstream transaction appends a chunk of records and commits the Kafka positions
  it copied up to (as the offsets of the kstream group ``__mirror.<name>``), so a mirror
  killed at any moment and restarted neither loses nor duplicates a record.
- :class:`~kstream.mirror.into_kafka.IntoKafka` copies kstream topics into Kafka at least
  once: kstream positions are committed after the Kafka producer's ``flush()`` confirmed the
  records (acks=all, idempotent producer).
- :class:`~kstream.mirror.offset_translation.OffsetTranslator` carries a consumer group's
  committed offsets across a mirror, with the offset syncs both directions record
  (:mod:`kstream.mirror.offset_syncs`, MM2's OffsetSync and OffsetSyncStore).

This room sits above the client (it uses kstream's Producer, Consumer and AdminClient) and
is the only place that imports confluent-kafka, lazily (:mod:`kstream.mirror.kafka_side`):
``import kstream`` never needs it.
"""

from __future__ import annotations

from kstream.mirror.endpoints import Endpoint, parse_endpoint
from kstream.mirror.errors import MirrorError
from kstream.mirror.options import MirrorOptions

__all__ = ["Endpoint", "MirrorError", "MirrorOptions", "parse_endpoint"]
