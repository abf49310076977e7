#!/usr/bin/env bash
# Installs the headless browser the report's browser test (test/e2e/report-browser.test.ts) drives:
# Debian's `chromium` package at /usr/bin/chromium. Idempotent: does nothing when it is already there.
# playwright-core (the driver) is a devDependency, installed by `npm ci`; it downloads no browser.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  echo "chromium present: $(/usr/bin/chromium --version 2>/dev/null || echo /usr/bin/chromium)"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-chromium: /usr/bin/chromium is missing and apt-get is not available; the browser test will skip" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "install-chromium: not root and no sudo; cannot install chromium" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends chromium
/usr/bin/chromium --version
