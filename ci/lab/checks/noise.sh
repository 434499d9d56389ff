# Check 3's verdict (ci/lab/checks/noise.guest.sh): both tools see the injected noise (1 ms every
# 100 ms on CPU 1: 1% of the CPU, the largest single noise 1 ms) and agree on its size.
# - each of the 4 measurements: noise at least 0.8% of the CPU, the largest single noise at
#   least 0.8 ms (the injection is seen);
# - jitterlab's noise % within a factor of 2 of rtla's in the pair it ran beside (or within 1
#   percentage point: the emulator adds its own stalls to both), and its largest gap within
#   a factor of 2 of rtla's "Max Single".
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
        awk -v r="$rpct" -v j="$jpct" 'BEGIN { exit !(r >= 0.8 && j >= 0.8) }' ||
            failed+=("pair $k: the injected 1% is not seen (rtla ${rpct}%, jitterlab ${jpct}%)")
        awk -v r="$rmax" -v j="$jmax" 'BEGIN { exit !(r >= 800000 && j >= 800000) }' ||
            failed+=("pair $k: the 1 ms injection is not the largest noise (rtla ${rmax} ns, jitterlab ${jmax} ns)")
        awk -v r="$rpct" -v j="$jpct" 'BEGIN { d = r - j; if (d < 0) d = -d; exit !(d <= 1 || (j <= 2 * r && r <= 2 * j)) }' ||
            failed+=("pair $k: noise differs (rtla ${rpct}%, jitterlab ${jpct}%)")
        awk -v r="$rmax" -v j="$jmax" 'BEGIN { exit !(j <= 2 * r && r <= 2 * j) }' ||
            failed+=("pair $k: largest noise differs (rtla ${rmax} ns, jitterlab ${jmax} ns)")
    done
    if ((${#failed[@]})); then
        printf '%s; ' "${failed[@]}" "${said[@]}"
        echo
        return 1
    fi
    printf '%s; ' "${said[@]}"
    echo
}
