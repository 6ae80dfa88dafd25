"""The AdminClient's calls, one module per family; ``kstream.admin`` is their public face
(confluent-kafka's ``confluent_kafka.admin``)."""
