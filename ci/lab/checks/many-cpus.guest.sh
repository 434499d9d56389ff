# Check 7: every CPU of a guest of many (16 or 64: LAB_GUEST in many-cpus.sh) measured and
# traced at once: `run` on every online CPU (the default: no --cpus) with --trace for a few
# seconds, then `report` of it. The tracefs back end first; the BPF back end as well, which
# 6.1 may refuse (the verdict then says so and judges the tracefs run alone).
# The online CPUs (nproc would count the CPUs this shell may run on: isolcpus= takes CPU 1
# out of them).
grep -c '^processor' /proc/cpuinfo >cpus
cat /sys/devices/system/cpu/online >online
/jitterlab run --duration 5s --trace --trace-backend tracefs --quiet --out run >summary.txt 2>stderr
echo $? >run.exit
/jitterlab report run -o report.html >report.stdout 2>report.stderr
echo $? >report.exit
/jitterlab run --duration 5s --trace --trace-backend bpf --quiet --out run-bpf >summary-bpf.txt 2>stderr-bpf
echo $? >run-bpf.exit
