#!/usr/bin/env bash
# Installs the Debian packages glass needs:
#   scripts/install-deps.sh          to build and run it (and the kernel benchmark)
#   scripts/install-deps.sh --test   and to build and run every test, fuzz target and
#                                    the load benchmark (GoogleTest, numpy, Chromium,
#                                    Firefox ESR, CJK fonts, clang with libFuzzer, Node.js
#                                    and npm)
# Idempotent: packages already present are left alone. Run as root (or with sudo).
set -euo pipefail

tests=0
for arg in "$@"; do
  case "$arg" in
    --test) tests=1 ;;
    *) echo "install-deps: unknown argument '$arg' (expected nothing, or --test)" >&2; exit 2 ;;
  esac
done

packages=(
  g++ cmake make pkg-config xz-utils
  nlohmann-json3-dev   # JSON: config.json, tokenizer.json, fixtures, CLI output
  libpcre2-dev         # tokenizer split regex with Unicode properties
  libutf8proc-dev      # NFC normalization; Unicode case mapping in chat templates
  libcli11-dev         # command-line parsing
  libcpp-httplib-dev   # HTTP server
  libhwy-dev           # Highway SIMD with runtime dispatch
  libbenchmark-dev     # kernel micro-benchmarks (built with everything else)
  python3-dev pybind11-dev python3-numpy  # the Python module (`import glass`, src/python)
)
if [ "$tests" -eq 1 ]; then
  packages+=(
    libgtest-dev libgmock-dev  # tests
    python3 python3-numpy      # test: .npy dumps load in numpy
    python3-pytest             # test: the Python module's tests
    chromium                   # test: the trace HTML page and the web UI render headless without console errors
    firefox-esr                # test: the web UI in Firefox too (puppeteer-core over WebDriver BiDi)
    fonts-wqy-microhei         # test: Chinese, Japanese, Korean tokens on that page have glyphs, not boxes (5 MB)
    clang libfuzzer-14-dev     # fuzzing (scripts/fuzz.sh): clang++-14 with libFuzzer, ASan and UBSan
  )
  # Server tests with the openai npm client, and the load benchmark. A Node.js from
  # elsewhere (e.g. NodeSource's nodejs, which bundles npm) is fine: only the commands count.
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    packages+=(nodejs npm)
  fi
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
