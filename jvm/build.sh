#!/usr/bin/env bash
# Build src/kstream/jars/kstream-spark.jar with Maven (jvm/pom.xml) against the jars of the
# installed pyspark wheel: jvm/wheel_repo.py first checks that the pom's `provided` versions are
# the wheel's and writes them into jvm/.wheel-repo (nothing of Spark or Arrow is downloaded or
# bundled); Maven Central serves only the plugins and JUnit (cached in ~/.m2).
# `clean` first: a moved or deleted class must not linger in the jar. `package` also runs the JUnit tests that need no Python-written vectors (tests/jvm runs them all).
# Usage: jvm/build.sh [python]   (python: the interpreter whose pyspark to compile against)
# Exit: 0 built; 3 no javac/mvn, or Maven Central unreachable with an empty cache (one line, no
# jar: the Python reader serves every read); anything else is a real failure.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
python="${1:-${PYTHON:-python3}}"
out="$root/src/kstream/jars/kstream-spark.jar"
for tool in javac mvn; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "jvm/build.sh: no $tool on PATH (scripts/ensure-java.sh installs it when root on Debian); building no jar (the Python reader is used)" >&2
    exit 3
  fi
done
"$python" "$here/wheel_repo.py"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
if ! mvn -q -B -Dstyle.color=never -f "$here/pom.xml" clean package >"$log" 2>&1; then
  if grep -qE "Could not (resolve|transfer)|Non-resolvable|Unknown host|Connection refused|Network is unreachable|offline mode" "$log" \
      && ! grep -q "COMPILATION ERROR\|There are test failures" "$log"; then
    echo "jvm/build.sh: Maven could not fetch its plugins or JUnit (no network to Maven Central, empty ~/.m2); building no jar (the Python reader is used)" >&2
    exit 3
  fi
  cat "$log" >&2
  exit 1
fi
mkdir -p "$(dirname "$out")"
cp "$here/target/kstream-spark.jar" "$out.tmp"
mv "$out.tmp" "$out"
echo "jvm/build.sh: built $out"
