"""AdminClient.list_offsets() with every OffsetSpec, under both isolation levels.

    list_offsets.py <bootstrap> <topic>

Five records with create times 1000 ... 5000 ms (given, so nothing depends on the clock),
record 2 the newest (9000), then a transaction of 2 records left open. Asked with
read_uncommitted and read_committed: earliest, latest (the high watermark, or the last
stable offset), max_timestamp, and for_timestamp before, on and after the records.
The transaction is aborted at the end.
"""

import sys

from confluent_kafka import IsolationLevel, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

TIMESTAMPS = [1000, 2000, 9000, 4000, 5000]


def main(bootstrap, topic):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(10)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i, timestamp in enumerate(TIMESTAMPS):
        producer.produce(topic, value=str(i), timestamp=timestamp)
    producer.flush(10)

    open_transaction = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic}-tx"})
    open_transaction.init_transactions(10)
    open_transaction.begin_transaction()
    for timestamp in (6000, 7000):
        open_transaction.produce(topic, value="in a transaction", timestamp=timestamp)
    open_transaction.flush(10)

    specs = {"earliest": OffsetSpec.earliest(), "latest": OffsetSpec.latest(),
             "max_timestamp": OffsetSpec.max_timestamp(), "for_timestamp(0)": OffsetSpec.for_timestamp(0),
             "for_timestamp(2000)": OffsetSpec.for_timestamp(2000),
             "for_timestamp(4500)": OffsetSpec.for_timestamp(4500),
             "for_timestamp(6500)": OffsetSpec.for_timestamp(6500),
             "for_timestamp(10000)": OffsetSpec.for_timestamp(10000)}
    for isolation in (IsolationLevel.READ_UNCOMMITTED, IsolationLevel.READ_COMMITTED):
        print(isolation.name)
        for name, spec in specs.items():
            futures = admin.list_offsets({TopicPartition(topic, 0): spec}, isolation_level=isolation,
                                         request_timeout=10)
            try:
                info = futures[TopicPartition(topic, 0)].result()
                print(f"  {name}: offset {info.offset}, timestamp {info.timestamp}")
            except Exception as err:
                print(f"  {name}: {type(err).__name__} {err.args[0].name()}")
    open_transaction.abort_transaction(10)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
