#!/usr/bin/env bash
# CTest entry for the web UI tests: installs the pinned puppeteer-core (npm ci, once per
# lockfile) into WORK_DIR, then runs browser.test.mjs there (the system Chromium;
# GLASS_BINARY names glass). markdown.test.mjs needs no packages: CTest runs it on its own
# (webui_markdown), also where no browser is installed.
# Exit 77 (CTest: skipped) only when node, npm or Chromium is missing or npm cannot install.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="${1:?usage: run.sh WORK_DIR}"

for tool in node npm; do
  if ! command -v "$tool" >/dev/null; then
    echo "SKIP: $tool is not installed (scripts/install-deps.sh --test installs nodejs and npm)"
    exit 77
  fi
done
chromium="${GLASS_CHROMIUM:-/usr/bin/chromium}"
if [ ! -x "$chromium" ]; then
  echo "SKIP: no Chromium at $chromium (scripts/install-deps.sh --test installs it; GLASS_CHROMIUM names another)"
  exit 77
fi

mkdir -p "$work"
cp "$here/package.json" "$here/package-lock.json" "$here"/*.mjs "$work/"
stamp="$work/node_modules/.glass-lock"
if ! cmp -s "$here/package-lock.json" "$stamp"; then
  # Concurrent runs (ctest -j) share the folder: one installs at a time.
  exec 9>"$work/.install-lock"
  flock 9
  if ! cmp -s "$here/package-lock.json" "$stamp"; then
    if ! (cd "$work" && npm ci --no-audit --no-fund --loglevel=error); then
      echo "SKIP: npm could not install the pinned packages (no registry access?); see the npm output above"
      exit 77
    fi
    cp "$here/package-lock.json" "$stamp"
  fi
  flock -u 9
fi

# The tests find the page's files here (markdown.js, the static checks, the fake API).
export GLASS_WEBUI_SRC="$here/../../src/webui"
export GLASS_WEBUI_SCREENSHOTS="${GLASS_WEBUI_SCREENSHOTS:-$work}"
cd "$work"
exec node --test browser.test.mjs
