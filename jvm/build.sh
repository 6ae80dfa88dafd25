#!/usr/bin/env bash
# Build src/kstream/jars/kstream-spark.jar: javac --release 17 against the jars of the
# installed pyspark wheel (nothing is downloaded, nothing of Arrow or Spark is bundled).
# Usage: jvm/build.sh [python]   (python: the interpreter whose pyspark to compile against)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
python="${1:-${PYTHON:-python3}}"
out="$root/src/kstream/jars/kstream-spark.jar"
if ! command -v javac >/dev/null 2>&1; then
  echo "jvm/build.sh: no javac on PATH; building no jar (the Python reader is used)" >&2
  exit 3
fi
jars="$("$python" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
find "$here/src" -name '*.java' > "$work/sources"
javac --release 17 -nowarn -Xlint:-options -encoding UTF-8 -cp "$jars/*" -d "$work/classes" @"$work/sources"
cp -r "$here/resources/." "$work/classes/"
mkdir -p "$(dirname "$out")"
jar --create --file "$out.tmp" -C "$work/classes" .
mv "$out.tmp" "$out"
echo "jvm/build.sh: built $out"
