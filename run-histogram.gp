# gnuplot script written by jitterlab: latency histogram of /tmp/.tmp53Lj0B/run
# gnuplot run-histogram.gp writes run-histogram.svg; choose another output with
#   gnuplot -e "outfile='x.png'; term='pngcairo size 1200,700'" run-histogram.gp
# Run it in the directory of run-histogram.dat (or set datafile the same way).
if (!exists("datafile")) datafile = "run-histogram.dat"
if (!exists("outfile")) outfile = "run-histogram.svg"
if (!exists("term")) term = "svg size 1000,600 dynamic"
set terminal @term
set output outfile
set title "Latency histogram: /tmp/.tmp53Lj0B/run" noenhanced
set xlabel "latency (us)"
set ylabel "wakeups per 1 us bin"
set logscale y
set yrange [0.8:*]
set xrange [0:*]
set grid
set key top right
plot datafile using 1:2 with steps lw 1.5 lc rgb "#0072B2" title "CPU 0", \
     '' using 1:3 with steps lw 1.5 lc rgb "#D55E00" title "CPU 1"
