# gnuplot doc/clever_hans.gp, from the top of the tree, after the two runs of README.md
set terminal pngcairo size 1000,330 font ',9'
set output 'doc/clever_hans.png'
set datafile separator ','
set multiplot layout 1,2
set key bottom right
set yrange [0:1.05]
set xlabel 'epoch (313 steps of 64)'
set title 'random init, pre-LN decoder (D=2 M=4 V=8): validation accuracy'
plot 'runs/random/trial0.csv' every ::1 using 2:11 with linespoints lw 2 title 'pos 1: leading node', \
     '' every ::1 using 2:12 with linespoints lw 2 title 'pos 2', \
     '' every ::1 using 2:10 with lines dt 2 title 'pos 0 (s)', \
     '' every ::1 using 2:13 with lines dt 3 title 'pos 3 (t)', \
     0.5 with lines lc 'gray' title 'chance 1/D'
set xlabel 'step (batch 16, lr 1e-5)'
set title 'compare: readout6\_causal compiled vs random, same arch'
plot 'runs/compare/compare.csv' every 2::2 using 1:5 with linespoints lw 2 title 'compiled: lead', \
     '' every 2::1 using 1:5 with linespoints lw 2 title 'random: lead', \
     '' every 2::2 using 1:8 with lines dt 2 title 'compiled: other pos', \
     '' every 2::1 using 1:8 with lines dt 2 title 'random: other pos'
unset multiplot
