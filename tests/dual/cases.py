"""The dual-run cases (tests/dual/run.py): which scripts run, with what, and what is normalised.

Every normalisation says why the two sides legitimately differ there; every recorded
difference names its entry in docs/COMPAT.md ("Side by side with Apache Kafka", the
``dual-N`` ids), where it says why kstream differs.
"""

from __future__ import annotations

from tests.dual.run import Case, Difference, Step

# Error texts are each library's own wording (kstream's str(err) is its message; docs/COMPAT.md,
# "The error model"): the code name is compared, the text is not.
ERROR_TEXT = (r'str="[^"]*"', 'str="…"')


def doc(number: int) -> str:
    return f"dual-{number}"


def setup(topic: str, partitions: int, records: int) -> Step:
    return Step("setup_topic.py", ("{connection}", topic, str(partitions), str(records)), compare=False)


# A broker's address: Kafka's is host:port; kstream's brokers are log dirs, whose host is the
# dir's path and port -1 (docs/COMPAT.md, "log dirs play the brokers"). Node ids are compared.
NODE_ADDRESS = (r"\{connection\}/\S+:-1 ", "{connection} ")


def script(name: str, *normalise: tuple[str, str], differences: tuple[Difference, ...] = ()) -> Case:
    """A scenario of tests/dual/scripts: one step, ``<script> {connection} {topic}``."""
    return Case(name, (Step(f"{name}.py", ("{connection}", "{topic}")),), normalise=(ERROR_TEXT, *normalise),
                differences=differences)


EXAMPLES = (
    Case("example_producer", (
        setup("{topic}", 2, 0),
        Step("examples/producer.py", ("{connection}", "{topic}"), stdin="one\ntwo\nthree\n", stderr=True),
        Step("read_topic.py", ("{connection}", "{topic}"), sort=True),
    ), normalise=(
        # An unkeyed record's partition is the partitioner's free choice (librdkafka: random, sticky
        # per batch; kstream: sticky), and so are the offsets within it: compared as P and N.
        (r"\[\d+\] @ \d+", "[P] @ N"),
        (r"^  \d+ \d+ None", "  P N None"),
    )),
    Case("example_consumer", (
        setup("{topic}", 2, 6),
        Step("examples/consumer.py", ("{connection}", "{topic}-g", "{topic}"), interrupt_when=r"b'value-",
             interrupt_count=6, sort=True),
    )),
    Case("example_get_watermark_offsets", (
        setup("{topic}", 3, 7),
        Step("examples/get_watermark_offsets.py", ("{connection}", "{topic}-g", "{topic}")),
        Step("examples/consumer.py", ("{connection}", "{topic}-g", "{topic}"), interrupt_when=r"b'value-",
             interrupt_count=7, compare=False),
        Step("examples/get_watermark_offsets.py", ("{connection}", "{topic}-g", "{topic}")),
    )),
    Case("example_adminapi", (
        Step("examples/adminapi.py", ("{connection}", "create_topics", "{topic}", "{topic}-b")),
        Step("examples/adminapi.py", ("{connection}", "create_topics", "{topic}")),
        Step("examples/adminapi.py", ("{connection}", "create_partitions", "{topic}", "4")),
        Step("examples/adminapi.py", ("{connection}", "describe_topics", "0", "{topic}")),
        Step("examples/adminapi.py", ("{connection}", "list_offsets", "READ_UNCOMMITTED", "{topic}", "0",
                                      "EARLIEST", "{topic}", "3", "LATEST")),
        Step("examples/adminapi.py", ("{connection}", "alter_consumer_group_offsets", "{topic}-g",
                                      "{topic}", "0", "0")),
        Step("examples/adminapi.py", ("{connection}", "list_consumer_group_offsets", "{topic}-g")),
        Step("examples/adminapi.py", ("{connection}", "delete_consumer_groups", "{topic}-g")),
        Step("examples/adminapi.py", ("{connection}", "incremental_alter_configs", "topic", "{topic}",
                                      "retention.ms=SET:7200000")),
        Step("examples/adminapi.py", ("{connection}", "delete_topics", "{topic}-b")),
    ), normalise=(
        ERROR_TEXT,
        NODE_ADDRESS,
        # Topic ids are random on both sides.
        (r"^Topic id {15}: \S+", "Topic id               : ID"),
    ), slow=True, differences=(
        Difference(doc(2),
                   r'^Failed to create topic \{topic\}: KafkaError\{code=TOPIC_ALREADY_EXISTS,val=36,str="…"\}$',
                   r"^Failed to create topic \{topic\}: topic '\{topic\}' already exists.*$"),
    )),
    Case("example_context_manager", (
        Step("examples/context_manager_example.py", ("{connection}",)),
    # The example's fixed topic and group names are made the run's own, so that a second run on
    # the same broker starts clean, as the first (kstream's side gets a fresh cluster each time).
    ), replace=(('"context-manager-example"', '"{topic}"'),
                ('"context-manager-example-group"', '"{topic}-g"'))),
    Case("example_eos_transactions", (
        setup("{topic}", 1, 250),
        setup("{topic}-out", 1, 0),
        Step("examples/eos_transactions.py", ("-b", "{connection}", "-t", "{topic}", "-o", "{topic}-out",
                                              "-g", "{topic}-g")),
        Step("examples/eos_transactions.py", ("-b", "{connection}", "-t", "{topic}", "-o", "{topic}-out",
                                              "-g", "{topic}-g")),
        Step("read_topic.py", ("{connection}", "{topic}-out", "read_committed")),
    ), slow=True),
)

SCENARIOS = (
    script("key_order", differences=(
        Difference(doc(1), r"^keys per partition \(sorted\): \[1, 2, 2\]$",
                   r"^keys per partition \(sorted\): \[0, 2, 3\]$"),
    )),
    script("idempotence"),
    # Kafka writes a transaction's markers after commit/abort_transaction() returned (the
    # coordinator's WriteTxnMarkers), so the plain record written right after the abort may land
    # before or after the abort marker; kstream's marker is written before abort returns
    # (docs/COMPAT.md, dual-3): the plain record's offset is compared as N.
    script("transactions", (r"\d+:plain-3", "N:plain-3")),
    script("transaction_killed"),
    script("transaction_timeout"),
    script("group_rebalance"),
    script("offsets_for_times"),
    script("delete_records", differences=(
        Difference(doc(4), r"^delete_records before 4: low watermark 4\n  watermarks \(4, 10\); first record read "
                           r"from the beginning: \(4, 'value-4'\)\ndelete_records before -1: low watermark 10\n"
                           r"  watermarks \(10, 10\); first record read from the beginning: None$",
                   r"^delete_records before 4: low watermark 0\n  watermarks \(0, 10\); first record read "
                   r"from the beginning: \(0, 'value-0'\)\ndelete_records before -1: low watermark 0\n"
                   r"  watermarks \(0, 10\); first record read from the beginning: \(0, 'value-0'\)$"),
    )),
    script("seek"),
    script("list_offsets"),
    script("topic_configs", differences=(
        Difference(doc(5), r"^  max.message.bytes = default \[DEFAULT_CONFIG, default=True, read-only=False\]$",
                   r"^  max.message.bytes: not described$"),
        Difference(doc(6), r"^  min.insync.replicas = 1 \[DYNAMIC_DEFAULT_BROKER_CONFIG, default=False, "
                           r"read-only=False\]$",
                   r"^  min.insync.replicas = default \[DEFAULT_CONFIG, default=True, read-only=False\]$"),
    )),
)

CASES = {case.name: case for case in (*EXAMPLES, *SCENARIOS)}
