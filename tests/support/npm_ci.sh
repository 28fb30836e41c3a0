#!/usr/bin/env bash
# Shared by the node test runners (tests/server/node/run.sh, tests/webui/run.sh): copies the
# package files and the test scripts of SOURCE_DIR into WORK_DIR and installs the pinned
# packages there (npm ci, once per lockfile; concurrent runs take turns). Exits 77 (CTest:
# skipped) when node or npm is missing or npm cannot install.
#   npm_ci.sh SOURCE_DIR WORK_DIR
set -euo pipefail
source_dir="${1:?usage: npm_ci.sh SOURCE_DIR WORK_DIR}"
work="${2:?usage: npm_ci.sh SOURCE_DIR WORK_DIR}"

for tool in node npm; do
  if ! command -v "$tool" >/dev/null; then
    echo "SKIP: $tool is not installed (scripts/install-deps.sh --test installs nodejs and npm)"
    exit 77
  fi
done

mkdir -p "$work"
cp "$source_dir/package.json" "$source_dir/package-lock.json" "$source_dir"/*.mjs "$work/"
stamp="$work/node_modules/.glass-lock"
if ! cmp -s "$source_dir/package-lock.json" "$stamp"; then
  exec 9>"$work/.install-lock"
  flock 9
  if ! cmp -s "$source_dir/package-lock.json" "$stamp"; then
    if ! (cd "$work" && npm ci --no-audit --no-fund --loglevel=error); then
      echo "SKIP: npm could not install the pinned packages (no registry access?); see the npm output above"
      exit 77
    fi
    cp "$source_dir/package-lock.json" "$stamp"
  fi
  flock -u 9
fi
