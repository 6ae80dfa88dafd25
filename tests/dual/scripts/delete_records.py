"""AdminClient.delete_records(): moving a partition's log start forward.

    delete_records.py <bootstrap> <topic>

Ten records to one partition; delete the records before offset 4, then all records
(OFFSET_END, -1); after each: the result's low watermark, the watermarks a consumer sees,
and the first record a consumer reading from the beginning gets.
"""

import sys

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def first_record(bootstrap, topic):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-g", "enable.auto.commit": False,
                         "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    msg = consumer.poll(5)  # a record, or the end of the partition when it holds none
    if msg is not None and msg.error():
        msg = None
    low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=5, cached=False)
    consumer.close()
    first = None if msg is None else (msg.offset(), msg.value().decode())
    print(f"  watermarks ({low}, {high}); first record read from the beginning: {first}")


def main(bootstrap, topic):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(10)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(10):
        producer.produce(topic, value=f"value-{i}")
    producer.flush(10)
    first_record(bootstrap, topic)

    for before in (4, OFFSET_END):
        [future] = admin.delete_records([TopicPartition(topic, 0, before)]).values()
        print(f"delete_records before {before}: low watermark {future.result(10).low_watermark}")
        first_record(bootstrap, topic)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
