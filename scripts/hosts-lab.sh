#!/usr/bin/env bash
# A lab of many client hosts on one machine, for ioscope's many-host tests and benchmarks:
# four "hosts" as network namespaces on one Linux bridge, each running OpenSSH's sshd on
# its own address, and a real NFS server (scripts/nfs-ganesha.sh) in a fifth namespace,
# reachable from every host. Network namespaces isolate only the network: every host sees
# the same file system (one ioscope binary path works for all) and the same host name.
# See docs/testing-hosts.md.
#
# Usage: scripts/hosts-lab.sh start   [STATE_DIR]    (stops any old lab first)
#        scripts/hosts-lab.sh stop    [STATE_DIR]    (idempotent)
#        scripts/hosts-lab.sh reset   [STATE_DIR]    (unshape, links up, end non-sshd processes)
#        scripts/hosts-lab.sh shape   HOST RATE      (tc tbf both ways, e.g. shape h2 100mbit)
#        scripts/hosts-lab.sh unshape HOST
#        scripts/hosts-lab.sh link    HOST down|up   (partition a host, or bring it back)
#        scripts/hosts-lab.sh exec    HOST CMD...    (run CMD inside the host's namespace)
#        scripts/hosts-lab.sh pids    HOST           (the processes in it: "PID NAME" lines)
# HOST is h1..h4, 1..4 or the host's address (10.99.0.11..14). STATE_DIR defaults to
# /tmp/ioscope-hosts-lab; it holds the keys, sshd configs, logs and pids, and the NFS
# server's state (STATE_DIR/nfs). `start` prints, as its last lines on stdout:
#   hosts=10.99.0.11,10.99.0.12,10.99.0.13,10.99.0.14
#   bridge=10.99.0.1              (the root namespace's address on the hosts' network)
#   ssh_config=STATE_DIR/ssh_config
#   nfs=nfs://10.77.0.2/export
#   nfs_export_dir=STATE_DIR/nfs/export
# so that `ssh -F STATE_DIR/ssh_config root@10.99.0.11 true` logs in without a prompt.
# Progress goes to stderr. Needs root (or sudo); installs its Debian packages when missing.
set -euo pipefail

cmd="${1:-}"
HERE="$(cd "$(dirname "$0")" && pwd -P)"

# Fixed names and addresses (documented in docs/testing-hosts.md): one lab at a time.
NHOSTS=4
BRIDGE=ioslab0             # the bridge in the root namespace, $BRIDGE_ADDR/24
BRIDGE_ADDR=10.99.0.1
SUBNET=10.99.0.0/24
NETNS_PREFIX=ioscope-h     # namespaces ioscope-h1..h4
VETH_PREFIX=ioslab-h       # root-side veth ends ioslab-h1..h4 (on the bridge)
VETH_NS=eth0               # the namespace-side end, in every host namespace
ADDR_PREFIX=10.99.0.1      # host N is 10.99.0.1N
NFS_NETNS=ioscope-nfs      # scripts/nfs-ganesha.sh's namespace and root-side address
NFS_HOST_ADDR=10.77.0.1
TBF_BURST=256kb            # bytes the shaper lets through at once (above a GSO packet)
TBF_LATENCY=50ms           # how long a packet may queue before tbf drops it
LOCK=/tmp/ioscope-hosts-lab.lock

log() { echo "hosts-lab.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }

SUDO=()
[ "$(id -u)" = 0 ] || SUDO=(sudo)
as_root() { "${SUDO[@]}" "$@"; }

hosts_list() { seq 1 "$NHOSTS"; }
netns() { echo "$NETNS_PREFIX$1"; }
veth() { echo "$VETH_PREFIX$1"; }
addr() { echo "$ADDR_PREFIX$1"; }
has_netns() { ip netns list 2>/dev/null | grep -Eq "^$1( |\$)"; }

# HOST (h2, 2 or 10.99.0.12) -> 2, or dies naming the bad value and the expected form.
host_index() {
  local h="$1" n
  case "$h" in
    h[0-9]*) n="${h#h}" ;;
    "$ADDR_PREFIX"[0-9]) n="${h#"$ADDR_PREFIX"}" ;;
    [0-9]*) n="$h" ;;
    *) n="" ;;
  esac
  [[ "$n" =~ ^[1-9][0-9]*$ ]] && [ "$n" -le "$NHOSTS" ] ||
    die "unknown host '$h': expected h1..h$NHOSTS, 1..$NHOSTS or ${ADDR_PREFIX}1..${ADDR_PREFIX}$NHOSTS"
  echo "$n"
}

install_missing() {
  local pkg missing=()
  for pkg in openssh-server openssh-client iproute2 util-linux; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' ||
      missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing: ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

# The pids in namespace NS, but for those given after it.
pids_in() {
  local ns="$1" pid keep
  shift
  for pid in $(as_root ip netns pids "$ns" 2>/dev/null); do
    for keep in "$@"; do [ "$pid" = "$keep" ] && continue 2; done
    echo "$pid"
  done
}

# Ends every process in namespace NS except the pids given after it (sshd's listener):
# SIGTERM (agents end their load on it), SIGKILL to whatever is left after 5 s. Each
# signal goes to the pids the namespace holds at that moment (a listed pid is in it).
end_processes_in() {
  local ns="$1" i pids
  shift
  has_netns "$ns" || return 0
  pids="$(pids_in "$ns" "$@")"
  [ -n "$pids" ] || return 0
  # shellcheck disable=SC2086  # one pid per word
  as_root kill -TERM $pids 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    [ -n "$(pids_in "$ns" "$@")" ] || return 0
    sleep 0.1
  done
  pids="$(pids_in "$ns" "$@")"
  log "still running in $ns after 5s, sending SIGKILL:" $pids
  # shellcheck disable=SC2086
  as_root kill -KILL $pids 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    [ -n "$(pids_in "$ns" "$@")" ] || return 0
    sleep 0.1
  done
  log "processes in $ns do not die: $(pids_in "$ns" "$@" | tr '\n' ' ')"
}

unshape_host() {
  local n="$1"
  as_root tc qdisc del dev "$(veth "$n")" root 2>/dev/null || true
  has_netns "$(netns "$n")" &&
    as_root ip -n "$(netns "$n")" link show "$VETH_NS" >/dev/null 2>&1 &&
    { as_root ip netns exec "$(netns "$n")" tc qdisc del dev "$VETH_NS" root 2>/dev/null || true; }
  return 0
}

do_stop() {
  local n ns i
  for n in $(hosts_list); do
    ns="$(netns "$n")"
    # sshd's listener, its sessions, and anything started through them (agents).
    end_processes_in "$ns"
    has_netns "$ns" && as_root ip netns delete "$ns"
  done
  # The veth ends go a moment after their namespace does (in the background).
  for n in $(hosts_list); do
    for ((i = 0; i < 50; i++)); do
      ip link show "$(veth "$n")" >/dev/null 2>&1 || break
      sleep 0.1
    done
    as_root ip link delete "$(veth "$n")" 2>/dev/null || true
  done
  as_root ip link delete "$BRIDGE" 2>/dev/null || true
  "$HERE/nfs-ganesha.sh" stop "$STATE_DIR/nfs" 8<&- >/dev/null || log "could not stop the NFS server"
  if [ -f "$STATE_DIR/ip_forward.before" ]; then
    as_root sysctl -q -w "net.ipv4.ip_forward=$(cat "$STATE_DIR/ip_forward.before")" >/dev/null || true
    rm -f "$STATE_DIR/ip_forward.before"
  fi
  rm -f "$STATE_DIR"/h*/sshd.pid
}

do_reset() {
  local n
  for n in $(hosts_list); do
    has_netns "$(netns "$n")" || continue
    unshape_host "$n"
    as_root ip link set "$(veth "$n")" up
    end_processes_in "$(netns "$n")" "$(cat "$STATE_DIR/h$n/sshd.pid" 2>/dev/null || true)"
  done
}

write_sshd_config() {
  local n="$1" dir="$STATE_DIR/h$1"
  cat >"$dir/sshd_config" <<EOF
# Written by scripts/hosts-lab.sh; rewritten on every start.
ListenAddress $(addr "$n"):22
AddressFamily inet
HostKey $dir/ssh_host_ed25519_key
PidFile $dir/sshd.pid
AuthorizedKeysFile $STATE_DIR/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
UseDNS no
# The keys live under STATE_DIR, which may sit in a world-writable /tmp.
StrictModes no
PrintMotd no
X11Forwarding no
Subsystem sftp internal-sftp
# Benchmarks open many sessions at once.
MaxStartups 256
MaxSessions 256
LogLevel VERBOSE
EOF
}

do_start() {
  local t0 n ns i url hosts=() line
  ok=0
  t0=$EPOCHREALTIME
  case "$(realpath -m "$STATE_DIR")/" in
    /run/* | /var/run/*) die "STATE_DIR must not be under /run (the NFS server binds over /run)" ;;
  esac
  install_missing
  do_stop
  if [ -d "$STATE_DIR" ] && [ ! -e "$STATE_DIR/.ioscope-hosts-lab" ] &&
    [ -n "$(ls -A "$STATE_DIR")" ]; then
    die "$STATE_DIR exists, is not empty and was not made by this script"
  fi
  mkdir -p "$STATE_DIR"
  touch "$STATE_DIR/.ioscope-hosts-lab"
  STATE_DIR="$(cd "$STATE_DIR" && pwd -P)"

  # From here on, a failure (or Ctrl-C) stops whatever did start.
  trap 'if [ "${ok:-0}" != 1 ]; then log "start failed: stopping what did start"; do_stop || true; fi' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM

  # Keys: one client key authorized for root, one host key per host, and a known_hosts
  # naming each host by address and by its short name.
  rm -f "$STATE_DIR/id_ed25519" "$STATE_DIR/id_ed25519.pub" "$STATE_DIR/known_hosts"
  ssh-keygen -q -t ed25519 -N '' -C ioscope-hosts-lab -f "$STATE_DIR/id_ed25519"
  cp "$STATE_DIR/id_ed25519.pub" "$STATE_DIR/authorized_keys"
  : >"$STATE_DIR/known_hosts"
  for n in $(hosts_list); do
    mkdir -p "$STATE_DIR/h$n"
    rm -f "$STATE_DIR/h$n/ssh_host_ed25519_key"*
    ssh-keygen -q -t ed25519 -N '' -C "h$n" -f "$STATE_DIR/h$n/ssh_host_ed25519_key"
    echo "$(addr "$n"),h$n $(cut -d' ' -f1,2 "$STATE_DIR/h$n/ssh_host_ed25519_key.pub")" \
      >>"$STATE_DIR/known_hosts"
    write_sshd_config "$n"
  done
  {
    echo "# Written by scripts/hosts-lab.sh: ssh -F $STATE_DIR/ssh_config root@$(addr 1) true"
    for n in $(hosts_list); do printf 'Host h%s\n  HostName %s\n' "$n" "$(addr "$n")"; done
    cat <<EOF
Host *
  User root
  IdentityFile $STATE_DIR/id_ed25519
  IdentitiesOnly yes
  UserKnownHostsFile $STATE_DIR/known_hosts
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  BatchMode yes
  ConnectTimeout 5
  LogLevel ERROR
EOF
  } >"$STATE_DIR/ssh_config"

  # The bridge, and one namespace per host on it.
  as_root ip link add "$BRIDGE" type bridge
  as_root ip addr add "$BRIDGE_ADDR/24" dev "$BRIDGE"
  as_root ip link set "$BRIDGE" up
  for n in $(hosts_list); do
    ns="$(netns "$n")"
    as_root ip netns add "$ns"
    as_root ip link add "$(veth "$n")" type veth peer name "$VETH_NS" netns "$ns"
    as_root ip link set "$(veth "$n")" master "$BRIDGE" up
    as_root ip -n "$ns" addr add "$(addr "$n")/24" dev "$VETH_NS"
    as_root ip -n "$ns" link set "$VETH_NS" up
    as_root ip -n "$ns" link set lo up
    as_root ip -n "$ns" route add default via "$BRIDGE_ADDR"
  done

  # The NFS server in its own namespace; the root namespace routes between the two
  # subnets, and the server's namespace needs the way back to the hosts.
  url="$("$HERE/nfs-ganesha.sh" start "$STATE_DIR/nfs" 8<&- | tail -n1)"
  [ -n "$url" ] || die "scripts/nfs-ganesha.sh start printed no URL"
  [ -f "$STATE_DIR/ip_forward.before" ] || cat /proc/sys/net/ipv4/ip_forward >"$STATE_DIR/ip_forward.before"
  as_root sysctl -q -w net.ipv4.ip_forward=1 >/dev/null
  as_root ip -n "$NFS_NETNS" route replace "$SUBNET" via "$NFS_HOST_ADDR"

  # sshd in each namespace (it daemonizes and writes its pid file).
  as_root mkdir -p /run/sshd
  for n in $(hosts_list); do
    as_root ip netns exec "$(netns "$n")" /usr/sbin/sshd -f "$STATE_DIR/h$n/sshd_config" \
      -E "$STATE_DIR/h$n/sshd.log" </dev/null >/dev/null 2>&1 8<&- ||
      die "sshd did not start in $(netns "$n"): $(tail -n 5 "$STATE_DIR/h$n/sshd.log" 2>/dev/null)"
  done

  # Ready means: a real login to every host works, and every host reaches NFS's port.
  for n in $(hosts_list); do
    for ((i = 0; ; i++)); do
      if ssh -F "$STATE_DIR/ssh_config" "root@$(addr "$n")" true </dev/null 2>/dev/null; then break; fi
      [ $i -lt 50 ] || die "no ssh login to h$n ($(addr "$n")) within 10s; see $STATE_DIR/h$n/sshd.log"
      sleep 0.2
    done
    line="${url#nfs://}"
    as_root ip netns exec "$(netns "$n")" timeout 5 bash -c "exec 3<>/dev/tcp/${line%%/*}/2049" ||
      die "h$n ($(addr "$n")) cannot reach the NFS server ${line%%/*}:2049"
    hosts+=("$(addr "$n")")
  done
  ok=1
  log "lab up in $(awk "BEGIN { printf \"%.1f\", $EPOCHREALTIME - $t0 }")s:" \
    "$NHOSTS hosts on $BRIDGE ($SUBNET), NFS at $url"
  local IFS=,
  printf 'hosts=%s\nbridge=%s\nssh_config=%s\nnfs=%s\nnfs_export_dir=%s\n' "${hosts[*]}" \
    "$BRIDGE_ADDR" "$STATE_DIR/ssh_config" "$url" "$STATE_DIR/nfs/export"
}

do_shape() {
  local n="$1" rate="$2"
  [[ "$rate" =~ ^[0-9]+(\.[0-9]+)?[kmgt]?(bit|bps)$ ]] ||
    die "bad rate '$rate': expected a tc rate such as 100mbit, 1gbit or 500kbit"
  has_netns "$(netns "$n")" || die "h$n is not running (scripts/hosts-lab.sh start)"
  # Both directions: the root-side end sends to the host, the namespace end from it.
  as_root tc qdisc replace dev "$(veth "$n")" root tbf rate "$rate" burst "$TBF_BURST" latency "$TBF_LATENCY"
  as_root ip netns exec "$(netns "$n")" tc qdisc replace dev "$VETH_NS" root \
    tbf rate "$rate" burst "$TBF_BURST" latency "$TBF_LATENCY"
}

do_link() {
  local n="$1" state="$2"
  case "$state" in
    up | down) ;;
    *) die "bad link state '$state': expected down or up" ;;
  esac
  has_netns "$(netns "$n")" || die "h$n is not running (scripts/hosts-lab.sh start)"
  as_root ip link set "$(veth "$n")" "$state"
}

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# One command at a time (tests and developers may call this in parallel). Children that
# outlive the command (sshd, the NFS server) are started with the lock's fd 8 closed.
# `exec` does not take it: the command it runs may take as long as it likes.
lock() {
  [ -e "$LOCK" ] || : >"$LOCK"
  exec 8<"$LOCK"
  flock -w 120 8 || die "another scripts/hosts-lab.sh holds $LOCK for over 120 s"
}

case "$cmd" in
  start | stop | reset)
    STATE_DIR="${2:-/tmp/ioscope-hosts-lab}"
    lock
    case "$cmd" in
      start) do_start ;;
      stop) do_stop ;;
      reset) do_reset ;;
    esac
    ;;
  shape)
    [ $# -eq 3 ] || usage
    n="$(host_index "$2")"
    lock
    do_shape "$n" "$3"
    ;;
  unshape)
    [ $# -eq 2 ] || usage
    n="$(host_index "$2")"
    lock
    unshape_host "$n"
    ;;
  link)
    [ $# -eq 3 ] || usage
    n="$(host_index "$2")"
    lock
    do_link "$n" "$3"
    ;;
  exec)
    [ $# -ge 3 ] || usage
    n="$(host_index "$2")"
    shift 2
    has_netns "$(netns "$n")" || die "h$n is not running (scripts/hosts-lab.sh start)"
    exec "${SUDO[@]}" ip netns exec "$(netns "$n")" "$@"
    ;;
  pids)
    [ $# -eq 2 ] || usage
    n="$(host_index "$2")"
    has_netns "$(netns "$n")" || die "h$n is not running (scripts/hosts-lab.sh start)"
    for pid in $(as_root ip netns pids "$(netns "$n")"); do
      name="$(cat "/proc/$pid/comm" 2>/dev/null)" && echo "$pid $name" || true  # it may have ended
    done
    ;;
  *) usage ;;
esac
