# gnuplot -c q_teacher.gp DAT PNG (written by experiments/study_tables.py)
set terminal pngcairo size 900,500 font ',10' noenhanced
set output ARG2
set title 'Does a compiled teacher make l_t learnable?'
set xlabel 'step'
set ylabel 'l_t accuracy'
set yrange [0:1.05]
set key outside right
plot ARG1 index 0 using 1:3:4 with filledcurves fs transparent solid 0.2 lc 1 notitle, \
     ARG1 index 0 using 1:2 with lines lw 2 lc 1 title 'taught', \
     ARG1 index 1 using 1:3:4 with filledcurves fs transparent solid 0.2 lc 2 notitle, \
     ARG1 index 1 using 1:2 with lines lw 2 lc 2 title 'taughtcat', \
     ARG1 index 2 using 1:3:4 with filledcurves fs transparent solid 0.2 lc 3 notitle, \
     ARG1 index 2 using 1:2 with lines lw 2 lc 3 title 'taughtattn', \
     ARG1 index 3 using 1:3:4 with filledcurves fs transparent solid 0.2 lc 4 notitle, \
     ARG1 index 3 using 1:2 with lines lw 2 lc 4 title 'randcat', \
     ARG1 index 4 using 1:3:4 with filledcurves fs transparent solid 0.2 lc 5 notitle, \
     ARG1 index 4 using 1:2 with lines lw 2 lc 5 title 'random', \
     ARG1 index 5 using 1:3:4 with filledcurves fs transparent solid 0.2 lc 6 notitle, \
     ARG1 index 5 using 1:2 with lines lw 2 lc 6 title 'standard'
