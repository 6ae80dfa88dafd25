package io.kstream.spark.read;

import java.io.Serializable;
import java.util.Objects;

/** A topic and partition number; ordered by topic, then partition. */
public final class TopicPartition implements Serializable, Comparable<TopicPartition> {
    public final String topic;
    public final int partition;

    public TopicPartition(String topic, int partition) {
        this.topic = topic;
        this.partition = partition;
    }

    @Override
    public int compareTo(TopicPartition o) {
        int c = topic.compareTo(o.topic);
        return c != 0 ? c : Integer.compare(partition, o.partition);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof TopicPartition && ((TopicPartition) o).topic.equals(topic)
            && ((TopicPartition) o).partition == partition;
    }

    @Override
    public int hashCode() {
        return Objects.hash(topic, partition);
    }

    @Override
    public String toString() {
        return topic + "-" + partition;
    }
}
