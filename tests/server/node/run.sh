#!/usr/bin/env bash
# CTest entry for the node client tests (the openai npm client, the Vercel AI SDK): installs
# the pinned packages (npm ci, once per lockfile) into WORK_DIR, then runs the node tests there.
# Exit 77 (CTest: skipped) only when node/npm are missing or npm cannot install.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="${1:?usage: run.sh WORK_DIR}"

for tool in node npm; do
  if ! command -v "$tool" >/dev/null; then
    echo "SKIP: $tool is not installed (scripts/install-deps.sh --test installs nodejs and npm)"
    exit 77
  fi
done

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

cd "$work"
exec node --test *.test.mjs
