"""Topic pages and their forms: list + create, one topic + delete / add partitions / alter
config / evolve schema. Each write runs what `kstream topics create|delete|alter` runs
(:class:`kstream.admin.Admin` calls, the CLI's parsers), then redirects (303) to the page."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated
from urllib.parse import quote

import pyarrow as pa
from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from kstream.admin import Admin, AdminClient, NewPartitions, NewTopic
from kstream.config.option_text import parse_schema
from kstream.errors import ConfigError
from kstream.tools.web import figures, forms
from kstream.tools.web.clusters import ClusterRef, open_cluster
from kstream.tools.web.overview import ClusterSnapshot, topic_rows
from kstream.tools.web.state import render, state_of
from kstream.tools.web.topic_view import topic_view

router = APIRouter()
Text = Annotated[str, Form()]
OptionalText = Annotated[str | None, Form()]


@contextmanager
def open_admin(ref: ClusterRef) -> Iterator[AdminClient]:
    """An Admin on an existing cluster: ``admin.cluster`` is opened first, so a vanished
    cluster is a ClusterNotFoundError here and never re-created by ``create_topics``."""
    with Admin({"cluster": ref.path}) as admin:
        admin.cluster  # noqa: B018 (opens it, or raises ClusterNotFoundError)
        yield admin


def done(url: str, message: str) -> RedirectResponse:
    return RedirectResponse(f"{url}?done={quote(message)}", status_code=303)


@router.get("/c/{cluster}/topics", response_class=HTMLResponse)
def topics_page(request: Request, cluster: str, done: str | None = None) -> HTMLResponse:
    ref = state_of(request).cluster(cluster)
    with open_cluster(ref) as opened:
        snapshot = ClusterSnapshot.read(opened)
    rates = figures.topic_rates(state_of(request), cluster)
    return render(request, "topics.html", ref=ref, rows=topic_rows(snapshot), rates=rates, done=done,
                  defaults=snapshot.config)


@router.post("/c/{cluster}/topics")
def create_topic(request: Request, cluster: str, name: Text, partitions: OptionalText = None,
                 replication_factor: OptionalText = None, configs: OptionalText = None,
                 schema_text: Annotated[str | None, Form(alias="schema")] = None) -> RedirectResponse:
    """`kstream topics create NAME --partitions N --replication-factor R --config K=V --schema S`."""
    ref = state_of(request).cluster(cluster)
    with open_admin(ref) as admin:
        new = NewTopic(name.strip(), forms.integer_or(partitions, "partitions", -1),
                       forms.integer_or(replication_factor, "replication factor", -1),
                       config=forms.pairs(configs, "--config"),
                       schema=parse_schema(schema_text) if schema_text and schema_text.strip() else None)
        admin.create_topics([new])[new.topic].result()
        info = admin.cluster.topic(new.topic)
    return done(f"/c/{cluster}/topics/{quote(new.topic)}",
                f"Created topic {new.topic} with {info.num_partitions} partition(s), "
                f"replication factor {info.replication_factor}.")


@router.get("/c/{cluster}/topics/{topic}", response_class=HTMLResponse)
def topic_page(request: Request, cluster: str, topic: str, done: str | None = None) -> HTMLResponse:
    ref = state_of(request).cluster(cluster)
    with open_cluster(ref) as opened:
        view = topic_view(opened, topic)
    return render(request, "topic.html", ref=ref, view=view, done=done)


@router.post("/c/{cluster}/topics/{topic}/delete")
def delete_topic(request: Request, cluster: str, topic: str, confirm: OptionalText = None) -> RedirectResponse:
    """`kstream topics delete TOPIC`, once the form repeats the topic's name."""
    ref = state_of(request).cluster(cluster)
    if (confirm or "").strip() != topic:
        raise ConfigError(f"type the topic's name ({topic}) to confirm its deletion")
    with open_admin(ref) as admin:
        admin.delete_topics([topic])[topic].result()
    return done(f"/c/{cluster}/topics", f"Deleted topic {topic}.")


@router.post("/c/{cluster}/topics/{topic}/partitions")
def add_partitions(request: Request, cluster: str, topic: str, partitions: Text) -> RedirectResponse:
    """`kstream topics alter TOPIC --partitions N`."""
    ref = state_of(request).cluster(cluster)
    count = forms.integer_or(partitions, "partitions", -1)
    with open_admin(ref) as admin:
        admin.create_partitions([NewPartitions(topic, count)])[topic].result()
    return done(f"/c/{cluster}/topics/{quote(topic)}", f"Topic {topic} now has {count} partitions.")


@router.post("/c/{cluster}/topics/{topic}/config")
def alter_config(request: Request, cluster: str, topic: str, configs: OptionalText = None,
                 deletes: OptionalText = None) -> RedirectResponse:
    """`kstream topics alter TOPIC --config K=V --delete-config K`."""
    ref = state_of(request).cluster(cluster)
    changes: dict[str, str | None] = dict(forms.pairs(configs, "--config"))
    changes.update({key: None for key in forms.lines(deletes)})
    if not changes:
        raise ConfigError("nothing to change: give K=V lines to set or keys to remove")
    with open_admin(ref) as admin:
        admin.alter_topic_config(topic, changes)
    return done(f"/c/{cluster}/topics/{quote(topic)}", f"Updated configs of {topic}.")


@router.post("/c/{cluster}/topics/{topic}/schema")
def evolve_schema(request: Request, cluster: str, topic: str, add_columns: Text) -> RedirectResponse:
    """`kstream topics alter TOPIC --add-columns name:type,...` (a typed topic only)."""
    ref = state_of(request).cluster(cluster)
    with open_admin(ref) as admin:
        current = admin.describe_topic(topic).schema
        if current is None:
            raise ConfigError(f"{topic} is a bytes topic: only a typed topic has columns to add")
        added = parse_schema(add_columns)
        admin.evolve_schema(topic, pa.schema(list(current) + list(added)))
    return done(f"/c/{cluster}/topics/{quote(topic)}", f"Added columns {added.names} to {topic}.")
