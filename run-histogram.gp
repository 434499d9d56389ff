# gnuplot script written by jitterlab: latency histogram of /tmp/.tmp75NiR4/run
# gnuplot run-histogram.gp writes run-histogram.svg; choose another output with
#   gnuplot -e "outfile='x.png'; term='pngcairo size 1200,700'" run-histogram.gp
# Run it in the directory of run-histogram.dat (or set datafile the same way).
if (!exists("datafile")) datafile = "run-histogram.dat"
if (!exists("outfile")) outfile = "run-histogram.svg"
if (!exists("term")) term = "svg size 1000,600 dynamic"
set terminal @term
set output outfile
set title "Latency histogram: /tmp/.tmp75NiR4/run" noenhanced
set xlabel "latency (us)"
set ylabel "wakeups per 1 us bin"
set logscale y
set yrange [0.5:*]
set xrange [-1.4994899999999998:51.48249]
set grid
set key top right
set arrow 1 from 49.979, graph 0 to 49.979, graph 1 nohead back dt 2 lc rgb "#0072B2"
set label 1 "CPU 0 max 50.0 us" at 49.979, graph 0.95 right offset -0.5,0 tc rgb "#0072B2" noenhanced
set arrow 2 from 49.965, graph 0 to 49.965, graph 1 nohead back dt 2 lc rgb "#D55E00"
set label 2 "CPU 1 max 50.0 us" at 49.965, graph 0.8999999999999999 right offset -0.5,0 tc rgb "#D55E00" noenhanced
plot datafile using 1:2 with impulses lw 1.5 lc rgb "#0072B2" title "CPU 0", \
     '' using 1:3 with impulses lw 1.5 lc rgb "#D55E00" title "CPU 1"
