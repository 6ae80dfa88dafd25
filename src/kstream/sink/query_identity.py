"""Which streaming query a sink writes for: the query id Spark keeps in its checkpoint.

Spark writes ``<checkpointLocation>/metadata`` (one JSON object, ``{"id": "<uuid>"}``)
when a query first starts on a checkpoint, before its first batch, and reads it back
on every restart: it is ``StreamingQuery.id``, the query's identity across restarts
(Delta's sink keys its idempotent commits by it too, as its ``txnAppId``). The kstream
sink keys its exactly-once commits by that id, never by the checkpoint's path:

* a path reused for a fresh checkpoint (``rm -rf ck`` and start again) is a new query
  with a new id, whose batch 0 is written, not mistaken for the old query's batch 0;
* one checkpoint spelled two ways (``/x/ck``, ``file:///x/ck``, ``/x/./ck/``) is one
  query, so a replayed batch is never written twice.

A checkpoint without its ``metadata`` file, or with one that names no id, is a fault
(reported, never replaced by a default): the sink could not tell a replay from a new
query.
"""

from __future__ import annotations

import json
import os
import uuid
from urllib.parse import unquote, urlparse

from kstream.errors import CheckpointError

METADATA_FILE = "metadata"  # Spark's StreamExecution: new Path(checkpointRoot, "metadata")
MAX_METADATA_BYTES = 64 << 10  # Spark's is about 45 bytes; a bigger file is not Spark's
SINK_ID_PREFIX = "query:"


def query_sink_id(checkpoint_location: str) -> str:
    """The sink id of the streaming query whose checkpoint is ``checkpoint_location``."""
    return SINK_ID_PREFIX + read_query_id(checkpoint_location)


def read_query_id(checkpoint_location: str) -> str:
    """The query id in ``<checkpoint_location>/metadata``; CheckpointError if it is missing or
    is not Spark's (the message names the file and what to do)."""
    path = metadata_path(checkpoint_location)
    raw = _read(path, checkpoint_location)
    try:
        value = json.loads(raw.splitlines()[0] if raw.strip() else raw)
        query_id = str(uuid.UUID(value["id"]))
    except (ValueError, KeyError, TypeError, IndexError, AttributeError) as err:
        raise CheckpointError(
            f"{path} is not a Spark query's metadata (expected one JSON line with the query's UUID as "
            f"\"id\", got {raw[:80]!r}): the kstream sink identifies a streaming query by it. Use the "
            "checkpoint Spark wrote, or a fresh checkpoint location") from err
    return query_id


def metadata_path(checkpoint_location: str) -> str:
    """The local path of the checkpoint's metadata file: a plain path (made absolute) or a
    ``file:`` URI. Other file systems are refused: the log is on this machine's disks, and
    its checkpoint must be readable from here (say so rather than guess)."""
    location = checkpoint_location.strip()
    if not location:
        raise CheckpointError("option 'checkpointLocation' is empty; give the query's checkpoint directory")
    parsed = urlparse(location)
    if parsed.scheme == "file":
        if parsed.netloc not in ("", "localhost"):
            raise CheckpointError(f"checkpoint location {location!r} names host {parsed.netloc!r}; a file: "
                                  "URI of this machine has none (file:///path)")
        location = unquote(parsed.path)
    elif parsed.scheme and len(parsed.scheme) > 1:  # (a one-letter scheme is a Windows drive)
        raise CheckpointError(
            f"checkpoint location {location!r} is on {parsed.scheme}:, which the kstream sink cannot read; "
            "its exactly-once commits need the query id in the checkpoint's metadata file: put the "
            "checkpoint on a local path (or file:///...)")
    return os.path.join(os.path.abspath(location), METADATA_FILE)


def _read(path: str, checkpoint_location: str) -> str:
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_METADATA_BYTES + 1)
    except FileNotFoundError as err:
        raise CheckpointError(
            f"the streaming checkpoint {checkpoint_location!r} has no {METADATA_FILE} file ({path}); Spark "
            "writes it with the query's id when the query starts. The kstream sink needs it to write each "
            "batch exactly once: start the query with this checkpoint location (Spark creates it), or "
            "restore the whole checkpoint directory") from err
    except OSError as err:
        raise CheckpointError(f"cannot read the streaming checkpoint's metadata {path}: {err}") from err
    if len(raw) > MAX_METADATA_BYTES:
        raise CheckpointError(f"{path} is over {MAX_METADATA_BYTES} bytes: not a Spark query's metadata file")
    return raw.decode("utf-8", errors="replace")
