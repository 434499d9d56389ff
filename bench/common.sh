# Shared by the bench scripts (sourced): argument checks, the jitterlab binary, the machine's
# CPU use, and `jitterlab compare --json` flattened for awk. Needs bash 5 ($EPOCHREALTIME);
# no jq, no python.

# die MESSAGE: the script's name, the message, exit 1.
die() {
    echo "${0##*/}: $*" >&2
    exit 1
}

# need_positive NAME VALUE: VALUE must be a whole number of at least 1.
need_positive() {
    [[ $2 =~ ^[1-9][0-9]*$ ]] || die "$1 must be a positive whole number, got '$2'"
}

# jitterlab_binary: $JITTERLAB, or target/release/jitterlab built now.
jitterlab_binary() {
    local root
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    if [[ -z ${JITTERLAB:-} ]]; then
        echo "building jitterlab (cargo build --release) ..." >&2
        (cd "$root" && cargo build --release --quiet --bin jitterlab) ||
            die "cargo build --release failed"
        JITTERLAB=$root/target/release/jitterlab
    fi
    [[ -x $JITTERLAB ]] || die "jitterlab binary not found or not executable: $JITTERLAB"
    echo "$JITTERLAB"
}

# busy_ticks: clock ticks all CPUs have spent busy so far (user nice system irq softirq
# steal, from /proc/stat), for the share of the machine other processes used during a run.
busy_ticks() {
    local _cpu user nice system _idle _iowait irq softirq steal _rest
    read -r _cpu user nice system _idle _iowait irq softirq steal _rest </proc/stat
    echo $((user + nice + system + irq + softirq + steal))
}

# others_pct BUSY0 BUSY1 TOOL_NS WALL_US: % of all CPUs' time that the rest of the machine used
# while a tool ran (busy ticks less the tool's own CPU time); above 5 % a run is disturbed.
others_pct() {
    awk -v b="$(($2 - $1))" -v own="$3" -v wall="$4" -v hz="$(getconf CLK_TCK)" \
        -v n="$(getconf _NPROCESSORS_ONLN)" \
        'BEGIN { o = b / hz - own / 1e9; if (o < 0) o = 0; printf "%.1f", 100 * o / (wall / 1e6 * n) }'
}

# now_us: CLOCK_REALTIME in us (bash's $EPOCHREALTIME without the dot).
now_us() { echo "${EPOCHREALTIME/./}"; }

# flat_compare: `jitterlab compare --json` (on stdin, two runs) as lines
#   SCOPE FIGURE A B
# SCOPE `overall` or `cpuN`; FIGURE a statistic (`mean`, `p99`, `max`... in its row's unit),
# `samples` or `cpu_time_per_cycle_ns`; A and B the two runs' values, `null` when absent.
# Relies on serde_json's pretty layout: one array element per line.
flat_compare() {
    awk '
        /^ *"scope": /     { s = $2; gsub(/[",]/, "", s) }
        /^ *"statistic": / { stat = $2; gsub(/[",]/, "", stat) }
        s != "" && /^ *"(values|samples|cpu_time_per_cycle_ns)": \[/ {
            key = $1; gsub(/[":]/, "", key); if (key == "values") key = stat
            line = s " " key; open = 1; next
        }
        open && /^ *\]/ { print line; open = 0; next }
        open { v = $1; sub(/,$/, "", v); line = line " " v }
    '
}
