"""Per-partition lag of a Spark streaming query, from its progress.

A kstream source reports the log's end offsets (``reportLatestOffset``), so
each progress entry holds, per source, the offsets the batch ended at
(``endOffset``) and the newest offsets there were (``latestOffset``):
lag = latest - end, per topic-partition. ``query.lastProgress`` (or any entry of
``recentProgress``) goes in as it comes out of pyspark.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class QueryPartitionLag:
    source: str
    topic: str
    partition: int
    end_offset: int
    latest_offset: int

    @property
    def lag(self) -> int:
        return max(0, self.latest_offset - self.end_offset)


def _offsets(value: Any) -> dict[str, dict[str, int]]:
    if value is None:
        return {}
    if isinstance(value, str):
        value = json.loads(value)
    return {str(t): {str(p): int(o) for p, o in ps.items()} for t, ps in dict(value).items()}


def _get(entry: Any, name: str) -> Any:
    return entry[name] if isinstance(entry, dict) else getattr(entry, name, None)


def query_lag(progress: Any) -> list[QueryPartitionLag]:
    """Lag per (source, topic, partition) of the kstream sources in one progress entry."""
    if progress is None:
        return []
    result = []
    for source in _get(progress, "sources") or []:
        end = _offsets(_get(source, "endOffset"))
        latest = _offsets(_get(source, "latestOffset"))
        description = str(_get(source, "description"))
        for topic, partitions in sorted(latest.items()):
            for partition, newest in sorted(partitions.items(), key=lambda item: int(item[0])):
                done = end.get(topic, {}).get(partition, 0)
                result.append(QueryPartitionLag(description, topic, int(partition), done, newest))
    return result
