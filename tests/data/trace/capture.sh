#!/usr/bin/env bash
# Captures real ring-buffer pages from this machine's tracefs for the page-parser tests
# (tests/measuring/trace.rs). Run as root on an otherwise quiet machine:
#
#   tests/data/trace/capture.sh            # writes next to this script
#
# What it writes (every capture read from per_cpu/cpu0/trace_pipe_raw of an instance of its
# own, with trace_clock=mono, only CPU 0 traced):
#
#   events/header_page, events/header_event, events/<system>/<event>/format
#       the format files of this kernel, which the parser takes every offset from
#   basic/pages.bin, basic/trace.txt
#       markers written 0.3 s apart (time-extend events: a gap above 2^27 ns), a 300-byte
#       marker (an event too long for type_len, its length in array[0]), then 0.3 s of
#       scheduler, IRQ and timer events mixed with 1000-byte markers (pages that end in
#       padding); trace.txt is the kernel's own text rendering of the same events
#   live/pages.bin
#       the same kind of activity read while it is traced, every 10 ms, as jitterlab reads:
#       a page the reader had started is later completed with the padding that ends it
#   overrun/pages.bin, overrun/trace.txt, overrun/stats
#       the same events into a 4 KiB buffer that overflows: pages flagged with missed events
#
# The instance is removed on every exit path (trap).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tracefs=${TRACEFS:-/sys/kernel/tracing}
[[ -d $tracefs/instances ]] || { echo "no tracefs at $tracefs (mount -t tracefs nodev $tracefs)" >&2; exit 1; }

events=(sched/sched_switch sched/sched_waking sched/sched_wakeup irq/irq_handler_entry
        irq/irq_handler_exit irq/softirq_entry irq/softirq_exit timer/hrtimer_start
        timer/hrtimer_expire_entry timer/hrtimer_expire_exit irq_vectors/local_timer_entry
        irq_vectors/local_timer_exit irq_vectors/reschedule_entry irq_vectors/reschedule_exit
        ftrace/print)

inst=""
cleanup() { [[ -n $inst && -d $inst ]] && rmdir "$inst" 2>/dev/null || true; }
trap cleanup EXIT

# read_raw CPU_FILE OUT: every page of a per-CPU trace_pipe_raw until it is empty.
read_raw() {
    python3 - "$1" "$2" "$(page_size)" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_NONBLOCK)
size = int(sys.argv[3])
with open(sys.argv[2], "wb") as out:
    while True:
        try:
            page = os.read(fd, size)
        except BlockingIOError:
            break
        if not page:
            break
        out.write(page)
PY
}

# The sub-buffer (page) size: offset + size of header_page's data field.
page_size() {
    awk -F'[;:]' '/field: char data/ { for (i = 1; i <= NF; i++) { if ($i ~ /offset/) o = $(i+1); if ($i ~ /size/) s = $(i+1) } } END { print o + s }' \
        "$tracefs/events/header_page"
}

new_instance() {
    inst=$tracefs/instances/jlcapture-$$-$1
    mkdir "$inst"
    echo mono >"$inst/trace_clock"
    echo 1 >"$inst/tracing_cpumask"
    # Raw pointers in trace.txt, so that the tests can compare hrtimer addresses too.
    echo 0 >"$inst/options/hash-ptr"
    echo 0 >"$inst/tracing_on"
}

# activity SECONDS: CPU 0 busy with short sleeps and 1000-byte markers.
activity() {
    taskset -c 0 python3 - "$inst/trace_marker" "$1" <<'PY'
import sys, time
marker, seconds = sys.argv[1], float(sys.argv[2])
end = time.monotonic() + seconds
i = 0
with open(marker, "w", buffering=1) as m:
    while time.monotonic() < end:
        time.sleep(0.0005)
        i += 1
        if i % 7 == 0:
            m.write(f"big {i} " + "x" * 1000 + "\n")
PY
}

enable_events() {
    for e in "${events[@]}"; do
        [[ $e == ftrace/print ]] && continue
        [[ -e $inst/events/$e/enable ]] && echo 1 >"$inst/events/$e/enable"
    done
}

rm -rf "$here/events" "$here/basic" "$here/live" "$here/overrun"
mkdir -p "$here/events" "$here/basic" "$here/live" "$here/overrun"
cp "$tracefs/events/header_page" "$tracefs/events/header_event" "$here/events/"
for e in "${events[@]}"; do
    [[ -e $tracefs/events/$e/format ]] || continue
    mkdir -p "$here/events/$e"
    cp "$tracefs/events/$e/format" "$here/events/$e/format"
done

# basic: time extends, a long event, then full pages ending in padding.
new_instance basic
echo 1 >"$inst/tracing_on"
taskset -c 0 python3 - "$inst/trace_marker" <<'PY'
import sys, time
with open(sys.argv[1], "w", buffering=1) as m:
    m.write("first marker\n")
    time.sleep(0.3)
    m.write("long marker " + "L" * 288 + "\n")
    time.sleep(0.3)
    m.write("third marker\n")
PY
enable_events
activity 0.3
echo 0 >"$inst/tracing_on"
cat "$inst/trace" >"$here/basic/trace.txt"
read_raw "$inst/per_cpu/cpu0/trace_pipe_raw" "$here/basic/pages.bin"
rmdir "$inst"

# live: read every 10 ms while the activity is traced.
new_instance live
enable_events
echo 1 >"$inst/tracing_on"
activity 0.5 &
activity_pid=$!
python3 - "$inst/per_cpu/cpu0/trace_pipe_raw" "$here/live/pages.bin" "$(page_size)" "$activity_pid" <<'PY'
import os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_NONBLOCK)
size, writer = int(sys.argv[3]), int(sys.argv[4])
def running():
    try:
        os.kill(writer, 0)
        return True
    except ProcessLookupError:
        return False
with open(sys.argv[2], "wb") as out:
    while True:
        alive = running()
        while True:
            try:
                page = os.read(fd, size)
            except BlockingIOError:
                break
            if not page:
                break
            out.write(page)
        if not alive:
            break
        time.sleep(0.01)
PY
wait "$activity_pid" || true
echo 0 >"$inst/tracing_on"
rmdir "$inst"

# overrun: a buffer far too small for 0.5 s of events loses some (missed-events pages).
new_instance overrun
echo 4 >"$inst/buffer_size_kb"
enable_events
echo 1 >"$inst/tracing_on"
activity 0.5
echo 0 >"$inst/tracing_on"
cat "$inst/trace" >"$here/overrun/trace.txt"
cat "$inst/per_cpu/cpu0/stats" >"$here/overrun/stats"
read_raw "$inst/per_cpu/cpu0/trace_pipe_raw" "$here/overrun/pages.bin"
rmdir "$inst"
inst=""

uname -r >"$here/kernel"
ls -l "$here"/basic "$here"/overrun
