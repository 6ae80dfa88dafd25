#!/usr/bin/env bash
# The console's browser tests (tests/tools/browser) drive Debian's chromium with playwright; playwright's
# own browser download cannot work here, so it is never called. Use a chromium on PATH (or
# KSTREAM_CHROMIUM); otherwise install Debian's chromium package when we may (root with apt-get);
# if we cannot, say so in one line and go on: the browser tests then skip with one line.
set -euo pipefail

if [ -n "${KSTREAM_CHROMIUM:-}" ] && [ -x "$KSTREAM_CHROMIUM" ]; then
  exit 0
fi
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "ensure-browser: installing Debian's chromium (the console's browser tests drive it)" >&2
  if apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; then
    exit 0
  fi
fi
echo "ensure-browser: no chromium and no way to install one (root + apt-get): the browser tests will skip" >&2
