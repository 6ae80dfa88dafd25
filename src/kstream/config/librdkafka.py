"""librdkafka's configuration names on an embedded log: the one list of what kstream accepts.

confluent-kafka code passes librdkafka properties (``bootstrap.servers``,
``socket.timeout.ms``, ``sasl.*``, ``error_cb``, ...). A client config given
to kstream goes through :func:`normalize` before its options are parsed:

- **ignored** (:data:`IGNORED`): properties about brokers, the network,
  security, librdkafka's threads and logs. They mean nothing when the log is
  files on this machine; they are accepted (any value) and dropped.
- **aliases** (:data:`ALIASES`): librdkafka's other names for a kstream option
  (``message.timeout.ms`` is ``delivery.timeout.ms``); given both with
  different values is a ConfigError.
- **callbacks** (:data:`CALLBACKS`): ``error_cb``, ``stats_cb``, ``logger``,
  ... must be callable (a logger must have ``.log``); kstream calls them
  (``throttle_cb`` is checked and never called: nothing throttles; ``oauth_cb``
  is called on librdkafka's schedule, see :mod:`kstream.client.callbacks`).
- ``default.topic.config`` (a dict) is merged into the config, as confluent-kafka does.
- Every other unknown name stays a ConfigError with "did you mean".

A config with ``bootstrap.servers`` and no ``cluster`` logs once per process
which cluster path it uses and how to choose one (:func:`note_cluster_path`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from kstream.errors import ConfigError

log = logging.getLogger("kstream")

_NETWORK = "no broker and no network: the log is files on this machine"
_SECURITY = "no network connection to secure: access is the file permissions of the cluster dir"
_LIBRDKAFKA = "a librdkafka internal with no counterpart in kstream"
_LOGS = "kstream logs through Python's logging (see `logger`)"

IGNORED: dict[str, str] = {
    **dict.fromkeys((
        "bootstrap.servers", "metadata.broker.list", "socket.timeout.ms", "socket.blocking.max.ms",
        "socket.send.buffer.bytes", "socket.receive.buffer.bytes", "socket.keepalive.enable",
        "socket.nagle.disable", "socket.max.fails", "socket.connection.setup.timeout.ms",
        "broker.address.ttl", "broker.address.family", "connections.max.idle.ms",
        "reconnect.backoff.jitter.ms", "reconnect.backoff.ms", "reconnect.backoff.max.ms",
        "request.timeout.ms", "api.version.request", "api.version.request.timeout.ms",
        "api.version.fallback.ms", "broker.version.fallback", "client.dns.lookup", "client.rack",
        "metadata.max.age.ms", "topic.metadata.refresh.interval.ms",
        "topic.metadata.refresh.fast.interval.ms", "topic.metadata.refresh.fast.cnt",
        "topic.metadata.refresh.sparse", "topic.metadata.propagation.max.ms",
        "coordinator.query.interval.ms", "fetch.error.backoff.ms", "fetch.min.bytes",
        "fetch.queue.backoff.ms", "queued.min.messages", "queued.max.messages.kbytes",
        "receive.message.max.bytes", "message.copy.max.bytes", "retry.backoff.max.ms",
        "socket_cb", "connect_cb", "closesocket_cb", "resolve_cb", "group.protocol.type",
        "group.protocol", "group.remote.assignor", "enable.metrics.push",
    ), _NETWORK),
    **dict.fromkeys((
        "security.protocol", "ssl.cipher.suites", "ssl.curves.list", "ssl.sigalgs.list",
        "ssl.key.location", "ssl.key.password", "ssl.key.pem", "ssl_key", "ssl.certificate.location",
        "ssl.certificate.pem", "ssl_certificate", "ssl.ca.location", "ssl.ca.pem", "ssl_ca",
        "ssl.ca.certificate.stores", "ssl.crl.location", "ssl.keystore.location",
        "ssl.keystore.password", "ssl.providers", "ssl.engine.location", "ssl.engine.id",
        "enable.ssl.certificate.verification", "ssl.endpoint.identification.algorithm",
        "sasl.mechanisms", "sasl.mechanism", "sasl.kerberos.service.name",
        "sasl.kerberos.principal", "sasl.kerberos.kinit.cmd", "sasl.kerberos.keytab",
        "sasl.kerberos.min.time.before.relogin", "sasl.username", "sasl.password",
        "sasl.oauthbearer.config", "enable.sasl.oauthbearer.unsecure.jwt", "sasl.oauthbearer.method",
        "sasl.oauthbearer.client.id", "sasl.oauthbearer.client.secret", "sasl.oauthbearer.scope",
        "sasl.oauthbearer.extensions", "sasl.oauthbearer.token.endpoint.url",
    ), _SECURITY),
    **dict.fromkeys((
        "builtin.features", "enabled_events", "enable.random.seed", "internal.termination.signal",
        "plugin.library.paths", "interceptors", "queue.buffering.max.messages",
        "queue.buffering.max.kbytes", "queue.buffering.backpressure.threshold", "batch.num.messages",
        "compression.level", "sticky.partitioning.linger.ms", "enable.gapless.guarantee",
        "delivery.report.only.error", "produce.offset.report", "queuing.strategy",
        "offset.store.method", "offset.store.path", "offset.store.sync.interval.ms",
        "consume.callback.max.messages", "topic.blacklist", "opaque", "api.version",
        "allow.auto.create.topics",
    ), _LIBRDKAFKA),
    **dict.fromkeys(("debug", "log_level", "log.queue", "log.thread.name", "log.connection.close",
                     "log_cb"), _LOGS),
}
"""librdkafka properties that mean nothing for an embedded log, with the reason."""

ALIASES: dict[str, str] = {
    "message.timeout.ms": "delivery.timeout.ms",
    "compression.codec": "compression.type",
    "queue.buffering.max.ms": "linger.ms",
    "request.required.acks": "acks",
    "message.send.max.retries": "retries",
    "max.in.flight": "max.in.flight.requests.per.connection",
    "auto.commit.enable": "enable.auto.commit",
    "fetch.message.max.bytes": "max.partition.fetch.bytes",
}
"""librdkafka's other names for kstream options: alias -> kstream name."""

CALLBACKS: dict[str, str] = {
    "error_cb": "error_cb(KafkaError): errors met outside a call's result (a batch that failed, a "
                "corrupt batch found, a log dir taken offline), served by poll()/flush().",
    "stats_cb": "stats_cb(json_str): librdkafka-shaped statistics every statistics.interval.ms, "
                "served by poll()/flush()/consume().",
    "logger": "A logging.Logger the client logs to (default: the 'kstream' loggers).",
    "on_delivery": "Producer: the delivery callback of records produced without one.",
    "on_commit": "Consumer: on_commit(err, partitions) after an asynchronous commit.",
    "throttle_cb": "Accepted (must be callable), never called: nothing throttles an embedded log.",
    "oauth_cb": "With sasl.mechanisms OAUTHBEARER: called as librdkafka does (first poll, then at 80% "
                "of the token's lifetime; retried after a failure); the token is checked, never used: "
                "nothing authenticates to an embedded log.",
    "oauthbearer_token_refresh_cb": "Accepted (must be callable), never called (librdkafka's C-level "
                                    "name; Python code uses oauth_cb).",
    "rebalance_cb": "Accepted (must be callable); use subscribe(on_assign=, on_revoke=, on_lost=).",
    "offset_commit_cb": "Alias of on_commit.",
    "dr_cb": "Alias of on_delivery.",
    "dr_msg_cb": "Alias of on_delivery.",
}
"""Python-level callbacks a config may hold, with what kstream does with them."""

_CALLBACK_ALIASES = {"offset_commit_cb": "on_commit", "dr_cb": "on_delivery", "dr_msg_cb": "on_delivery"}
CALLBACK_NAMES = tuple(name for name in CALLBACKS if name not in _CALLBACK_ALIASES)
"""The names callbacks are returned under (aliases renamed)."""
_NESTED = "default.topic.config"

ACCEPTED_NAMES = (*ALIASES, *CALLBACKS, _NESTED, *IGNORED)
"""Every librdkafka name accepted besides the client's own options (for "did you mean")."""

_noted = threading.Event()


def normalize(given: Mapping[str, Any], known: Mapping[str, Any] | frozenset[str]
              ) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(options, callbacks)``: ``given`` with default.topic.config merged, aliases renamed,
    ignored properties dropped and callbacks taken out (checked). ``known`` holds the option
    names of the client's own tables: a name known there is never treated as ignored."""
    merged = dict(given)
    nested = merged.pop(_NESTED, None)
    if nested is not None:
        if not isinstance(nested, Mapping):
            raise ConfigError(f"option {_NESTED!r} must be a dict of topic properties, "
                              f"got {type(nested).__name__}")
        for name, value in nested.items():
            merged.setdefault(name, value)
    options: dict[str, Any] = {}
    callbacks: dict[str, Any] = {}
    for name, value in merged.items():
        if name in CALLBACKS:
            callbacks[_CALLBACK_ALIASES.get(name, name)] = _checked_callback(name, value)
        elif name in known:
            options[name] = value
        elif name in ALIASES:
            target = ALIASES[name]
            if target in merged and str(merged[target]) != str(value):
                raise ConfigError(f"options {name!r} ({value!r}) and {target!r} ({merged[target]!r}) "
                                  f"are the same setting ({name} is librdkafka's name for {target}); "
                                  "give one")
            options.setdefault(target, value)
        elif name not in IGNORED:
            options[name] = value  # unknown: the option parser says so, with "did you mean"
    return options, callbacks


def _checked_callback(name: str, value: Any) -> Any:
    if value is None:
        return None
    if name == "logger":
        if not callable(getattr(value, "log", None)):
            raise ConfigError(f"option 'logger' must be a logging.Logger (or have .log()), "
                              f"got {type(value).__name__}")
        return value
    if not callable(value):
        raise ConfigError(f"option {name!r} must be callable, got {type(value).__name__}")
    return value


def note_cluster_path(given: Mapping[str, Any], path: str, logger: logging.Logger | logging.LoggerAdapter[Any] | None
                      ) -> None:
    """Once per process: a config naming Kafka brokers and no cluster says which cluster it uses."""
    if "cluster" in given or not ({"bootstrap.servers", "metadata.broker.list"} & given.keys()):
        return
    if _noted.is_set():
        return
    _noted.set()
    servers = given.get("bootstrap.servers", given.get("metadata.broker.list"))
    (logger or log).warning(
        "kstream: ignoring bootstrap.servers=%r (there are no brokers: the log is embedded); using "
        "the cluster at %s. Choose one with the 'cluster' option or $KSTREAM_CLUSTER.", servers, path)


def render_markdown() -> str:
    """The docs/CONFIG.md section listing the librdkafka names kstream accepts."""
    out = ["| librdkafka name | kstream's meaning |", "|---|---|"]
    for name, target in ALIASES.items():
        out.append(f"| `{name}` | alias of `{target}` |")
    for name, doc in CALLBACKS.items():
        out.append(f"| `{name}` | {doc} |")
    out.append(f"| `{_NESTED}` | a dict merged into the config (its keys count as top-level keys) |")
    by_reason: dict[str, list[str]] = {}
    for name, reason in IGNORED.items():
        by_reason.setdefault(reason, []).append(name)
    for reason, names in by_reason.items():
        out.append(f"| {', '.join(f'`{n}`' for n in names)} | accepted and ignored: {reason} |")
    return "\n".join(out)
