#!/usr/bin/env bash
# CTest entry for the web UI tests: installs the pinned puppeteer-core (npm ci, once per
# lockfile) into WORK_DIR, then runs browser.test.mjs there (the system Chromium;
# GLASS_BINARY names glass). markdown.test.mjs needs no packages: CTest runs it on its own
# (webui_markdown), also where no browser is installed.
# Exit 77 (CTest: skipped) only when node, npm or Chromium is missing or npm cannot install.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="${1:?usage: run.sh WORK_DIR}"

chromium="${GLASS_CHROMIUM:-/usr/bin/chromium}"
if [ ! -x "$chromium" ]; then
  echo "SKIP: no Chromium at $chromium (scripts/install-deps.sh --test installs it; GLASS_CHROMIUM names another)"
  exit 77
fi

bash "$here/../support/npm_ci.sh" "$here" "$work" || exit $?

# The tests find the page's files here (markdown.js, the static checks, the fake API).
export GLASS_WEBUI_SRC="$here/../../src/webui"
export GLASS_WEBUI_SCREENSHOTS="${GLASS_WEBUI_SCREENSHOTS:-$work}"
cd "$work"
exec node --test browser.test.mjs
