#!/usr/bin/env bash
# Starts and stops a real SMB server (Samba's smbd, Debian samba 4.17) for ioscope's tests
# and benchmarks. It listens on the loopback interface only, on a high port, and shares
# one directory, STATE_DIR/share, as `ioscope` to the user `ioscope`. See docs/testing-smb.md.
#
# Usage: scripts/smb-server.sh start          [STATE_DIR]  (idempotent: a running server is kept)
#        scripts/smb-server.sh stop           [STATE_DIR]  (idempotent; keeps STATE_DIR and its files)
#        scripts/smb-server.sh kill-server    [STATE_DIR]  (SIGKILL smbd and all its processes)
#        scripts/smb-server.sh restart-server [STATE_DIR]  (after kill-server: smbd again, same
#                                              port, password, share and files)
# STATE_DIR defaults to /tmp/ioscope-smb. It holds smb.conf, every directory smbd keeps state
# in, the log (smbd.log), the pid (smbd.pid), the port (port), the share (share/), the
# password of the SMB user `ioscope` (password, mode 600, the password alone, no newline),
# an smbclient authentication file (smbclient.auth, mode 600) and STATE_DIR/env (mode 600):
#   export IOSCOPE_SMB_URL=smb://ioscope@127.0.0.1:PORT/ioscope IOSCOPE_SMB_PASSWORD_FILE=...
# `start` and `restart-server` print the URL as their last line on stdout; progress goes to
# stderr. The port is the first one free from 44545 upward, and is kept across restarts.
# Needs root (or sudo): it installs samba, smbclient and libsmbclient-dev when missing,
# creates the system user `ioscope` when missing, and runs smbd (which runs as root).
set -euo pipefail

cmd="${1:-}"
STATE_DIR="${2:-/tmp/ioscope-smb}"

SHARE=ioscope              # the share's name
SMB_USER=ioscope           # the SMB user, also a (system) Unix user: smbd acts as it on files
FIRST_PORT=44545           # ports are tried from here upward ...
LAST_PORT=44644            # ... to here
START_TIMEOUT=30           # seconds to wait for the server to answer
LOCK=/tmp/ioscope-smb-server.lock

log() { echo "smb-server.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }

# Run as root directly, otherwise through sudo.
SUDO=()
[ "$(id -u)" = 0 ] || SUDO=(sudo)
as_root() { "${SUDO[@]}" "$@"; }

read_pid() { cat "$1" 2>/dev/null || true; }

# True while PID runs (not a zombie) and its name starts with "smbd". Checking the name
# keeps a recycled pid from being mistaken for (and killed as) ours.
alive() {
  local pid="$1" stat
  [ -n "$pid" ] && [ -r "/proc/$pid/stat" ] || return 1
  stat="$(cat "/proc/$pid/stat" 2>/dev/null)" || return 1
  [[ "$stat" == *"(smbd"*") "* ]] || return 1
  [[ "$stat" != *") Z "* ]]
}

# The pids of every live process in smbd's process group (smbd is started with setsid, so
# the group is its own): the main smbd, one smbd per client connection, smbd-notifyd,
# smbd-cleanupd, and samba-dcerpcd and its rpcd_* helpers if smbd started them.
group_pids() {
  local leader="$1" f stat rest st pgrp
  [ -n "$leader" ] || return 0
  for f in /proc/[0-9]*/stat; do
    stat="$(cat "$f" 2>/dev/null)" || continue
    rest="${stat##*) }"            # fields from 3 on: state ppid pgrp ...
    read -r st _ pgrp _ <<<"$rest"
    [ "$pgrp" = "$leader" ] && [ "$st" != Z ] || continue
    case "$stat" in
      *"(smbd"* | *"(samba-dcerpcd)"* | *"(rpcd_"*) f="${f#/proc/}"; echo "${f%/stat}" ;;
    esac
  done
}

# Waits up to WAIT seconds for the group of LEADER to be empty; returns 1 if it is not.
wait_group_gone() {
  local leader="$1" wait="$2" i
  for ((i = 0; i < wait * 10; i++)); do
    [ -z "$(group_pids "$leader")" ] && return 0
    sleep 0.1
  done
  return 1
}

kill_group() {
  local leader="$1" pid
  for pid in $(group_pids "$leader"); do
    as_root kill -KILL "$pid" 2>/dev/null || true
  done
  wait_group_gone "$leader" 5 || die "smbd processes of group $leader do not die: $(group_pids "$leader" | tr '\n' ' ')"
}

install_missing() {
  local pkg missing=()
  for pkg in samba smbclient libsmbclient-dev iproute2 util-linux passwd; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' ||
      missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing: ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

# True if something listens on TCP port P on any address.
port_in_use() {
  [ -n "$(ss -Hltn "sport = :$1" 2>/dev/null)" ]
}

pick_port() {
  local p saved
  saved="$(cat "$STATE_DIR/port" 2>/dev/null || true)"
  if [[ "$saved" =~ ^[0-9]+$ ]] && ! port_in_use "$saved"; then
    echo "$saved"
    return 0
  fi
  for ((p = FIRST_PORT; p <= LAST_PORT; p++)); do
    port_in_use "$p" || { echo "$p"; return 0; }
  done
  die "no free TCP port from $FIRST_PORT to $LAST_PORT"
}

url() { echo "smb://$SMB_USER@127.0.0.1:$(cat "$STATE_DIR/port")/$SHARE"; }

# True if smbclient can log in to the share and list it.
answers() {
  timeout 5 smbclient -p "$(cat "$STATE_DIR/port")" "//127.0.0.1/$SHARE" \
    -A "$STATE_DIR/smbclient.auth" -c ls >/dev/null 2>&1
}

write_conf() {
  local port="$1" s="$STATE_DIR"
  cat >"$s/smb.conf" <<EOF
# Written by scripts/smb-server.sh on every start; every path smbd writes is under $s.
[global]
  # Loopback only, on a high port, no NetBIOS: nothing reaches this server from outside.
  interfaces = lo
  bind interfaces only = yes
  smb ports = $port
  disable netbios = yes
  server role = standalone server
  workgroup = WORKGROUP
  server min protocol = SMB2_02
  server max protocol = SMB3_11
  map to guest = never
  passdb backend = tdbsam:$s/private/passdb.tdb
  lock directory = $s/lock
  state directory = $s/state
  cache directory = $s/cache
  pid directory = $s/run
  private dir = $s/private
  binddns dir = $s/bind-dns
  ncalrpc dir = $s/ncalrpc
  log file = $s/log/log.%m
  usershare path = $s/usershares
  # No printers (their defaults read /etc/printcap and start spoolss).
  load printers = no
  printing = bsd
  printcap name = /dev/null
  disable spoolss = yes

[$SHARE]
  path = $s/share
  read only = no
  valid users = $SMB_USER
EOF
}

# Starts smbd on STATE_DIR's config in the background, detached (setsid: its own session
# and process group, so kill-server finds all its processes) with stdin and stdout away
# from the caller, so that `$(scripts/smb-server.sh start)` returns. The wrapper writes its
# pid ($$), which `exec` hands on to smbd.
start_smbd() {
  # shellcheck disable=SC2016  # $$ and $1 expand in the wrapper shell
  "${SUDO[@]}" setsid sh -c 'echo $$ >"$1" && shift && exec "$@"' wrap "$STATE_DIR/smbd.pid" \
    smbd --foreground --no-process-group --debug-stdout -s "$STATE_DIR/smb.conf" \
    </dev/null >>"$STATE_DIR/smbd.log" 2>&1 9<&- &
}

# Waits until the share answers (started at T0), then writes env and prints the URL.
wait_ready() {
  local t0="$1" i
  for ((i = 0; i < START_TIMEOUT * 5; i++)); do
    # (The wrapper writes the pid file a moment after it is started.)
    if [ $i -ge 5 ] && ! alive "$(read_pid "$STATE_DIR/smbd.pid")"; then
      log "smbd exited; the end of $STATE_DIR/smbd.log:"
      tail -n 30 "$STATE_DIR/smbd.log" >&2
      exit 1
    fi
    if answers; then
      log "smbd up in $(awk "BEGIN { printf \"%.1f\", $EPOCHREALTIME - $t0 }")s" \
        "(127.0.0.1:$(cat "$STATE_DIR/port"), share $SHARE at $STATE_DIR/share)"
      write_env
      url
      return 0
    fi
    sleep 0.2
  done
  die "no answer from smbd at 127.0.0.1:$(cat "$STATE_DIR/port") within ${START_TIMEOUT}s (see $STATE_DIR/smbd.log)"
}

write_env() {
  (umask 077 && printf 'export IOSCOPE_SMB_URL=%s IOSCOPE_SMB_PASSWORD_FILE=%s\n' \
    "$(url)" "$STATE_DIR/password" >"$STATE_DIR/env")
}

do_start() {
  local t0 pid port pw
  t0=$EPOCHREALTIME
  install_missing
  mkdir -p "$STATE_DIR"
  STATE_DIR="$(cd "$STATE_DIR" && pwd -P)"   # smb.conf wants absolute paths
  pid="$(read_pid "$STATE_DIR/smbd.pid")"
  if alive "$pid" && [ -s "$STATE_DIR/port" ] && answers; then
    log "smbd already running (pid $pid, 127.0.0.1:$(cat "$STATE_DIR/port"))"
    write_env
    url
    return 0
  fi
  do_stop   # a half-started or unanswering one

  # The Unix user smbd acts as on the share's files (no home, no login shell).
  if ! id -u "$SMB_USER" >/dev/null 2>&1; then
    log "creating system user $SMB_USER"
    as_root useradd --system --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin "$SMB_USER"
  fi

  mkdir -p "$STATE_DIR"/{share,lock,state,cache,run,private,bind-dns,ncalrpc,log,usershares}
  chmod 0755 "$STATE_DIR"
  chmod 0700 "$STATE_DIR/private"
  # Anyone on this machine may put files in the share; files written over SMB belong to
  # the user ioscope.
  chmod 0777 "$STATE_DIR/share"
  if [ "$(id -u)" = 0 ] && ! runuser -u "$SMB_USER" -- test -w "$STATE_DIR/share"; then
    die "user $SMB_USER cannot write $STATE_DIR/share (is a parent directory closed to others?)"
  fi

  port="$(pick_port)"
  echo "$port" >"$STATE_DIR/port"
  write_conf "$port"

  # The password is made once per STATE_DIR and kept; never printed.
  if [ ! -s "$STATE_DIR/password" ]; then
    (umask 077 && head -c 24 /dev/urandom | base64 | tr -d '/+=\n' | head -c 24 \
      >"$STATE_DIR/password")
  fi
  chmod 0600 "$STATE_DIR/password"
  pw="$(cat "$STATE_DIR/password")"
  (umask 077 && printf 'username = %s\npassword = %s\ndomain = WORKGROUP\n' "$SMB_USER" "$pw" \
    >"$STATE_DIR/smbclient.auth")
  printf '%s\n%s\n' "$pw" "$pw" |
    as_root smbpasswd -c "$STATE_DIR/smb.conf" -s -a "$SMB_USER" >/dev/null
  : >"$STATE_DIR/smbd.log"

  start_smbd
  wait_ready "$t0"
}

do_stop() {
  local pid
  pid="$(read_pid "$STATE_DIR/smbd.pid")"
  [ -n "$pid" ] || return 0
  if alive "$pid"; then
    # SIGTERM: smbd tells its children to exit and exits within a second.
    as_root kill -TERM "$pid" 2>/dev/null || true
    wait_group_gone "$pid" 10 || log "smbd ($pid) still running after 10s, sending SIGKILL"
  fi
  kill_group "$pid"
  rm -f "$STATE_DIR/smbd.pid"
}

# One command at a time (tests may call this in parallel, and two STATE_DIRs must not pick
# the same port): every command holds a lock. smbd is started with the lock's fd closed.
case "$cmd" in
  start | stop | kill-server | restart-server)
    [ -e "$LOCK" ] || : >"$LOCK"
    exec 9<"$LOCK"
    flock -w 120 9 || die "another scripts/smb-server.sh holds $LOCK for over 120 s"
    ;;
esac

case "$cmd" in
  start) do_start ;;
  stop)
    do_stop
    ;;
  kill-server)
    # SIGKILL every smbd process, as in a crash; STATE_DIR (and its stale tdb files) stay.
    kill_group "$(read_pid "$STATE_DIR/smbd.pid")"
    ;;
  restart-server)
    [ -s "$STATE_DIR/smb.conf" ] || die "no $STATE_DIR/smb.conf: use start"
    STATE_DIR="$(cd "$STATE_DIR" && pwd -P)"
    alive "$(read_pid "$STATE_DIR/smbd.pid")" && die "smbd is running; kill-server first"
    kill_group "$(read_pid "$STATE_DIR/smbd.pid")"   # leftovers of the old group, if any
    port_in_use "$(cat "$STATE_DIR/port")" && die "port $(cat "$STATE_DIR/port") is taken"
    t0=$EPOCHREALTIME
    start_smbd
    wait_ready "$t0"
    ;;
  *)
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
