"""valueFormat=avro + avroSchema: values decoded with fastavro into typed columns."""

from __future__ import annotations

import datetime as dt
import io
import json

import pytest
from fastavro import parse_schema, schemaless_writer

from kstream import Producer

pytestmark = pytest.mark.spark

SCHEMA = {
    "type": "record", "name": "Order", "fields": [
        {"name": "id", "type": "long"},
        {"name": "customer", "type": ["null", "string"]},
        {"name": "amount", "type": "double"},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": "long"}},
        {"name": "ship", "type": {"type": "record", "name": "Ship", "fields": [{"name": "city", "type": "string"}]}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    ]}


def order(i):
    return {"id": i, "customer": None if i % 3 == 0 else f"c{i}", "amount": i * 1.5,
            "status": "PAID" if i % 2 else "NEW", "tags": [f"t{i}"] * (i % 3), "attrs": {"n": i},
            "ship": {"city": f"city{i % 4}"},
            "at": dt.datetime(2026, 11, 20, 10, 0, i % 60, tzinfo=dt.UTC), "day": dt.date(2026, 11, 1 + i % 20)}


def encode(record):
    out = io.BytesIO()
    schemaless_writer(out, parse_schema(SCHEMA), record)
    return out.getvalue()


def reader(spark, cluster_path, **options):
    r = (spark.read.format("kstream").option("cluster", cluster_path).option("subscribe", "orders")
         .option("valueFormat", "avro").option("avroSchema", json.dumps(SCHEMA)))
    for k, v in options.items():
        r = r.option(k, v)
    return r


def test_avro_values_become_typed_columns(spark, cluster_path, make_topic):
    make_topic("orders", 2)
    with Producer({"cluster": cluster_path}) as producer:
        for i in range(40):
            producer.produce("orders", encode(order(i)), key=b"k%d" % i, partition=i % 2)
    frame = reader(spark, cluster_path).load()
    assert frame.columns[:3] == ["key", "id", "customer"] and "value" not in frame.columns
    rows = {r.id: r for r in frame.collect()}
    assert sorted(rows) == list(range(40))
    r = rows[7]
    assert (r.customer, r.amount, r.status, r.tags, r.attrs, r.ship.city) == ("c7", 10.5, "PAID", ["t7"], {"n": 7},
                                                                              "city3")
    assert rows[3].customer is None and r.day == dt.date(2026, 11, 8)
    assert r.at.replace(tzinfo=None) == dt.datetime(2026, 11, 20, 10, 0, 7) or r.at.second == 7
    only = reader(spark, cluster_path, columns="id,status,offset").load()
    assert only.columns == ["id", "status", "offset"] and only.count() == 40


def test_bad_avro_input_says_what_is_wrong(spark, cluster_path, make_topic):
    make_topic("orders", 1)
    with Producer({"cluster": cluster_path}) as producer:
        producer.produce("orders", encode(order(1)))
        producer.produce("orders", b"\x01")  # not an Order
    with pytest.raises(Exception, match="offset 1: the value is not Avro"):
        reader(spark, cluster_path).load().collect()
    with pytest.raises(Exception, match="avroSchema go together"):
        spark.read.format("kstream").option("cluster", cluster_path).option("subscribe", "orders") \
            .option("valueFormat", "avro").load().collect()
    with pytest.raises(Exception, match="must be an Avro record"):
        reader(spark, cluster_path, avroSchema='"long"').load().collect()
