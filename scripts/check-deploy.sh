#!/usr/bin/env bash
# Checks what can be checked here of deploy/ (see deploy/README.md): the systemd unit
# with `systemd-analyze verify` (no warning allowed) and its offline security exposure,
# the sysusers file, the Kubernetes manifest's YAML and how its parts refer to each other
# (Service -> StatefulSet labels and port, Secret items -> the agent's file flags, the
# volume -> --root), and that every agent flag either file passes is one the ioscope
# binary's `agent --help` lists. Exits 1 naming the first problem.
# Usage: scripts/check-deploy.sh [IOSCOPE_BIN]   (default: $CARGO_TARGET_DIR/debug/ioscope)
set -euo pipefail
cd "$(dirname "$0")/.."

UNIT=deploy/systemd/ioscope-agent.service
SYSUSERS=deploy/systemd/ioscope.sysusers.conf
MANIFEST=deploy/kubernetes/ioscope-agents.yaml
BIN="${1:-${CARGO_TARGET_DIR:-$HOME/.cache/ioscope/target}/debug/ioscope}"
# The unit's overall exposure (systemd-analyze security, 0-100; "1.7 OK" prints as 17).
MAX_EXPOSURE=20

die() { echo "check-deploy.sh: error: $*" >&2; exit 1; }
skip() {
  [ "${IOSCOPE_TEST_REQUIRE_ALL:-0}" = 1 ] && die "$* (and IOSCOPE_TEST_REQUIRE_ALL=1 requires every check)"
  echo "check-deploy.sh: skipped: $*" >&2
}

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# systemd: verify checks that ExecStart's program exists; point it at the built binary.
if command -v systemd-analyze >/dev/null; then
  exe=/usr/bin/true
  [ -x "$BIN" ] && exe="$(realpath "$BIN")"
  sed "s#^ExecStart=/usr/local/bin/ioscope #ExecStart=$exe #" "$UNIT" >"$tmp/ioscope-agent.service"
  grep -q "^ExecStart=$exe agent " "$tmp/ioscope-agent.service" ||
    die "$UNIT: ExecStart does not run /usr/local/bin/ioscope agent"
  out="$(cd "$tmp" && systemd-analyze verify ./ioscope-agent.service 2>&1)" ||
    die "systemd-analyze verify $UNIT failed: $out"
  [ -z "$out" ] || die "systemd-analyze verify $UNIT warns: $out"
  (cd "$tmp" && systemd-analyze security --offline=yes --threshold=$MAX_EXPOSURE ./ioscope-agent.service \
    >"$tmp/security.txt" 2>&1) ||
    die "$UNIT is exposed beyond $MAX_EXPOSURE: $(tail -n 1 "$tmp/security.txt")"
  echo "$UNIT: verified; $(grep -o 'Overall exposure level.*' "$tmp/security.txt")"
  mkdir -p "$tmp/root/etc"
  out="$(systemd-sysusers --root="$tmp/root" --dry-run - <"$SYSUSERS" 2>&1)" ||
    die "systemd-sysusers $SYSUSERS failed: $out"
  grep -q "Creating user 'ioscope'" <<<"$out" || die "$SYSUSERS creates no user ioscope: $out"
  grep -Eq '^User=ioscope$' "$UNIT" || die "$UNIT does not run as the user $SYSUSERS creates"
else
  skip "systemd-analyze is not installed (Debian: systemd)"
fi

# The agent flags both files pass, one per line (for the --help check below).
flags_file="$tmp/flags"
python3 - "$MANIFEST" "$UNIT" >"$flags_file" <<'EOF' || exit 1
import shlex, sys
try:
    import yaml
except ImportError:
    sys.exit("check-deploy.sh: error: python3 has no yaml module (Debian: python3-yaml)")

manifest, unit = sys.argv[1], sys.argv[2]

def fail(msg):
    sys.exit(f"check-deploy.sh: error: {manifest}: {msg}")

docs = [d for d in yaml.safe_load_all(open(manifest)) if d is not None]
kinds = {d.get("kind"): d for d in docs}
if sorted(kinds) != ["Service", "StatefulSet"]:
    fail(f"expected a Service and a StatefulSet, found {[d.get('kind') for d in docs]}")
svc, sts = kinds["Service"], kinds["StatefulSet"]
if svc["spec"].get("clusterIP") != "None":
    fail("the Service is not headless (clusterIP: None)")
if sts["spec"]["serviceName"] != svc["metadata"]["name"]:
    fail("the StatefulSet's serviceName is not the Service's name")
labels = sts["spec"]["template"]["metadata"]["labels"]
for what, sel in [("Service selector", svc["spec"]["selector"]),
                  ("StatefulSet selector", sts["spec"]["selector"]["matchLabels"])]:
    if any(labels.get(k) != v for k, v in sel.items()):
        fail(f"the {what} {sel} does not match the pod labels {labels}")
pod = sts["spec"]["template"]["spec"]
(c,) = pod["containers"]
args = c["args"]
if args[0] != "agent":
    fail(f"the container does not run `ioscope agent`: {args}")
opts = dict(zip(args[1::2], args[2::2]))
for flag in ["--listen", "--token-file", "--root", "--tls-cert", "--tls-key"]:
    if flag not in opts:
        fail(f"the agent is not given {flag}")
port = int(opts["--listen"].rsplit(":", 1)[1])
ports = {p["name"]: p["containerPort"] for p in c["ports"]}
(sport,) = svc["spec"]["ports"]
if ports.get(sport["targetPort"]) != port or sport["port"] != port:
    fail(f"Service port {sport} does not reach the agent's --listen port {port} ({ports})")
if c["readinessProbe"]["tcpSocket"]["port"] not in (port, sport["targetPort"]):
    fail("the readiness probe does not check the agent's port")
mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
volumes = {v["name"]: v for v in pod["volumes"]}
claims = {t["metadata"]["name"] for t in sts["spec"].get("volumeClaimTemplates", [])}
for flag in ["--token-file", "--tls-cert", "--tls-key"]:
    path = opts[flag]
    d, f = path.rsplit("/", 1)
    vol = volumes.get(mounts.get(d))
    if not vol or "secret" not in vol or f not in [i["path"] for i in vol["secret"]["items"]]:
        fail(f"{flag} {path} is not a file of the mounted Secret")
root_vol = mounts.get(opts["--root"])
if root_vol not in claims and root_vol not in volumes:
    fail(f"--root {opts['--root']} is not a mounted volume")
ctx, cctx = pod["securityContext"], c["securityContext"]
if not (ctx.get("runAsNonRoot") and cctx.get("allowPrivilegeEscalation") is False
        and cctx.get("readOnlyRootFilesystem") and cctx["capabilities"]["drop"] == ["ALL"]):
    fail("the agent does not run as non-root, read-only, without privileges and capabilities")

# The unit passes the same flags (with host paths).
(exec_start,) = [l.split("=", 1)[1] for l in open(unit) if l.startswith("ExecStart=")]
uargs = shlex.split(exec_start)[1:]
if uargs[0] != "agent" or sorted(uargs[1::2]) != sorted(args[1::2]):
    sys.exit(f"check-deploy.sh: error: {unit} and {manifest} pass different agent flags: "
             f"{uargs[1::2]} vs {args[1::2]}")
uopts = dict(zip(uargs[1::2], uargs[2::2]))
rw = [l.split("=", 1)[1].strip() for l in open(unit) if l.startswith("ReadWritePaths=")]
if rw != [uopts["--root"]]:
    sys.exit(f"check-deploy.sh: error: {unit}: ReadWritePaths={rw} is not the agent's --root")
print("\n".join(sorted(set(args[1::2]))))
EOF
echo "$MANIFEST: parsed; Service, StatefulSet, Secret and volumes agree with the agent's flags"

# The flags are the agent's own.
if [ -x "$BIN" ] && help="$("$BIN" agent --help 2>&1)"; then
  while read -r flag; do
    grep -q -- "$flag" <<<"$help" || die "$BIN agent --help has no $flag (used by $UNIT and $MANIFEST)"
  done <"$flags_file"
  echo "agent flags $(paste -sd' ' "$flags_file") are in \`ioscope agent --help\`"
else
  skip "no ioscope binary with an agent command at $BIN to check the flags against"
fi
