# kstream: `make run` (quick start on ./data) and `make test` do all the set-up.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Spark's Python workers must run the virtualenv's interpreter.
export PYSPARK_PYTHON := $(abspath $(PY))
export PYSPARK_DRIVER_PYTHON := $(abspath $(PY))

.PHONY: install run run-cli test test-slow bench bench-jvm lint clean chaos compat jar web-assets study study-quick browser screenshots delta-spark kafka bench-check
JAR := src/kstream/jars/kstream-spark.jar
JAVA_SOURCES := $(shell find jvm/src -type f 2>/dev/null) jvm/pom.xml jvm/wheel_repo.py

$(STAMP): setup.cfg pyproject.toml scripts/ensure-java.sh
	bash scripts/ensure-java.sh
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# The JVM reader's jar (Maven, jvm/pom.xml, against the venv's pyspark jars; the bench classes go to
# jvm/target/kstream-spark-bench.jar). Without javac or mvn, or with Maven Central out of reach and an
# empty ~/.m2, jvm/build.sh says so in one line (exit 3) and builds nothing: the Python reader
# serves every read and the Java tests skip.
$(JAR): $(STAMP) $(JAVA_SOURCES) jvm/build.sh
	@bash jvm/build.sh $(PY) || test $$? -eq 3

jar: $(JAR)

# delta-spark's jars at the version jvm/delta-spark/pom.xml pins, into jvm/.delta-spark/<version>/
# (git-ignored) for tests/spark/test_offsets_table_from_spark.py, which skips without them. No
# release is built for Spark 4.3 yet: docs/GROUPS.md "Reading the offsets table from Spark".
delta-spark:
	mvn -q -B -Dstyle.color=never -f jvm/delta-spark/pom.xml package

# Apache Kafka 4.x (the broker and its perf tools) and Spark's Kafka connector, the peers of the
# benchmarks and the `kafka` tests (docs/KAFKA_PEER.md): peers/kafka/resolve.sh copies the jars the
# poms under peers/kafka/ pin from Maven Central (~/.m2) into peers/kafka/lib/ (git-ignored; ~64 MB,
# about 30 s the first time). Without java or mvn, or with Maven Central out of reach and the jars
# not in ~/.m2: one line (exit 3), no jars, and the `kafka` tests skip with one line.
KAFKA_LIB := peers/kafka/lib/VERSIONS
$(KAFKA_LIB): peers/kafka/pom.xml peers/kafka/connector/pom.xml peers/kafka/resolve.sh | $(STAMP)
	@bash peers/kafka/resolve.sh || test $$? -eq 3

kafka: $(KAFKA_LIB)

# The console's htmx / SSE extension / uPlot, from the npm registry, checked against
# src/kstream/tools/web/assets.lock. Unreachable registry: one line (exit 3), pages still serve.
web-assets: $(STAMP)
	@$(PY) scripts/vendor_web_assets.py || test $$? -eq 3

# Debian's chromium for the console's browser tests (tests/tools/browser, playwright from the dev extra).
# Cannot install it (not root, no apt-get): one line, and those tests skip with one line.
browser:
	@bash scripts/ensure-browser.sh

install: $(STAMP) $(JAR) $(KAFKA_LIB) web-assets browser

# The console's screenshots in docs/console/ (every page, light and dark, from a demo cluster).
screenshots: web-assets browser
	$(PY) scripts/console_screenshots.py --out docs/console

# The Spark quick start: events -> streaming aggregation -> topic, exactly once (cluster ./data, its
# checkpoint ./data/checkpoints/quickstart: a second run streams only its own events).
run: install
	$(VENV)/bin/spark-submit --properties-file conf/spark-defaults.conf \
		$$(test -f $(JAR) && echo --jars $(abspath $(JAR))) jobs/quickstart.py

# The same idea through the kstream CLI only (no Spark).
run-cli: $(STAMP)
	PATH="$(abspath $(VENV))/bin:$$PATH" bash jobs/quickstart_cli.sh

test: install
	$(PY) -m pytest -q --durations=30

test-slow: install
	$(PY) -m pytest -q -m slow

# Seeded fault rounds (power cut, SIGKILL, lost disk, EIO, ENOSPC, bit flips, zombies, ...):
# 20 per class, one table; a failing round prints the command that replays it.
chaos: $(STAMP) $(KAFKA_LIB) $(JAR)
	$(PY) -m tests.chaos.run --rounds 20

# confluent-kafka-python's broker-less unit tests run against kstream with the import swapped
# (docs/COMPAT.md says how to get them): make compat CONFLUENT_TESTS=path/to/their/tests
compat: $(STAMP)
	@test -n "$(CONFLUENT_TESTS)" || { echo "set CONFLUENT_TESTS to a directory of confluent-kafka-python's tests/test_*.py (docs/COMPAT.md)"; exit 2; }
	$(PY) scripts/confluent_compat.py $(CONFLUENT_TESTS) $(COMPAT_ARGS)

bench: $(STAMP)
	$(PY) -m pip install --quiet -e '.[dev,bench]'
	$(PY) -m bench.issue2

# The regression guard (not in make test): the headline ratios side by side in one run, against
# docs/bench-check/baseline.json (the last recorded run); names each figure that moved beyond the noise band
# and exits 1 when one got worse. BENCH_CHECK_ARGS=--record writes this run as the new baseline.
bench-check: $(STAMP)
	$(PY) -m bench.check $(BENCH_CHECK_ARGS)

# Per record against Apache Kafka (not in make test; needs `make kafka`): kstream produce()/poll() vs
# confluent-kafka -> one Kafka broker with its default durability and one with flush.messages=1, acks=1
# and acks=all, 1M x 100 B, 6 partitions, alternating, median of 5; ratios with each side's durability.
.PHONY: bench-kafka-records
bench-kafka-records: $(STAMP)
	$(PY) -m bench.issue2 --only kafka --records 1000000 --repeats 5

# The benchmark study (docs/STUDY.md): every scenario of conf/study.toml side by side with the peer,
# Apache Kafka (`make kafka`'s jars; confluent-kafka and Kafka's perf tools, at Kafka's default durability
# and at flush.messages=1), Tansu (secondary) and the machine's ceiling; JSON, CSV, tables and plots in
# docs/study/. Without Java or the Kafka jars the Kafka lines are skipped with one line.
study: $(STAMP)
	$(PY) -m pip install --quiet -e '.[dev,bench]'
	rm -rf docs/study/work
	$(VENV)/bin/kstream perf study conf/study.toml --out docs/study

# The whole study in a few minutes (CI smoke; figures too small to quote): into study-results/quick.
study-quick: $(STAMP)
	$(PY) -m pip install --quiet -e '.[dev,bench]'
	rm -rf study-results/quick
	$(VENV)/bin/kstream perf study conf/study.toml --quick --out study-results/quick

# The JVM reader vs Parquet vs the Python reader, and Real-time Mode latency (docs/BENCHMARKS.md, issue 14).
bench-jvm: install
	$(PY) -m bench.issue14 --repeats 5
	$(PY) -m bench.rtm_latency --rate 1000 --seconds 30
	$(PY) -m bench.rtm_latency --rate 10000 --seconds 30 --linger-ms 1

# Spark beside Apache Kafka (issue 21, docs/BENCHMARKS.md): the same records in a kstream topic and on a
# Kafka broker; batch read (JVM reader vs the connector), streaming ETL topic -> topic (kstream exactly
# once vs the connector's Kafka source -> Kafka sink) and micro-batch durations, alternating, median of 5.
.PHONY: bench-spark-kafka
bench-spark-kafka: install
	$(PY) -m bench.spark_vs_kafka --repeats 5

# Issue 27's speed check: this checkout (AFTER, default .) against BEFORE, alternating, median of 5
# (perf produce/consume and the Spark JVM batch read; bench/side_by_side.sh). Each checkout needs its
# jar for the Spark read (`make jar` here, `bash jvm/build.sh $(abspath $(PY))` in BEFORE).
.PHONY: bench-side-by-side
bench-side-by-side:
	@test -n "$(BEFORE)" || { echo "set BEFORE to the old checkout (git worktree add --detach ../before <rev>)"; exit 2; }
	BEFORE=$(abspath $(BEFORE)) AFTER=$(abspath $(or $(AFTER),.)) PY=$(abspath $(PY)) bash bench/side_by_side.sh

# Console page times on 1,000 partitions and 50 groups, TestClient and uvicorn (docs/BENCHMARKS.md, issue 12).
.PHONY: bench-console
bench-console: $(STAMP)
	$(PY) -m bench.console_pages --repeats 9

# ruff, mypy, and the layer rule (each layer imports only those below it; no import circle;
# no function-level import of a kstream module): scripts/check_layers.py, issue 27.
lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench scripts jvm
	$(PY) scripts/check_layers.py src
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache
