# gnuplot -c q_start.gp DAT PNG (written by experiments/study_tables.py)
set terminal pngcairo size 900,500 font ',10' noenhanced
set output ARG2
set title 'Does a compiled start solve l_t, and does it survive training at the standard rate?'
set xlabel 'step'
set ylabel 'l_t accuracy'
set yrange [0:1.05]
set key outside right
plot ARG1 index 0 using 1:3:4 with filledcurves fs transparent solid 0.2 lc 1 notitle, \
     ARG1 index 0 using 1:2 with lines lw 2 lc 1 title 'compiled', \
     ARG1 index 1 using 1:3:4 with filledcurves fs transparent solid 0.2 lc 2 notitle, \
     ARG1 index 1 using 1:2 with lines lw 2 lc 2 title 'lowgain', \
     ARG1 index 2 using 1:3:4 with filledcurves fs transparent solid 0.2 lc 3 notitle, \
     ARG1 index 2 using 1:2 with lines lw 2 lc 3 title 'compiledln', \
     ARG1 index 3 using 1:3:4 with filledcurves fs transparent solid 0.2 lc 4 notitle, \
     ARG1 index 3 using 1:2 with lines lw 2 lc 4 title 'cstock', \
     ARG1 index 4 using 1:3:4 with filledcurves fs transparent solid 0.2 lc 5 notitle, \
     ARG1 index 4 using 1:2 with lines lw 2 lc 5 title 'standard'
