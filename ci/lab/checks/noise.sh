# Check 3's verdict (ci/lab/checks/noise.guest.sh): both tools see the injected noise (5 ms every
# 100 ms on CPU 1: 5% of the CPU) and agree on its size.
# - each of the 4 measurements: noise at least 4% of the CPU, the largest single noise at
#   least 4 ms (the injection is seen);
# - jitterlab's noise % within a factor of 1.5 of rtla's in the pair it ran beside, or within 2
#   percentage points (the emulator adds stalls of its own to both). The largest single noise
#   is not compared: under TCG it is the emulator's longest stall, not the injection.
# On a kernel without the osnoise tracer (tracefs's available_tracers, kept by the guest, does
# not list it: Debian's standard 6.1 kernel is built without CONFIG_OSNOISE_TRACER) rtla
# osnoise cannot run, so jitterlab is judged alone against the injection: its noise % within
# the same factor 1.5 (or 2 points) of the injected 5%, where rtla measured 5.3-5.6% on the RT
# kernel. The line says rtla did not run, and why.
# rtla osnoise top's last line for CPU 1: CPU Period Runtime Noise %CPU-Aval MaxNoise
# MaxSingle HW NMI IRQ Softirq Thread (times in us).
verdict_noise() {
    local dir=$1 k line failed=() said=() alone= unit=pair ref=rtla
    [[ -s $dir/available_tracers ]] || { echo "the guest did not list the kernel's tracers (available_tracers)"; return 1; }
    grep -qw osnoise "$dir/available_tracers" ||
        alone="this kernel has no osnoise tracer (available_tracers: $(tr '\n' ' ' <"$dir/available_tracers" | sed 's/ *$//'); CONFIG_OSNOISE_TRACER is not set), so rtla osnoise cannot run: jitterlab judged against the injected 5%" unit=run ref=injected
    for k in 1 2; do
        [[ -n $alone ]] || [[ $(cat "$dir/rtla-$k.exit" 2>/dev/null) == 0 ]] ||
            { echo "rtla osnoise top exited $(cat "$dir/rtla-$k.exit" 2>/dev/null): $(tail -2 "$dir/rtla-$k.err" | tr '\n' ' ')"; return 1; }
        [[ $(cat "$dir/jl-$k.exit" 2>/dev/null) == 0 ]] ||
            { echo "jitterlab noise exited $(cat "$dir/jl-$k.exit" 2>/dev/null): $(tail -2 "$dir/jl-$k.err" | tr '\n' ' ')"; return 1; }
        if [[ -n $alone ]]; then
            # The injection stands in for rtla: 5% of the CPU, single noises of 5 ms.
            line="1 #0 0 0 95 0 5000"
        else
            line=$(awk '$1 == "1" && $2 ~ /^#/ { l = $0 } END { print l }' "$dir/rtla-$k.txt")
            [[ -n $line ]] || { echo "no line for CPU 1 in rtla's output $k: $(tail -3 "$dir/rtla-$k.txt" | tr '\n' ' ')"; return 1; }
        fi
        local r
        r=$(jq -r --arg line "$line" '
            ($line | split(" ") | map(select(length > 0))) as $f
            | (100 - ($f[4] | tonumber)) as $rpct
            | (($f[6] | tonumber) * 1000) as $rmax
            | .threads[0] as $t
            | $t.noise.noise_pct as $jpct
            | $t.max_ns as $jmax
            | "\($rpct) \($rmax) \($jpct) \($jmax)"' "$dir/jl-$k/run.json") ||
            { echo "cannot read jl-$k/run.json"; return 1; }
        read -r rpct rmax jpct jmax <<<"$r"
        if [[ -n $alone ]]; then
            said+=("run $k: jitterlab $(printf %.2f "$jpct")% largest gap $((${jmax%.*} / 1000)) us (injected 5%, 5 ms)")
        else
            said+=("pair $k: rtla $(printf %.2f "$rpct")% max single $((${rmax%.*} / 1000)) us, jitterlab $(printf %.2f "$jpct")% largest gap $((${jmax%.*} / 1000)) us")
        fi
        awk -v r="$rpct" -v j="$jpct" 'BEGIN { exit !(r >= 4 && j >= 4) }' ||
            failed+=("$unit $k: the injected 5% is not seen (${ref} ${rpct}%, jitterlab ${jpct}%)")
        awk -v r="$rmax" -v j="$jmax" 'BEGIN { exit !(r >= 4000000 && j >= 4000000) }' ||
            failed+=("$unit $k: the 5 ms injection is not seen (largest: ${ref} ${rmax} ns, jitterlab ${jmax} ns)")
        awk -v r="$rpct" -v j="$jpct" 'BEGIN { d = r - j; if (d < 0) d = -d; exit !(d <= 2 || (j <= 1.5 * r && r <= 1.5 * j)) }' ||
            failed+=("$unit $k: noise differs (${ref} ${rpct}%, jitterlab ${jpct}%)")
    done
    [[ -z $alone ]] || said+=("$alone")
    if ((${#failed[@]})); then
        printf '%s; ' "${failed[@]}" "${said[@]}"
        echo
        return 1
    fi
    printf '%s; ' "${said[@]}"
    echo
}
