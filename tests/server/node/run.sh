#!/usr/bin/env bash
# CTest entry for the node client tests (the openai npm client, the Vercel AI SDK): installs
# the pinned packages (npm ci, once per lockfile) into WORK_DIR, then runs the node tests there.
# Exit 77 (CTest: skipped) only when node/npm are missing or npm cannot install.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="${1:?usage: run.sh WORK_DIR}"

bash "$here/../../support/npm_ci.sh" "$here" "$work" || exit $?
cd "$work"
exec node --test *.test.mjs
