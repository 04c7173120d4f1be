#!/usr/bin/env bash
# Buffered 4 KiB random writes on a 256 MiB file, right after preparation and in a second
# run on the same file: ioscope with each --cache choice (cold, warm, as-is) against fio
# with its defaults (invalidate=1) on the same file, and fio with invalidate=0 (the state
# preparation left, as ioscope's as-is). Prints a markdown table: IOPS, p50, the ratios to
# fio's defaults and every ioscope row's verdicts. docs/cache.md explains the slow case.
#
#   bench/cache-buffered-randwrite.sh [--ioscope BIN] [--dir DIR] [--duration S] [--save]
#
# --save writes the table to bench/results/DATE-HOST-cache-buffered-randwrite.md as well.
# Needs fio and jq. The directory (default /var/tmp/ioscope-cache-bench) is removed and
# made again for every "after preparation" row: use a scratch directory on the disk to
# measure (not tmpfs: its pages cannot be dropped).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
ioscope="${CARGO_TARGET_DIR:-$repo/target}/release/ioscope"
dir=/var/tmp/ioscope-cache-bench
duration=5
save=0
while [ $# -gt 0 ]; do
    case "$1" in
        --ioscope) ioscope=$2; shift 2 ;;
        --dir) dir=$2; shift 2 ;;
        --duration) duration=$2; shift 2 ;;
        --save) save=1; shift ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
done
for tool in fio jq "$ioscope"; do
    command -v "$tool" >/dev/null || { echo "missing: $tool" >&2; exit 2; }
done
case "$dir" in /|"") echo "refusing to use $dir" >&2; exit 2 ;; esac

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
file="$dir/ws/ioscope.0.dat"
rows=()

# ioscope ROW-LABEL CACHE RW: one run on $dir/ws (prepared by it when missing).
ioscope_row() {
    local label=$1 cache=$2 rw=${3:-randwrite}
    # A name of its own (rows run in subshells: no shared counter).
    local base
    base=$(mktemp -u "$scratch/rXXXXXX")
    local out="$base.db"
    "$ioscope" run --quiet --json --out "$out" --dir "$dir/ws" --size 256m --files 1 --rw "$rw" --bs 4k \
        --duration "${duration}s" --cache "$cache" >"$base.json"
    local op=write
    [ "$rw" = randread ] && op=read
    jq -r --arg row "$label" --arg op "$op" '
        [$row, "ioscope --cache " + .cache.mode, (.ops[$op].iops | floor),
         (.ops[$op].latency_ns.p50 / 1000 * 10 | round / 10),
         ((.cache.by_host | to_entries | .[0].value) // "-"),
         ([.verdicts[] | .id] | join(", ")),
         ([.verdicts[] | select(.id == "working-set-cached") | .message] | join(" / "))] | @tsv' \
        "$base.json"
}

# fio ROW-LABEL INVALIDATE: fio's psync randwrite on the same file, fio's defaults but
# for the given invalidate (fio's default is 1).
fio_row() {
    local label=$1 invalidate=$2
    local extra=()
    [ "$invalidate" = default ] || extra=(--invalidate="$invalidate")
    fio --name=w --filename="$file" --rw=randwrite --bs=4k --size=256m --ioengine=psync --time_based \
        --runtime="$duration" "${extra[@]}" --output-format=json 2>/dev/null >"$scratch/fio.json"
    jq -r --arg row "$label" --arg inv "$invalidate" '
        .jobs[0].write as $w |
        [$row, "fio invalidate=" + (if $inv == "default" then "1 (default)" else $inv end), ($w.iops | floor),
         ($w.clat_ns.percentile["50.000000"] / 1000 * 10 | round / 10), "-", "-", "-"] | @tsv' "$scratch/fio.json"
}

fresh() { rm -rf "$dir"; mkdir -p "$dir"; }

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
echo "ioscope $("$ioscope" --version), $(fio --version); $duration s per row" >&2
# Right after preparation: each row prepares the file anew (ioscope's 8 MiB writes, synced).
for cache in as-is cold warm; do
    fresh
    rows+=("$(ioscope_row "after preparation" "$cache")")
done
fresh
"$ioscope" run --quiet --out "$scratch/prep.db" --dir "$dir/ws" --size 256m --files 1 --rw randread --bs 4k \
    --duration 1s --cache as-is >/dev/null
rows+=("$(fio_row "after preparation" 0)")
fresh
"$ioscope" run --quiet --out "$scratch/prep2.db" --dir "$dir/ws" --size 256m --files 1 --rw randread --bs 4k \
    --duration 1s --cache as-is >/dev/null
rows+=("$(fio_row "after preparation" default)")
# A second run on the same file: the first (as-is, right after preparation) left its
# writes in the cache; the second starts with each choice.
for cache in as-is cold warm; do
    fresh
    ioscope_row "(first run)" as-is >/dev/null
    rows+=("$(ioscope_row "second run" "$cache")")
done
fresh
ioscope_row "(first run)" as-is >/dev/null
rows+=("$(fio_row "second run" default)")
# Reads of the same shape, for the verdict: from the cache (as-is) and from the device (cold).
fresh
rows+=("$(ioscope_row "randread after preparation" as-is randread)")
fresh
rows+=("$(ioscope_row "randread after preparation" cold randread)")
rm -rf "$dir"

machine="$(hostname), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), \
$(free -g | awk '/^Mem:/ {print $2}') GiB RAM, Linux $(uname -r), $(df -T "$(dirname "$dir")" | awk 'NR==2 {print $2" on "$1}')"
{
    echo "# buffered 4 KiB random writes after preparation, by --cache ($(date -u '+%Y-%m-%d %H:%M UTC'))"
    echo
    echo "- machine: $machine"
    echo "- load average (1, 5, 15 min) at the start: $load_start; at the end: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine shares its CPUs: compare rows within one table, not across tables)"
    echo "- ioscope: $("$ioscope" --version) ($ioscope), source $(git -C "$repo" rev-parse --short HEAD)"
    echo "- fio: $(fio --version), \`--rw=randwrite --bs=4k --size=256m --ioengine=psync --time_based --runtime=$duration\` on ioscope's file"
    echo "- each row $duration s, one thread, QD1, 256 MiB file \`ioscope.0.dat\` prepared by ioscope (8 MiB writes, fsync)"
    echo "- ratio: IOPS over fio's with its defaults (invalidate=1) in the same group"
    echo
    echo "| when | tool | IOPS | p50 µs | ratio to fio defaults | cache step (ioscope's record) | verdicts |"
    echo "|---|---|---:|---:|---:|---|---|"
    fio_after=$(printf '%s\n' "${rows[@]}" | awk -F'\t' '$1=="after preparation" && $2=="fio invalidate=1 (default)" {print $3}')
    fio_second=$(printf '%s\n' "${rows[@]}" | awk -F'\t' '$1=="second run" && $2 ~ /^fio/ {print $3}')
    for r in "${rows[@]}"; do
        IFS=$'\t' read -r when tool iops p50 step ids _ <<<"$r"
        base=$fio_after
        [ "$when" = "second run" ] && base=$fio_second
        ratio=$(awk -v a="$iops" -v b="$base" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')
        case "$when" in randread*) ratio="-" ;; esac
        printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$when" "$tool" "$(printf "%'d" "$iops")" "$p50" "$ratio" "$step" "$ids"
    done
    echo
    echo "working-set-cached messages of the ioscope rows:"
    echo
    for r in "${rows[@]}"; do
        IFS=$'\t' read -r when tool _ _ _ _ msg <<<"$r"
        [ "$tool" = "${tool#ioscope}" ] && continue
        echo "- $when, $tool: ${msg:-(silent)}"
    done
} | tee "$scratch/table.md"
if [ "$save" = 1 ]; then
    out="$here/results/$(date -u +%Y-%m-%d)-$(hostname)-cache-buffered-randwrite.md"
    cp "$scratch/table.md" "$out"
    echo "saved $out" >&2
fi
