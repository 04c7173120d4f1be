#!/usr/bin/env bash
# Client-choice benchmark for the s3 engine: starts the MinIO test server if it is not
# running (scripts/s3-server.sh start), builds bench/s3client in release mode and runs it
# against the server. Prints a markdown table; see bench/results/*-s3client.md.
#
# Usage: bench/s3client/run.sh [s3client-bench options]
#   e.g. bench/s3client/run.sh --requests 20000 --depth 4 --rounds 3 --stacks hyper,sdk
# Environment: IOSCOPE_S3_STATE_DIR (default /tmp/ioscope-s3), CARGO_TARGET_DIR (default
# ~/.cache/ioscope/target-s3client).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
state="${IOSCOPE_S3_STATE_DIR:-/tmp/ioscope-s3}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/ioscope/target-s3client}"
export CARGO_INCREMENTAL=0

env_file="$("$repo/scripts/s3-server.sh" start "$state" | tail -n 1)"
# shellcheck disable=SC1090
source "$env_file"

nice -n 10 cargo build --release --locked --manifest-path "$here/Cargo.toml" >&2
exec "$CARGO_TARGET_DIR/release/s3client-bench" --server-pid "$(cat "$state/minio.pid")" "$@"
