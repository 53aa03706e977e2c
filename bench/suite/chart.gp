# The chart of scripts/bench.sh: throughput per receiver (left) and latency (right), both on
# log scales because the peers span three orders of magnitude. Run as
#   gnuplot -e "dir='<raw results dir>'; out='<chart.png>'" chart.gp
set terminal pngcairo size 1600,800 font ",11" noenhanced
set output out
set multiplot layout 1,2 title "mq benchmark suite: medians of one run (ratios in results.md)"

set style fill solid 0.85 border -1
set boxwidth 0.7
set grid ytics mytics
set logscale y
set xtics rotate by -40 left
set bmargin 16
set rmargin 8
set key off

set title "Throughput per receiver (million msg/s, log scale)"
set ylabel "M msg/s"
plot dir."/throughput.dat" using 0:2:($3 == 1 ? 0x1f77b4 : 0xaaaaaa):xtic(1) with boxes lc rgb variable, \
     "" using 0:2:(sprintf("%.2f", $2)) with labels offset 0,0.7 font ",9"

set title "Latency (µs, log scale): p50 / p99 / p99.9"
set ylabel "µs"
set style data histograms
set style histogram clustered gap 1
set boxwidth 0.9
set key top left
plot dir."/latency.dat" using 2:xtic(1) title "p50" lc rgb 0x1f77b4, \
     "" using 3 title "p99" lc rgb 0xff7f0e, \
     "" using 4 title "p99.9" lc rgb 0xd62728
unset multiplot
