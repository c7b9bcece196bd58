#!/usr/bin/env bash
# Debian's chromium for the console's end-to-end test (playwright-core drives /usr/bin/chromium).
# Idempotent: does nothing when the browser is already there.
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y chromium
test -x /usr/bin/chromium
/usr/bin/chromium --version
