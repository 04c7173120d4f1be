#!/usr/bin/env bash
# Installs what the tests need and runs them all: formatting, lints, unit and
# integration tests (the real binary in temporary directories), the UI's data-shaping
# modules under node:test, browser tests driving Debian Chromium with playwright-core, and
# the NFSv3 client against a real nfs-ganesha in a network namespace, the s3 engine against
# a real MinIO (built with Go from the module proxy, cached), the smb engine against a real
# Samba (scripts/smb-server.sh), and the many-host lab: four
# ssh hosts and nfs-ganesha in network namespaces (needs root).
# Usage: scripts/test.sh        (from anywhere inside the repository)
set -euo pipefail
cd "$(dirname "$0")/.."

# Builds are kept outside the clone so repeated runs (and CI) reuse them. Every build of
# the binary has the eBPF samplers (--features ebpf): one set of features, no rebuilds.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/ioscope/target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

need_apt=()
command -v cc >/dev/null || need_apt+=(build-essential)
command -v sqlite3 >/dev/null || need_apt+=(sqlite3)
command -v mkfs.ext4 >/dev/null || need_apt+=(e2fsprogs)   # the dead-device test mounts an ext4 loop device
command -v losetup >/dev/null || need_apt+=(mount)   # and tests/blockdev.rs runs on loop devices
command -v node >/dev/null || need_apt+=(nodejs)
command -v npm >/dev/null || need_apt+=(npm)
command -v "${CHROMIUM:-/usr/bin/chromium}" >/dev/null || need_apt+=(chromium)
# The many-host lab (scripts/hosts-lab.sh): hosts are network namespaces with their own sshd.
command -v ip >/dev/null && command -v tc >/dev/null || need_apt+=(iproute2)
[ -x /usr/sbin/sshd ] || need_apt+=(openssh-server)
command -v ssh >/dev/null || need_apt+=(openssh-client)
command -v flock >/dev/null || need_apt+=(util-linux)
# deploy/ is checked by scripts/check-deploy.sh: systemd-analyze verify and a YAML parser.
command -v systemd-analyze >/dev/null || need_apt+=(systemd)
python3 -c 'import yaml' 2>/dev/null || need_apt+=(python3-yaml)
# tests/prometheus.rs: a real Prometheus scrapes `ioscope probe --listen` and `run --metrics`.
command -v prometheus >/dev/null || need_apt+=(prometheus)
# The eBPF samplers (cargo feature ebpf): C programs compiled with clang against the
# kernel's BTF (bpftool), linked with libbpf (libelf, zlib, found through pkg-config).
command -v clang >/dev/null || need_apt+=(clang)
command -v llvm-strip >/dev/null || need_apt+=(llvm)
command -v bpftool >/dev/null || [ -x /usr/sbin/bpftool ] || need_apt+=(bpftool)
command -v pkg-config >/dev/null || need_apt+=(pkg-config)
pkg-config --exists libelf 2>/dev/null || need_apt+=(libelf-dev)
pkg-config --exists zlib 2>/dev/null || need_apt+=(zlib1g-dev)
# The system-call sampler attaches to each timed call's own tracepoint through tracefs,
# which systemd mounts; a container may not have it.
[ -d /sys/kernel/tracing/events ] || [ "$(id -u)" != 0 ] || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
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

# Everything the tests need is installed above (and this runs as root for the mounts and
# the NFS server): a test that would skip for want of something fails instead.
# IOSCOPE_TEST_REQUIRE_ALL=0 scripts/test.sh lets such tests skip, saying why.
export IOSCOPE_TEST_REQUIRE_ALL="${IOSCOPE_TEST_REQUIRE_ALL:-1}"

# Every stage runs even when one before it failed (a failed stage must not hide the
# others); the failures are listed at the end, and any of them fails the script.
failures=()
run() {   # run NAME COMMAND...: runs it, and records NAME if it fails (never fails itself)
  local name=$1; shift
  if ! "$@"; then
    failures+=("$name")
    echo "!! failed: $name"
  fi
}
stop_servers() {
  scripts/nfs-ganesha.sh stop >/dev/null 2>&1 || true
  scripts/s3-server.sh stop >/dev/null 2>&1 || true
  scripts/smb-server.sh stop /tmp/ioscope-smb >/dev/null 2>&1 || true
  scripts/hosts-lab.sh stop >/dev/null 2>&1 || true
}

echo "== cargo fmt --check"
run "cargo fmt --check" cargo fmt --all -- --check
echo "== cargo clippy"
run "cargo clippy" cargo clippy --workspace --all-targets --locked --features ebpf -- -D warnings
echo "== cargo test"
# --no-fail-fast: every test binary runs, whichever fails first.
run "cargo test --workspace" cargo test --workspace --locked --features ebpf --no-fail-fast
echo "== overload: 256 threads on this machine's 2 CPUs, alone (other runs would starve it), release build"
if cargo build --release --locked --features ebpf; then
  run "overload (seconds_stay_seconds)" env IOSCOPE_RELEASE_BIN="$CARGO_TARGET_DIR/release/ioscope" \
    cargo test --test cli --locked --features ebpf -- --ignored seconds_stay_seconds
else
  failures+=("release build")
fi
echo "== deploy/: the systemd unit and the Kubernetes manifest (scripts/check-deploy.sh)"
run "deploy/" scripts/check-deploy.sh

nfs_stage() {
  # A test process that used the many-host lab stops it (and its NFS server) when it ends,
  # holding this lock until done: wait for that before starting an NFS server of our own.
  flock -w 120 /tmp/ioscope-hosts-lab.owner.lock true || true
  # A short NFSv4 lease, so that the NFSv4.1 tests can outlast it (NFSv3 has no lease).
  export IOSCOPE_NFS_LEASE_S=10
  local nfs_url
  if ! nfs_url=$(scripts/nfs-ganesha.sh start-loop | tail -n1) || [ -z "$nfs_url" ]; then
    failures+=("nfs: nfs-ganesha did not start"); return
  fi
  export IOSCOPE_NFS_URL="$nfs_url" IOSCOPE_NFS_EXPORT_DIR=/tmp/ioscope-nfs/export
  local loop_dev
  loop_dev=$(grep '^IOSCOPE_NFS_LOOP_DEV=' /tmp/ioscope-nfs/env) && export "$loop_dev"
  run "nfs: engine" cargo test -p ioscope-engine-nfs --locked -- --ignored
  run "nfs: cli" cargo test --test cli --locked --features ebpf -- --ignored nfs_engine_
  run "nfs: nfs41" cargo test --test nfs41 --locked --features ebpf -- --ignored --skip server_
  run "nfs: verify" cargo test --test verify --locked --features ebpf -- --ignored nfs_   # faults made on the server's file
  run "nfs: filebench" cargo test --test import_filebench --locked --features ebpf -- --ignored
  # The target-side probe (--probe local, eBPF and procfs) watching that server and its loop device;
  # its results file is kept for the browser test of the server worksheet (below).
  export IOSCOPE_SERVER_RESULTS="$CARGO_TARGET_DIR/probe-test-results.db"
  rm -f "$IOSCOPE_SERVER_RESULTS"
  run "nfs: probe" cargo test --test probe --locked --features ebpf -- --ignored
  run "nfs: server stopped" cargo test --test cli --locked --features ebpf -- --ignored nfs_server_stopped  # alone: it pauses the server
  # alone: they kill nfs-ganesha mid-run and restart it (scripts/nfs-ganesha.sh restart-server)
  run "nfs: journal" cargo test --test journal --locked --features ebpf -- --ignored --test-threads=1
  # alone, one at a time: they pause the server, and kill and restart it
  run "nfs: nfs41 server" cargo test --test nfs41 --locked --features ebpf -- --ignored --test-threads=1 server_
  run "nfs: server killed" cargo test --test cli --locked --features ebpf -- --ignored nfs_server_killed   # last: it kills the server
  scripts/nfs-ganesha.sh stop || true
}
s3_stage() {
  local s3_env
  if ! s3_env=$(scripts/s3-server.sh start | tail -n1) || [ ! -f "$s3_env" ]; then
    failures+=("s3: MinIO did not start"); return
  fi
  # shellcheck disable=SC1090 # the server's credentials, endpoint and bucket
  . "$s3_env"
  IOSCOPE_S5CMD=$(scripts/s3-server.sh tools s5cmd) || { failures+=("s3: s5cmd not built"); return; }
  export IOSCOPE_S5CMD IOSCOPE_S3_STATE_DIR=/tmp/ioscope-s3
  run "s3" cargo test --test s3 --locked --features ebpf -- --ignored --skip server_
  run "s3: server" cargo test --test s3 --locked --features ebpf -- --ignored server_   # last: it kills the server
  scripts/s3-server.sh stop || true
}
smb_stage() {
  if ! scripts/smb-server.sh start /tmp/ioscope-smb >/dev/null; then
    failures+=("smb: Samba did not start"); return
  fi
  # shellcheck disable=SC1091 # the server's URL and password file
  . /tmp/ioscope-smb/env
  export IOSCOPE_SMB_STATE_DIR=/tmp/ioscope-smb
  run "smb" cargo test --test smb --locked --features ebpf -- --ignored --skip server_ --test-threads=1
  run "smb: server" cargo test --test smb --locked --features ebpf -- --ignored --test-threads=1 server_   # last: pauses, then kills the server
  scripts/smb-server.sh stop /tmp/ioscope-smb || true
}
lab_stage() {
  # Each test process starts the lab once and stops it when it ends.
  run "lab" cargo test --test lab --locked --features ebpf -- --ignored
  # The link-bound verdict on a host whose link tc shapes to 100 Mbit/s, reading over NFS.
  run "lab: link_bound" cargo test --test link_bound --locked --features ebpf -- --ignored
  # ioscope across the lab's hosts: agents started over ssh, one run, faults.
  run "lab: hosts" cargo test --test hosts --locked --features ebpf -- --ignored
  flock -w 120 /tmp/ioscope-hosts-lab.owner.lock scripts/hosts-lab.sh stop || true
}

# The servers are stopped however this script ends.
trap stop_servers EXIT
echo "== NFSv3 and NFSv4.1 clients against a real nfs-ganesha exporting a loop-mounted ext4 (scripts/nfs-ganesha.sh)"
nfs_stage
echo "== the s3 engine against a real MinIO, read back with s5cmd (scripts/s3-server.sh)"
s3_stage
echo "== the smb engine against a real Samba, read back with smbclient (scripts/smb-server.sh)"
smb_stage
echo "== the README's examples as written (they start nfs-ganesha, MinIO and Samba themselves)"
run "README examples" cargo test --test readme --locked --features ebpf -- --ignored
echo "== many-host lab: four ssh hosts and nfs-ganesha in network namespaces (scripts/hosts-lab.sh)"
lab_stage
echo "== UI unit tests (node:test)"
run "UI unit tests" node --test ui-tests/unit/
echo "== UI browser tests (playwright-core, Chromium)"
if (cd ui-tests && npm ci --no-audit --no-fund --silent); then
  run "UI browser tests" env IOSCOPE_BIN="$CARGO_TARGET_DIR/debug/ioscope" \
    node --test --test-concurrency=1 ui-tests/browser/
else
  failures+=("UI: npm ci")
fi
if [ ${#failures[@]} -gt 0 ]; then
  echo "== ${#failures[@]} stage(s) failed:"
  printf '   %s\n' "${failures[@]}"
  exit 1
fi
echo "== all tests passed"
