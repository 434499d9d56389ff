#!/usr/bin/env bash
# jitterlab's hackbench load vs rt-tests' hackbench, same parameters, interleaved.
#
# Each pair runs `hackbench -g G -l L -s D -f F [-T] [-p]` and
# `jitterlab load hackbench:groups=G,loops=L,datasize=D,fds=F,mode=M,ipc=I` (one exchange
# each, both print "Time: S"), alternating which goes first, and prints the time ratio
# jitterlab/hackbench per pair and as the mean over the pairs, against the target of
# issue 3 (0.8-1.25: results made with either tool can be compared). Informational: exits 0
# unless a run failed.
#
# Environment:
#   PAIRS=5           number of pairs (at least 3 recommended)
#   GROUPS_=10        hackbench groups (GROUPS is a bash variable, hence the underscore)
#   LOOPS=1000        messages per sender per receiver
#   DATASIZE=100      bytes per message
#   FDS=20            senders and receivers per group
#   MODE=process      process | thread
#   IPC=socket        socket | pipe
#   JITTERLAB=path    jitterlab binary (default: build target/release/jitterlab)
#   HACKBENCH=path    hackbench binary (default: from PATH)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

PAIRS=${PAIRS:-5}
G=${GROUPS_:-10}
LOOPS=${LOOPS:-1000}
DATASIZE=${DATASIZE:-100}
FDS=${FDS:-20}
MODE=${MODE:-process}
IPC=${IPC:-socket}

need_positive PAIRS "$PAIRS"
[[ $MODE == process || $MODE == thread ]] || die "MODE must be process or thread, got '$MODE'"
[[ $IPC == socket || $IPC == pipe ]] || die "IPC must be socket or pipe, got '$IPC'"

hackbench=${HACKBENCH:-$(command -v hackbench || true)}
if [[ -z $hackbench || ! -x $hackbench ]]; then
    echo "skipped: hackbench not found; apt-get install rt-tests"
    exit 0
fi
jitterlab=$(jitterlab_binary)

hb_args=(-g "$G" -l "$LOOPS" -s "$DATASIZE" -f "$FDS")
[[ $MODE == thread ]] && hb_args+=(-T)
[[ $IPC == pipe ]] && hb_args+=(-p)
spec="hackbench:groups=$G,loops=$LOOPS,datasize=$DATASIZE,fds=$FDS,mode=$MODE,ipc=$IPC"

# time_of TOOL: runs one exchange, prints its "Time:" in seconds.
time_of() {
    local out
    case $1 in
    hackbench) out=$("$hackbench" "${hb_args[@]}" 2>&1) || die "hackbench failed: $out" ;;
    jitterlab) out=$("$jitterlab" load "$spec" 2>&1) || die "jitterlab load failed: $out" ;;
    esac
    awk '/^Time:/ { print $2; found = 1 } END { exit !found }' <<<"$out" ||
        die "$1 printed no Time: line: $out"
}

echo "hackbench vs jitterlab load $spec, $PAIRS interleaved pairs" >&2
echo "  hackbench: $hackbench ${hb_args[*]}" >&2
ratios=()
printf '%-6s %-17s %12s %12s %8s\n' pair order "jitterlab s" "hackbench s" ratio
for ((p = 1; p <= PAIRS; p++)); do
    if ((p % 2 == 1)); then
        order="jitterlab first"; j=$(time_of jitterlab); h=$(time_of hackbench)
    else
        order="hackbench first"; h=$(time_of hackbench); j=$(time_of jitterlab)
    fi
    r=$(awk -v a="$j" -v b="$h" 'BEGIN { printf "%.3f", a / b }')
    ratios+=("$r")
    printf '%-6s %-17s %12s %12s %7sx\n' "$p" "$order" "$j" "$h" "$r"
done
printf '%s\n' "${ratios[@]}" | awk '
    { s += $1; n++; if (min == "" || $1 < min) min = $1; if ($1 > max) max = $1 }
    END {
        m = s / n
        printf "mean ratio jitterlab/hackbench %.3fx (min %.3fx, max %.3fx) over %d pairs; target 0.800x-1.250x: %s\n",
            m, min, max, n, (m >= 0.8 && m <= 1.25) ? "PASS" : "MISS"
    }'
