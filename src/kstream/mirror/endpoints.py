"""The two ends of a mirror as the CLI names them: ``kafka:HOST:PORT[,HOST:PORT]`` or ``cluster:PATH``."""

from __future__ import annotations

from dataclasses import dataclass

from kstream.errors import ConfigError

KAFKA = "kafka"
CLUSTER = "cluster"


@dataclass(frozen=True)
class Endpoint:
    """One side of a mirror: an Apache Kafka cluster (``address`` is its bootstrap servers)
    or a kstream cluster (``address`` is its path)."""

    kind: str
    address: str

    @property
    def is_kafka(self) -> bool:
        return self.kind == KAFKA

    def __str__(self) -> str:
        return f"{self.kind}:{self.address}"


def parse_endpoint(text: str, what: str = "endpoint") -> Endpoint:
    """``kafka:HOST:PORT`` (several brokers comma-separated) or ``cluster:PATH``; a ConfigError
    naming ``what`` and the value otherwise."""
    kind, sep, address = text.partition(":")
    if not sep or kind not in (KAFKA, CLUSTER) or not address:
        raise ConfigError(f"{what} {text!r}: expected kafka:HOST:PORT (Apache Kafka's bootstrap servers) "
                          "or cluster:PATH (a kstream cluster)")
    if kind == KAFKA:
        for broker in address.split(","):
            host, colon, port = broker.rpartition(":")
            if not colon or not host or not port.isdigit():
                raise ConfigError(f"{what} {text!r}: broker {broker!r} is not HOST:PORT")
    return Endpoint(kind, address)
