#!/usr/bin/env bash
# PySpark 4.3 needs a Java 17+ runtime. Use the one on PATH (or JAVA_HOME) when it is
# new enough; otherwise install Debian's openjdk-17-jre-headless when we may (root with
# apt-get), else say exactly what is missing and stop.
# The JVM reader's jar (jvm/build.sh) also needs javac 17+ and Maven: when one is missing,
# install Debian's openjdk-17-jdk-headless / maven when we may; if we cannot, say so in one line
# and go on (no jar is built, the Python reader serves every read, the JVM tests skip).
set -euo pipefail

ensure_javac() {
  if command -v javac >/dev/null 2>&1; then
    return 0
  fi
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "ensure-java: installing Debian's openjdk-17-jdk-headless (javac builds the kstream JVM reader)" >&2
    if apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jdk-headless >/dev/null; then
      return 0
    fi
  fi
  echo "ensure-java: no javac and no way to install one: no JVM reader jar; the Python reader is used" >&2
}

ensure_maven() {
  if command -v mvn >/dev/null 2>&1; then
    return 0
  fi
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "ensure-java: installing Debian's maven (it builds and tests the kstream JVM reader)" >&2
    if apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends maven >/dev/null; then
      return 0
    fi
  fi
  echo "ensure-java: no mvn and no way to install it: no JVM reader jar; the Python reader is used" >&2
}

java_major() {
  local java_bin="$1"
  "$java_bin" -version 2>&1 | awk -F'"' '/version/ {split($2, v, "."); print (v[1] == "1" ? v[2] : v[1]); exit}'
}

for candidate in "${JAVA_HOME:+$JAVA_HOME/bin/java}" "$(command -v java || true)"; do
  if [ -n "$candidate" ] && [ -x "$candidate" ]; then
    major=$(java_major "$candidate")
    if [ -n "$major" ] && [ "$major" -ge 17 ]; then
      ensure_javac
      ensure_maven
      exit 0
    fi
    echo "ensure-java: $candidate is Java $major; PySpark 4.3 needs Java 17 or newer" >&2
  fi
done

if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "ensure-java: installing Debian's openjdk-17-jre-headless (PySpark 4.3 needs Java 17)" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null
  ensure_javac
  ensure_maven
  exit 0
fi

cat >&2 <<MSG
ensure-java: no Java 17+ runtime found, and this user cannot install one.
PySpark 4.3 needs it. Install it, e.g. on Debian/Ubuntu:
    sudo apt-get install openjdk-17-jre-headless
or point JAVA_HOME at a JDK/JRE 17+, then run make again.
MSG
exit 1
