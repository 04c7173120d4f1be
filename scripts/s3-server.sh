#!/usr/bin/env bash
# Starts and stops a real S3 server (MinIO, built from source through the Go module proxy)
# on 127.0.0.1 for ioscope's tests and benchmarks, and builds the reference clients
# (s5cmd, warp). See docs/testing-s3.md.
#
# Usage: scripts/s3-server.sh start [STATE_DIR]   build MinIO once (cached), start it, create
#                                                  the bucket; idempotent (a healthy server is
#                                                  left alone)
#        scripts/s3-server.sh stop [STATE_DIR]    SIGTERM, wait; idempotent
#        scripts/s3-server.sh kill-server [STATE_DIR]     SIGKILL MinIO (tests of a killed server)
#        scripts/s3-server.sh restart-server [STATE_DIR]  start again: same port, data and
#                                                  credentials
#        scripts/s3-server.sh status [STATE_DIR]  exit 0 if up and healthy
#        scripts/s3-server.sh tools [s5cmd|warp]  build s5cmd and warp (or one), print their paths
# STATE_DIR defaults to /tmp/ioscope-s3. It holds data/ (MinIO's drive), env (mode 600:
# credentials, region, endpoint, bucket, for `source`), minio.pid, port, minio.log.
# Progress goes to stderr; `start` prints the env file's path as its last line on stdout.
# The credentials are random per `start` and appear only in the env file (and in MinIO's
# own environment), never on stdout or stderr.
# Binaries are cached in ${XDG_CACHE_HOME:-~/.cache}/ioscope/go-bin/NAME-VERSION/; the
# first MinIO build takes minutes (docs/testing-s3.md has the measured time).
set -euo pipefail

cmd="${1:-}"
STATE_DIR="${2:-/tmp/ioscope-s3}"

# Pinned versions. MinIO publishes no semver tags, so it is a pseudo-version of a commit
# on its master branch (2026-02-12), the newest the module proxy served when this was
# written. warp's newer tags (v1.1+) are not available from the module proxy here.
MINIO_MOD=github.com/minio/minio
MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c
S5CMD_MOD=github.com/peak/s5cmd/v2
S5CMD_VERSION=v2.3.0
WARP_MOD=github.com/minio/warp
WARP_VERSION=v1.0.0
# The checksum database does not answer for warp here; these are its hashes as the
# module proxy served them on 2026-11-25 (go mod download -json), so a changed module
# fails the build.
WARP_GOSUM="github.com/minio/warp $WARP_VERSION h1:woAI+71OyvDQoI6U0xeL9NvX2TxZHXpgGHexU4R6K9Y=
github.com/minio/warp $WARP_VERSION/go.mod h1:yWTYLLq1uGLSpOJvDmUmRc8LOS00I8UyiWbGurclCrM="

BUCKET=ioscope
REGION=us-east-1
FIRST_PORT=45000           # search upward from here for a free port (API, then console)
START_TIMEOUT=60           # seconds to wait for /minio/health/ready
STOP_TIMEOUT=20            # seconds between SIGTERM and SIGKILL

CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/ioscope/go-bin"
PID_FILE="$STATE_DIR/minio.pid"
PORT_FILE="$STATE_DIR/port"
ENV_FILE="$STATE_DIR/env"
LOG_FILE="$STATE_DIR/minio.log"
DATA_DIR="$STATE_DIR/data"

log() { echo "s3-server.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }

# Go: from PATH, else the usual install location.
find_go() {
  if ! command -v go >/dev/null 2>&1; then
    [ -x /usr/local/go/bin/go ] || die "go not found (install Go 1.24+ or put it on PATH)"
    PATH="/usr/local/go/bin:$PATH"
  fi
}

# Prints the path of binary NAME from module MOD@VERSION, building it first if the cache
# lacks it. The build goes to a temporary directory and is renamed into place, so an
# interrupted build never leaves a half-written binary that a later run would trust.
#
# `go install MOD@VERSION` is the way. It also asks the module proxy for the module's
# version list (to report a deprecation), and where the proxy refuses that list (here it
# does for s5cmd and warp) it gives up. Then the same module is built through a
# throwaway main module that requires exactly MOD VERSION: with no other requirement,
# minimal version selection picks the versions MOD's own go.mod names, and go install
# would refuse a module with replace directives anyway, so the result is the same build.
# GOSUM (optional) pins MOD's own hashes in the throwaway go.sum, for a module that the
# checksum database does not answer for (warp); everything else is checked against it.
go_bin() {
  local name="$1" mod="$2" version="$3" gosum="${4:-}" dir tmp start
  dir="$CACHE/$name-$version"
  if [ -x "$dir/$name" ]; then
    echo "$dir/$name"
    return
  fi
  find_go
  mkdir -p "$CACHE"
  tmp="$(mktemp -d "$CACHE/.build-$name.XXXXXX")"
  log "building $mod@$version with $(go version | cut -d' ' -f3) (the first MinIO build takes minutes) ..."
  start=$SECONDS
  export GOFLAGS=-mod=mod GOTOOLCHAIN=local
  if ! (cd "$tmp" && GOBIN="$tmp" nice -n 10 go install "$mod@$version" >"$tmp/install.log" 2>&1); then
    log "go install failed ($(grep -m1 -o 'reading https://[^:]*: [0-9]* [A-Za-z ]*' "$tmp/install.log" \
      || tail -n 1 "$tmp/install.log")); building $name through a throwaway module"
    mkdir "$tmp/mod"
    printf 'module ioscope.invalid/gobin\n\ngo 1.24\n\nrequire %s %s\n' "$mod" "$version" \
      > "$tmp/mod/go.mod"
    [ -z "$gosum" ] || printf '%s\n' "$gosum" > "$tmp/mod/go.sum"
    if ! (cd "$tmp/mod" && nice -n 10 go build -o "$tmp/$name" "$mod" >&2); then
      rm -rf "$tmp"
      die "go build $mod@$version failed"
    fi
    rm -rf "$tmp/mod"
  fi
  rm -f "$tmp/install.log"
  rm -rf "$dir"
  mv "$tmp" "$dir"
  log "built $name in $((SECONDS - start))s: $dir/$name"
  echo "$dir/$name"
}

# True while PID runs and is NAME (a recycled pid is not mistaken for ours; a zombie
# counts as gone).
alive() {
  local pid="$1" name="$2" stat
  [ -n "$pid" ] && [ -r "/proc/$pid/stat" ] || return 1
  stat="$(cat "/proc/$pid/stat" 2>/dev/null)" || return 1
  [[ "$stat" == *"(${name:0:15}) "* ]] || return 1
  [[ "$stat" != *") Z "* ]]
}

server_pid() { cat "$PID_FILE" 2>/dev/null || true; }
server_port() { cat "$PORT_FILE" 2>/dev/null || true; }

healthy() {
  local port="$1"
  [ -n "$port" ] && curl -fs -o /dev/null --max-time 2 "http://127.0.0.1:$port/minio/health/ready" 2>/dev/null
}

port_free() {
  # Nothing listens on 127.0.0.1:PORT (or on the wildcard address) already.
  ! ss -Htln "sport = :$1" 2>/dev/null | grep -q .
}

free_port() {
  local p="$1"
  while ! port_free "$p"; do
    p=$((p + 1))
    [ "$p" -lt 65000 ] || die "no free port from $1 up"
  done
  echo "$p"
}

need_tools() {
  local missing=()
  command -v curl >/dev/null || missing+=(curl)
  command -v ss >/dev/null || missing+=(iproute2)
  command -v openssl >/dev/null || missing+=(openssl)
  if [ ${#missing[@]} -gt 0 ]; then
    [ "$(id -u)" = 0 ] || die "missing: ${missing[*]} (install them)"
    log "installing ${missing[*]}"
    apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
  fi
}

# Launches MinIO on PORT with the credentials in ENV_FILE, detached, and waits for
# readiness. The web console is off (MINIO_BROWSER=off); its address is set to 127.0.0.1
# all the same, should a MinIO version start it regardless.
launch() {
  local minio="$1" port="$2" console pid i
  # shellcheck disable=SC1090
  source "$ENV_FILE"
  console="$(free_port $((port + 1)))"
  mkdir -p "$DATA_DIR"
  # setsid: MinIO gets its own session, so it outlives this script and a Ctrl-C in the
  # shell that ran `start`. The credentials travel in MinIO's environment only.
  MINIO_ROOT_USER="$AWS_ACCESS_KEY_ID" MINIO_ROOT_PASSWORD="$AWS_SECRET_ACCESS_KEY" \
  MINIO_REGION="$REGION" MINIO_BROWSER=off MINIO_UPDATE=off \
    setsid "$minio" server --quiet --anonymous \
      --address "127.0.0.1:$port" --console-address "127.0.0.1:$console" \
      "$DATA_DIR" >>"$LOG_FILE" 2>&1 < /dev/null 9>&- &
  pid=$!
  echo "$pid" > "$PID_FILE"
  for ((i = 0; i < START_TIMEOUT * 10; i++)); do
    healthy "$port" && return 0
    alive "$pid" minio || { tail -n 20 "$LOG_FILE" >&2; die "MinIO exited; log: $LOG_FILE"; }
    sleep 0.1
  done
  tail -n 20 "$LOG_FILE" >&2
  die "MinIO not ready after ${START_TIMEOUT}s; log: $LOG_FILE"
}

# Stops the server with SIG, waiting up to WAIT seconds, then SIGKILL.
stop_server() {
  local sig="$1" wait="$2" pid i
  pid="$(server_pid)"
  if ! alive "$pid" minio; then
    rm -f "$PID_FILE"
    return 0
  fi
  kill "-$sig" "$pid" 2>/dev/null || true
  for ((i = 0; i < wait * 10; i++)); do
    alive "$pid" minio || { rm -f "$PID_FILE"; return 0; }
    sleep 0.1
  done
  log "MinIO ($pid) still running after ${wait}s, sending SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    alive "$pid" minio || { rm -f "$PID_FILE"; return 0; }
    sleep 0.1
  done
  die "MinIO ($pid) does not die"
}

make_bucket() {
  local s5cmd="$1"
  # shellcheck disable=SC1090
  source "$ENV_FILE"
  if "$s5cmd" --endpoint-url "$IOSCOPE_S3_ENDPOINT" ls "s3://$BUCKET" >/dev/null 2>&1; then
    return 0
  fi
  "$s5cmd" --endpoint-url "$IOSCOPE_S3_ENDPOINT" mb "s3://$BUCKET" >&2 \
    || die "could not create bucket $BUCKET"
}

# One command at a time per STATE_DIR (two concurrent `start`s would pick the same port).
# MinIO must not inherit the lock's descriptor (see launch: 9>&-).
lock() {
  mkdir -p "$STATE_DIR"
  chmod 700 "$STATE_DIR"
  exec 9>"$STATE_DIR/lock"
  flock 9
}

case "$cmd" in
  start|stop|kill-server|restart-server) lock ;;
esac

case "$cmd" in
  start)
    need_tools
    pid="$(server_pid)"
    port="$(server_port)"
    if alive "$pid" minio && healthy "$port"; then
      log "already running and healthy (pid $pid, http://127.0.0.1:$port)"
      echo "$ENV_FILE"
      exit 0
    fi
    if alive "$pid" minio; then
      log "MinIO ($pid) is running but not healthy: stopping it first"
      stop_server TERM "$STOP_TIMEOUT"
    fi
    minio="$(go_bin minio "$MINIO_MOD" "$MINIO_VERSION")"
    s5cmd="$(go_bin s5cmd "$S5CMD_MOD" "$S5CMD_VERSION")"
    port="$(free_port "$FIRST_PORT")"
    echo "$port" > "$PORT_FILE"
    # New credentials every start: "ioscope" + 14 hex digits, and 40 characters.
    user="ioscope$(openssl rand -hex 7 | tr a-f A-F)"
    password="$(openssl rand -base64 30 | tr -d '/+=\n' | head -c 40)"
    (umask 077 && cat > "$ENV_FILE" <<EOF
export AWS_ACCESS_KEY_ID=$user
export AWS_SECRET_ACCESS_KEY=$password
export AWS_REGION=$REGION
export IOSCOPE_S3_ENDPOINT=http://127.0.0.1:$port
export IOSCOPE_S3_BUCKET=$BUCKET
EOF
    )
    chmod 600 "$ENV_FILE"
    start=$SECONDS
    launch "$minio" "$port"
    make_bucket "$s5cmd"
    log "MinIO up in $((SECONDS - start))s (pid $(server_pid), http://127.0.0.1:$port, bucket $BUCKET, data $DATA_DIR)"
    echo "$ENV_FILE"
    ;;
  stop)
    stop_server TERM "$STOP_TIMEOUT"
    log "stopped (data kept in $DATA_DIR)"
    ;;
  kill-server)
    pid="$(server_pid)"
    alive "$pid" minio || die "no MinIO running for $STATE_DIR"
    kill -KILL "$pid"
    for ((i = 0; i < 50; i++)); do alive "$pid" minio || break; sleep 0.1; done
    log "killed MinIO ($pid) with SIGKILL"
    ;;
  restart-server)
    [ -f "$ENV_FILE" ] && [ -f "$PORT_FILE" ] || die "no previous start in $STATE_DIR"
    pid="$(server_pid)"
    port="$(server_port)"
    if alive "$pid" minio && healthy "$port"; then
      log "already running and healthy (pid $pid)"
      exit 0
    fi
    stop_server TERM "$STOP_TIMEOUT"
    port_free "$port" || die "port $port is taken by another process"
    minio="$(go_bin minio "$MINIO_MOD" "$MINIO_VERSION")"
    start=$SECONDS
    launch "$minio" "$port"
    log "MinIO up again in $((SECONDS - start))s (pid $(server_pid), http://127.0.0.1:$port)"
    echo "$ENV_FILE"
    ;;
  status)
    pid="$(server_pid)"
    port="$(server_port)"
    if alive "$pid" minio && healthy "$port"; then
      log "running and healthy (pid $pid, http://127.0.0.1:$port)"
    else
      log "not running"
      exit 1
    fi
    ;;
  tools)
    # `tools s5cmd` or `tools warp` builds just that one.
    case "${2:-all}" in s5cmd|all) go_bin s5cmd "$S5CMD_MOD" "$S5CMD_VERSION" ;; esac
    case "${2:-all}" in warp|all) go_bin warp "$WARP_MOD" "$WARP_VERSION" "$WARP_GOSUM" ;; esac
    ;;
  *)
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
