# gnuplot -c q_plateau.gp DAT PNG (written by experiments/study_tables.py)
set terminal pngcairo size 900,500 font ',10' noenhanced
set output ARG2
set title 'Does the standard decoder stay on the plateau, and does it leave it where the paper''s decoder does?'
set xlabel 'step'
set ylabel 'l_t accuracy'
set yrange [0:1.05]
set key outside right
plot ARG1 index 0 using 1:3:4 with filledcurves fs transparent solid 0.2 lc 1 notitle, \
     ARG1 index 0 using 1:2 with lines lw 2 lc 1 title 'armwise', \
     ARG1 index 1 using 1:3:4 with filledcurves fs transparent solid 0.2 lc 2 notitle, \
     ARG1 index 1 using 1:2 with lines lw 2 lc 2 title 'structured', \
     ARG1 index 2 using 1:3:4 with filledcurves fs transparent solid 0.2 lc 3 notitle, \
     ARG1 index 2 using 1:2 with lines lw 2 lc 3 title 'standard'
