#!/usr/bin/env bash
# Starts and stops a real NFSv3 server (nfs-ganesha 4.3 with its VFS backend, plus
# rpcbind) for ioscope's tests and benchmarks. Both daemons run inside a private network
# namespace, reached from the root namespace over a veth pair, so rpcbind's 0.0.0.0:111
# and ganesha's ports never touch the host's own network stack. See docs/testing-nfs.md.
#
# Usage: scripts/nfs-ganesha.sh start       [STATE_DIR]  (stops any old one first)
#        scripts/nfs-ganesha.sh start-loop  [STATE_DIR]  (the same, exporting a loop-mounted ext4)
#        scripts/nfs-ganesha.sh stop        [STATE_DIR]  (idempotent; unmounts and detaches the loop)
#        scripts/nfs-ganesha.sh kill-server [STATE_DIR]  (SIGKILL ganesha only)
#        scripts/nfs-ganesha.sh restart-server [STATE_DIR]  (after kill-server: ganesha again,
#                                    same export and files, a new write verifier)
# STATE_DIR defaults to /tmp/ioscope-nfs; it holds the config, the logs, the pids and
# the exported directory (STATE_DIR/export). `start` prints the export directory and, as
# its last line on stdout, the NFS URL (nfs://10.77.0.2/export); progress goes to stderr.
# `start-loop` makes STATE_DIR/export a file system of its own, so the server's block I/O
# has its own device: an ext4 image (STATE_DIR/export.img, IOSCOPE_NFS_LOOP_SIZE bytes,
# default 1g) on a loop device, whose name (loop3) it prints before the URL.
# IOSCOPE_NFS_LEASE_S=N sets the server's NFSv4 lease to N seconds (ganesha's
# Lease_Lifetime, 1 to 120; default: ganesha's own, 60), for tests of lease renewal.
# Needs root (or sudo) for the namespace; installs its Debian packages when missing.
set -euo pipefail

cmd="${1:-}"
STATE_DIR="${2:-/tmp/ioscope-nfs}"

# Fixed names and addresses (documented in docs/testing-nfs.md). Only one server runs at
# a time: `start` always clears the namespace first, whatever STATE_DIR the old one used.
NETNS=ioscope-nfs          # the network namespace
VETH_HOST=ionfs0           # veth end in the root namespace, 10.77.0.1/24
VETH_NS=ionfs1             # veth end inside the namespace, 10.77.0.2/24
HOST_ADDR=10.77.0.1
SERVER_ADDR=10.77.0.2
NFS_PORT=2049
MNT_PORT=20048
LOOP_SIZE="${IOSCOPE_NFS_LOOP_SIZE:-1g}"   # start-loop: the image's size (truncate -s)
LEASE_S="${IOSCOPE_NFS_LEASE_S:-}"         # the NFSv4 lease in seconds (empty: ganesha's default)
# With Mount_Path_Pseudo = true, NFSv3 MOUNT takes the export's pseudo path, not its
# real directory (mounting STATE_DIR/export answers MNT3ERR_ACCES).
PSEUDO=/export
URL="nfs://$SERVER_ADDR$PSEUDO"
START_TIMEOUT=30           # seconds to wait for the server to answer NFSv3

log() { echo "nfs-ganesha.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }

# Run as root directly, otherwise through sudo.
SUDO=()
[ "$(id -u)" = 0 ] || SUDO=(sudo)
as_root() { "${SUDO[@]}" "$@"; }

# True while PID runs and is the program NAME. A zombie counts as gone: the daemons are
# orphaned when `start` exits and it is up to whoever adopts them to reap them. Checking
# the name keeps a recycled pid from being mistaken for (and killed as) ours.
alive() {
  local pid="$1" name="$2" stat
  [ -n "$pid" ] && [ -r "/proc/$pid/stat" ] || return 1
  stat="$(cat "/proc/$pid/stat" 2>/dev/null)" || return 1
  # Field 2 is "(comm)" (comm is cut to 15 characters), field 3 the state.
  [[ "$stat" == *"(${name:0:15}) "* ]] || return 1
  [[ "$stat" != *") Z "* ]]
}

# Sends SIG to PID (if it is still NAME) and waits up to WAIT seconds for it to go;
# then SIGKILL. Returns once the process is gone.
stop_pid() {
  local pid="$1" name="$2" sig="$3" wait="$4" i
  alive "$pid" "$name" || return 0
  as_root kill "-$sig" "$pid" 2>/dev/null || true
  for ((i = 0; i < wait * 10; i++)); do
    alive "$pid" "$name" || return 0
    sleep 0.1
  done
  log "$name ($pid) still running after ${wait}s, sending SIGKILL"
  as_root kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    alive "$pid" "$name" || return 0
    sleep 0.1
  done
  die "$name ($pid) does not die"
}

# Waits (up to 5 s, without failing) until PID, once NAME and now dead, has been reaped,
# so that `pgrep` run after `stop` finds nothing. The dead daemons' parent is whatever
# adopted them (init, or a subreaper); some inits reap only about once a second.
wait_reaped() {
  local pid="$1" name="$2" i
  [ -n "$pid" ] || return 0
  for ((i = 0; i < 50; i++)); do
    [[ "$(cat "/proc/$pid/stat" 2>/dev/null)" == *"(${name:0:15}) Z "* ]] || return 0
    sleep 0.1
  done
  log "$name ($pid) has exited but is not reaped yet (a zombie of pid $(awk '{print $4}' \
    "/proc/$pid/stat" 2>/dev/null || echo '?'))"
}

read_pid() { cat "$1" 2>/dev/null || true; }

install_missing() {
  local pkg missing=()
  for pkg in nfs-ganesha nfs-ganesha-vfs rpcbind libnfs-utils iproute2 e2fsprogs mount; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' ||
      missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing: ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

do_stop() {
  local pid gpid rpid i others=()
  gpid="$(read_pid "$STATE_DIR/ganesha.pid")"
  rpid="$(read_pid "$STATE_DIR/rpcbind.pid")"
  # Ganesha first (SIGTERM; it shuts down cleanly within a second), then rpcbind.
  stop_pid "$gpid" ganesha.nfsd TERM 10
  stop_pid "$rpid" rpcbind TERM 5
  if ip netns list 2>/dev/null | grep -Eq "^$NETNS( |\$)"; then
    # Anything else still inside the namespace (e.g. started with another STATE_DIR):
    # stop it by pid too, so deleting the namespace leaves no process behind.
    for pid in $(as_root ip netns pids "$NETNS" 2>/dev/null); do
      others+=("$pid" "$(cat "/proc/$pid/comm" 2>/dev/null || echo '?')")
      stop_pid "$pid" "${others[-1]}" TERM 10
    done
    as_root ip netns delete "$NETNS"
  fi
  # Deleting the namespace deletes both veth ends, but the kernel does it a moment later,
  # in the background: wait for the root end to go, so that a `start` right after does
  # not find it still there ("File exists"). Delete it ourselves after a setup that
  # failed half-way (the namespace gone but the pair not moved into it).
  for ((i = 0; i < 50; i++)); do
    ip link show "$VETH_HOST" >/dev/null 2>&1 || break
    sleep 0.1
  done
  if ip link show "$VETH_HOST" >/dev/null 2>&1; then
    as_root ip link delete "$VETH_HOST" 2>/dev/null || true
  fi
  wait_reaped "$gpid" ganesha.nfsd
  wait_reaped "$rpid" rpcbind
  for ((i = 0; i < ${#others[@]}; i += 2)); do
    wait_reaped "${others[i]}" "${others[i + 1]}"
  done
  rm -f "$STATE_DIR/ganesha.pid" "$STATE_DIR/rpcbind.pid"
  stop_loop
}

# Unmounts a loop-mounted export (ours, or a stale one from an interrupted start) and
# detaches every loop device still backed by our image. Only after the daemons are
# gone: ganesha's private mount namespace holds its own copy of the mount.
stop_loop() {
  local img="$STATE_DIR/export.img" dev i
  # Never in a directory this script did not make (see do_start).
  [ -e "$STATE_DIR/.ioscope-nfs" ] || return 0
  if mountpoint -q "$STATE_DIR/export" 2>/dev/null; then
    as_root umount "$STATE_DIR/export" 2>/dev/null || as_root umount -l "$STATE_DIR/export" ||
      die "cannot unmount $STATE_DIR/export"
  fi
  if [ -e "$img" ]; then
    for dev in $(as_root losetup -j "$img" -n -O NAME 2>/dev/null); do
      # A device still in use (a lazily unmounted file system) is detached by the kernel
      # when its last user goes (losetup -d sets autoclear).
      as_root losetup -d "$dev" 2>/dev/null || log "could not detach $dev (still in use?)"
    done
    for ((i = 0; i < 20; i++)); do
      [ -z "$(as_root losetup -j "$img" -n -O NAME 2>/dev/null)" ] && break
      sleep 0.1
    done
    rm -f "$img"
  fi
  rm -f "$STATE_DIR/loop.dev"
}

# Makes STATE_DIR/export an ext4 file system on a loop device of its own and records the
# device's name (loop3) in STATE_DIR/loop.dev. The image is a sparse file; mkfs
# initializes the inode tables and the journal now (not lazily in the background, which
# would write to the device during a measurement).
start_loop() {
  local img="$STATE_DIR/export.img" dev
  truncate -s "$LOOP_SIZE" "$img" || fail_start "cannot make a $LOOP_SIZE image $img (IOSCOPE_NFS_LOOP_SIZE)"
  dev="$(as_root losetup --find --show "$img")" || fail_start "losetup --find --show $img failed"
  echo "${dev#/dev/}" >"$STATE_DIR/loop.dev"
  as_root mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$dev" >/dev/null ||
    fail_start "mkfs.ext4 $dev failed"
  as_root mount -t ext4 "$dev" "$STATE_DIR/export" || fail_start "cannot mount $dev on $STATE_DIR/export"
  log "exporting an ext4 file system on $dev ($LOOP_SIZE image $img)"
}

# Prints the last lines of the ganesha log (and the daemons' stdout/stderr), stops
# whatever did start (the logs stay in STATE_DIR) and fails.
fail_start() {
  log "error: $*"
  for f in "$STATE_DIR/ganesha.log" "$STATE_DIR/ganesha.out" "$STATE_DIR/rpcbind.out"; do
    [ -s "$f" ] || continue
    echo "---- tail of $f" >&2
    tail -n 30 "$f" >&2
  done
  do_stop
  exit 1
}

do_start() {
  local loop="$1" t0 i rpc dev=""
  t0=$EPOCHREALTIME
  case "$(realpath -m "$STATE_DIR")/" in
    /run/* | /var/run/*) die "STATE_DIR must not be under /run (it is bound over /run)" ;;
  esac
  install_missing
  do_stop

  # The export directory is emptied on each start, but only in a STATE_DIR this script
  # made (it carries a marker), never in a directory that merely happens to exist.
  if [ -d "$STATE_DIR" ] && [ ! -e "$STATE_DIR/.ioscope-nfs" ] &&
    [ -n "$(ls -A "$STATE_DIR")" ]; then
    die "$STATE_DIR exists, is not empty and was not made by this script"
  fi
  # (as root: files written over NFS, and the daemons' own, may be root's)
  as_root rm -rf "$STATE_DIR/export" "$STATE_DIR/run" "$STATE_DIR/recovery"
  mkdir -p "$STATE_DIR/export" "$STATE_DIR/run" "$STATE_DIR/recovery"
  touch "$STATE_DIR/.ioscope-nfs"
  STATE_DIR="$(cd "$STATE_DIR" && pwd -P)"   # ganesha wants absolute paths
  if [ "$loop" = 1 ]; then
    start_loop
    dev="$(cat "$STATE_DIR/loop.dev")"
  fi
  # Any client uid may create files (the export squashes nobody; tests may run unprivileged).
  chmod 0777 "$STATE_DIR/export"
  rm -f "$STATE_DIR"/ganesha.log "$STATE_DIR"/ganesha.out "$STATE_DIR"/rpcbind.out
  local lease=""
  if [ -n "$LEASE_S" ]; then
    [[ "$LEASE_S" =~ ^[0-9]+$ ]] && [ "$LEASE_S" -ge 1 ] && [ "$LEASE_S" -le 120 ] ||
      die "IOSCOPE_NFS_LEASE_S=$LEASE_S: expected a number of seconds from 1 to 120"
    lease="  Lease_Lifetime = $LEASE_S;"
  fi

  cat >"$STATE_DIR/ganesha.conf" <<EOF
# Written by scripts/nfs-ganesha.sh; rewritten on every start.
NFS_CORE_PARAM {
  Bind_addr = $SERVER_ADDR;
  NFS_Port = $NFS_PORT;
  MNT_Port = $MNT_PORT;
  Protocols = 3, 4;
  Enable_NLM = false;
  Enable_RQUOTA = false;
  Enable_UDP = false;
  Mount_Path_Pseudo = true;
}
NFSV4 {
  Graceless = true;
  RecoveryBackend = fs;
  RecoveryRoot = $STATE_DIR/recovery;
  Only_Numeric_Owners = true;
$lease
}
NFS_KRB5 { Active_krb5 = false; }
EXPORT {
  Export_Id = 1;
  Path = $STATE_DIR/export;
  Pseudo = $PSEUDO;
  Access_Type = RW;
  Squash = No_Root_Squash;
  SecType = sys;
  Protocols = 3, 4;
  Transports = TCP;
  FSAL { Name = VFS; }
}
EOF

  # The namespace and the veth pair: root side $HOST_ADDR, namespace side $SERVER_ADDR.
  # A failure half-way is cleaned up (fail_start stops and deletes what exists).
  if ! { as_root ip netns add "$NETNS" &&
    as_root ip link add "$VETH_HOST" type veth peer name "$VETH_NS" &&
    as_root ip link set "$VETH_NS" netns "$NETNS" &&
    as_root ip addr add "$HOST_ADDR/24" dev "$VETH_HOST" &&
    as_root ip link set "$VETH_HOST" up &&
    as_root ip -n "$NETNS" addr add "$SERVER_ADDR/24" dev "$VETH_NS" &&
    as_root ip -n "$NETNS" link set "$VETH_NS" up &&
    as_root ip -n "$NETNS" link set lo up; }; then
    fail_start "could not set up network namespace $NETNS and veth $VETH_HOST/$VETH_NS"
  fi

  # Both daemons also get a private mount namespace in which STATE_DIR/run is bound over
  # /run: rpcbind's lock and its local socket (/run/rpcbind.sock, through which ganesha
  # registers) are file paths, not network ones, and would otherwise clash with a host
  # rpcbind. Each wrapper writes its own pid ($$), which `exec` hands to the daemon
  # (ip netns exec and unshare exec too), then runs the daemon in the foreground,
  # detached (setsid) with stdin and stdout away from the caller, so that
  # `$(scripts/nfs-ganesha.sh start)` returns.
  # shellcheck disable=SC2016  # $$ and $1.. expand in the wrapper shell
  local wrap='echo $$ >"$1" && mount --bind "$2" /run && shift 2 && exec "$@"'
  "${SUDO[@]}" setsid ip netns exec "$NETNS" unshare --mount --propagation private \
    sh -c "$wrap" wrap "$STATE_DIR/rpcbind.pid" "$STATE_DIR/run" \
    rpcbind -f </dev/null >"$STATE_DIR/rpcbind.out" 2>&1 9<&- &
  # rpcbind must own its socket before ganesha starts, or ganesha's registration fails.
  for ((i = 0; i < 50; i++)); do
    [ -S "$STATE_DIR/run/rpcbind.sock" ] && break
    sleep 0.1
  done
  [ -S "$STATE_DIR/run/rpcbind.sock" ] || fail_start "rpcbind did not start"

  start_ganesha
  wait_ready "$t0" "$dev"
}

# Starts ganesha.nfsd in the namespace on STATE_DIR's config, in the background, through
# the wrapper of do_start (its pid in STATE_DIR/ganesha.pid).
start_ganesha() {
  # shellcheck disable=SC2016  # $$ and $1.. expand in the wrapper shell
  local wrap='echo $$ >"$1" && mount --bind "$2" /run && shift 2 && exec "$@"'
  "${SUDO[@]}" setsid ip netns exec "$NETNS" unshare --mount --propagation private \
    sh -c "$wrap" wrap "$STATE_DIR/ganesha.pid" "$STATE_DIR/run" \
    ganesha.nfsd -F -f "$STATE_DIR/ganesha.conf" -L "$STATE_DIR/ganesha.log" \
    -p "$STATE_DIR/run/ganesha.pid" -N NIV_EVENT \
    </dev/null >>"$STATE_DIR/ganesha.out" 2>&1 9<&- &
}

# Waits until the server answers (started at T0, loop device DEV or empty), then prints
# what `start` prints.
wait_ready() {
  local t0="$1" dev="$2" i rpc
  # Ready means: rpcbind lists NFS 3 and MOUNT 3, and a real NFSv3 client (libnfs) can
  # mount the export and list it.
  for ((i = 0; i < START_TIMEOUT * 5; i++)); do
    # (The wrapper writes the pid file a moment after it is started.)
    if [ $i -ge 5 ] && ! alive "$(read_pid "$STATE_DIR/ganesha.pid")" ganesha.nfsd; then
      fail_start "ganesha.nfsd exited"
    fi
    rpc="$(timeout 5 rpcinfo -p "$SERVER_ADDR" 2>/dev/null || true)"
    if grep -Eq "^ *100003 +3 +tcp +$NFS_PORT " <<<"$rpc" &&
      grep -Eq "^ *100005 +3 +tcp +$MNT_PORT " <<<"$rpc" &&
      timeout 5 nfs-ls "$URL/?version=3" >/dev/null 2>&1; then
      log "NFSv3 server up in $(awk "BEGIN { printf \"%.1f\", $EPOCHREALTIME - $t0 }")s" \
        "(netns $NETNS, rpcbind 111, mountd $MNT_PORT, nfs $NFS_PORT)"
      printf 'IOSCOPE_NFS_URL=%s\nIOSCOPE_NFS_EXPORT_DIR=%s\n' "$URL" "$STATE_DIR/export" \
        >"$STATE_DIR/env"
      echo "export dir: $STATE_DIR/export"
      if [ -n "$dev" ]; then
        echo "IOSCOPE_NFS_LOOP_DEV=$dev" >>"$STATE_DIR/env"
        echo "loop device: $dev"
      fi
      echo "$URL"
      return 0
    fi
    sleep 0.2
  done
  fail_start "no NFSv3 answer from $URL within ${START_TIMEOUT}s"
}

# One server at a time, and one command at a time (tests may call this in parallel):
# every command holds a lock, shared by all STATE_DIRs like the namespace is. The
# daemons are started with the lock's fd closed, so they never hold it.
case "$cmd" in
  start | start-loop | stop | kill-server | restart-server)
    LOCK=/tmp/ioscope-nfs.lock
    [ -e "$LOCK" ] || : >"$LOCK"
    exec 9<"$LOCK"
    flock -w 120 9 || die "another scripts/nfs-ganesha.sh holds $LOCK for over 120 s"
    ;;
esac

case "$cmd" in
  start) do_start 0 ;;
  start-loop) do_start 1 ;;
  stop) do_stop ;;
  kill-server)
    # SIGKILL ganesha only: rpcbind, the namespace and rpcbind's (now stale) NFS/MOUNT
    # registrations stay, as after a real server crash. `start` or `stop` clean up.
    gpid="$(read_pid "$STATE_DIR/ganesha.pid")"
    stop_pid "$gpid" ganesha.nfsd KILL 5
    wait_reaped "$gpid" ganesha.nfsd
    ;;
  restart-server)
    # As a server that crashed comes back: the same namespace, config and exported files
    # (whatever reached them), a new process and so a new NFSv3 write verifier.
    STATE_DIR="$(cd "$STATE_DIR" && pwd -P)"
    alive "$(read_pid "$STATE_DIR/ganesha.pid")" ganesha.nfsd && die "ganesha.nfsd is running; kill-server first"
    ip netns list 2>/dev/null | grep -Eq "^$NETNS( |\$)" || die "no namespace $NETNS: use start"
    t0=$EPOCHREALTIME
    start_ganesha
    wait_ready "$t0" "$(cat "$STATE_DIR/loop.dev" 2>/dev/null || true)"
    ;;
  *)
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
