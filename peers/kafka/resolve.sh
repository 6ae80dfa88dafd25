#!/usr/bin/env bash
# Copy Apache Kafka's jars (pom.xml: the broker and its perf tools) into peers/kafka/lib/broker/
# and Spark's Kafka connector (connector/pom.xml) into peers/kafka/lib/connector/, from Maven
# Central through ~/.m2 (`mvn dependency:copy-dependencies`; nothing is built). lib/ is
# git-ignored; lib/VERSIONS says what was resolved. docs/KAFKA_PEER.md says what uses them.
# Each folder is filled in a temporary folder and moved into place whole: an old version's jar
# never lingers beside a new one, and a failed run leaves the previous jars.
# Usage: peers/kafka/resolve.sh
# Exit: 0 resolved; 3 no java/mvn, or Maven Central unreachable with the jars not in ~/.m2 (one
# line, no jars: the `kafka` tests skip); anything else is a real failure.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
lib="$here/lib"
for tool in java mvn; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "peers/kafka/resolve.sh: no $tool on PATH (scripts/ensure-java.sh installs it when root on Debian); no Kafka jars (the kafka tests skip)" >&2
    exit 3
  fi
done
mkdir -p "$lib"
log="$(mktemp)"
staging="$(mktemp -d "$lib/.staging.XXXXXX")"
trap 'rm -rf "$log" "$staging"' EXIT
for part in broker connector; do
  pom="$here/pom.xml"
  [ "$part" = connector ] && pom="$here/connector/pom.xml"
  if ! mvn -q -B -Dstyle.color=never -f "$pom" -Dlib.dir="$staging/$part" dependency:copy-dependencies >"$log" 2>&1; then
    if grep -qE "Could not (resolve|transfer)|Non-resolvable|Unknown host|Connection refused|Network is unreachable|offline mode" "$log"; then
      echo "peers/kafka/resolve.sh: Maven could not fetch the $part jars (no network to Maven Central and not in ~/.m2); no Kafka jars (the kafka tests skip)" >&2
      exit 3
    fi
    cat "$log" >&2
    exit 1
  fi
done
{
  echo "# resolved by peers/kafka/resolve.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  for part in broker connector; do
    for jar in "$staging/$part"/*.jar; do echo "$part/$(basename "$jar")"; done
  done
} >"$staging/VERSIONS"
for part in broker connector; do
  rm -rf "$lib/$part.old"
  [ -d "$lib/$part" ] && mv "$lib/$part" "$lib/$part.old"
  mv "$staging/$part" "$lib/$part"
  rm -rf "$lib/$part.old"
done
mv "$staging/VERSIONS" "$lib/VERSIONS"
echo "peers/kafka/resolve.sh: $(ls "$lib/broker" | wc -l) jars in $lib/broker ($(cd "$lib/broker" && ls kafka_2.13-*.jar)), $(ls "$lib/connector" | wc -l) in $lib/connector ($(cd "$lib/connector" && ls spark-sql-kafka-*.jar))"
