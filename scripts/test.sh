#!/usr/bin/env bash
# Installs what the tests need and runs them all: formatting, lints, unit and
# integration tests (the real binary in temporary directories).
# Usage: scripts/test.sh        (from anywhere inside the repository)
set -euo pipefail
cd "$(dirname "$0")/.."

# Builds are kept outside the clone so repeated runs (and CI) reuse them.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/ioscope/target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

need_apt=()
command -v cc >/dev/null || need_apt+=(build-essential)
command -v sqlite3 >/dev/null || need_apt+=(sqlite3)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "== installing: ${need_apt[*]}"
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else sudo apt-get update -qq && sudo apt-get install -y -qq "${need_apt[@]}" >/dev/null; fi
fi
if ! command -v cargo >/dev/null; then
  echo "== installing Rust (rustup)"
  curl -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal -c rustfmt,clippy
  . "$HOME/.cargo/env"
fi
rustup component add rustfmt clippy >/dev/null 2>&1 || true

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== cargo test"
cargo test --workspace --locked
echo "== all tests passed"
