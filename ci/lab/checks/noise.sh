# Check 3's verdict (ci/lab/checks/noise.guest.sh): both tools see the injected noise (5 ms every
# 100 ms on CPU 1: 5% of the CPU) and agree on its size.
# - each of the 4 measurements: noise at least 4% of the CPU, the largest single noise at
#   least 4 ms (the injection is seen);
# - jitterlab's noise % within a factor of 1.5 of rtla's in the pair it ran beside, or within 2
#   percentage points (the emulator adds stalls of its own to both). The largest single noise
#   is not compared: under TCG it is the emulator's longest stall, not the injection.
# rtla osnoise top's last line for CPU 1: CPU Period Runtime Noise %CPU-Aval MaxNoise
# MaxSingle HW NMI IRQ Softirq Thread (times in us).
verdict_noise() {
    local dir=$1 k line failed=() said=()
    for k in 1 2; do
        [[ $(cat "$dir/rtla-$k.exit" 2>/dev/null) == 0 ]] ||
            { echo "rtla osnoise top exited $(cat "$dir/rtla-$k.exit" 2>/dev/null): $(tail -2 "$dir/rtla-$k.err" | tr '\n' ' ')"; return 1; }
        [[ $(cat "$dir/jl-$k.exit" 2>/dev/null) == 0 ]] ||
            { echo "jitterlab noise exited $(cat "$dir/jl-$k.exit" 2>/dev/null): $(tail -2 "$dir/jl-$k.err" | tr '\n' ' ')"; return 1; }
        line=$(awk '$1 == "1" && $2 ~ /^#/ { l = $0 } END { print l }' "$dir/rtla-$k.txt")
        [[ -n $line ]] || { echo "no line for CPU 1 in rtla's output $k: $(tail -3 "$dir/rtla-$k.txt" | tr '\n' ' ')"; return 1; }
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
        said+=("pair $k: rtla $(printf %.2f "$rpct")% max single $((${rmax%.*} / 1000)) us, jitterlab $(printf %.2f "$jpct")% largest gap $((${jmax%.*} / 1000)) us")
        awk -v r="$rpct" -v j="$jpct" 'BEGIN { exit !(r >= 4 && j >= 4) }' ||
            failed+=("pair $k: the injected 5% is not seen (rtla ${rpct}%, jitterlab ${jpct}%)")
        awk -v r="$rmax" -v j="$jmax" 'BEGIN { exit !(r >= 4000000 && j >= 4000000) }' ||
            failed+=("pair $k: the 5 ms injection is not seen (largest: rtla ${rmax} ns, jitterlab ${jmax} ns)")
        awk -v r="$rpct" -v j="$jpct" 'BEGIN { d = r - j; if (d < 0) d = -d; exit !(d <= 2 || (j <= 1.5 * r && r <= 1.5 * j)) }' ||
            failed+=("pair $k: noise differs (rtla ${rpct}%, jitterlab ${jpct}%)")
    done
    if ((${#failed[@]})); then
        printf '%s; ' "${failed[@]}" "${said[@]}"
        echo
        return 1
    fi
    printf '%s; ' "${said[@]}"
    echo
}
