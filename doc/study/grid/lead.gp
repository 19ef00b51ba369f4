# gnuplot -c lead.gp DAT PNG (written by experiments/study_tables.py)
set terminal pngcairo size 900,500 font ',10' noenhanced
set output ARG2
set title 'leading-node accuracy on unseen questions (mean, 95% interval over seeds)'
set xlabel 'step'
set ylabel 'l_t accuracy'
set yrange [0:1.05]
set key outside right
plot ARG1 index 0 using 1:3:4 with filledcurves fs transparent solid 0.2 lc 1 notitle, \
     ARG1 index 0 using 1:2 with lines lw 2 lc 1 title 'armwise', \
     ARG1 index 1 using 1:3:4 with filledcurves fs transparent solid 0.2 lc 2 notitle, \
     ARG1 index 1 using 1:2 with lines lw 2 lc 2 title 'compiled', \
     ARG1 index 2 using 1:3:4 with filledcurves fs transparent solid 0.2 lc 3 notitle, \
     ARG1 index 2 using 1:2 with lines lw 2 lc 3 title 'compiledln', \
     ARG1 index 3 using 1:3:4 with filledcurves fs transparent solid 0.2 lc 4 notitle, \
     ARG1 index 3 using 1:2 with lines lw 2 lc 4 title 'cstock', \
     ARG1 index 4 using 1:3:4 with filledcurves fs transparent solid 0.2 lc 5 notitle, \
     ARG1 index 4 using 1:2 with lines lw 2 lc 5 title 'frozen', \
     ARG1 index 5 using 1:3:4 with filledcurves fs transparent solid 0.2 lc 6 notitle, \
     ARG1 index 5 using 1:2 with lines lw 2 lc 6 title 'lowgain', \
     ARG1 index 6 using 1:3:4 with filledcurves fs transparent solid 0.2 lc 7 notitle, \
     ARG1 index 6 using 1:2 with lines lw 2 lc 7 title 'randcat', \
     ARG1 index 7 using 1:3:4 with filledcurves fs transparent solid 0.2 lc 8 notitle, \
     ARG1 index 7 using 1:2 with lines lw 2 lc 8 title 'random', \
     ARG1 index 8 using 1:3:4 with filledcurves fs transparent solid 0.2 lc 9 notitle, \
     ARG1 index 8 using 1:2 with lines lw 2 lc 9 title 'standard', \
     ARG1 index 9 using 1:3:4 with filledcurves fs transparent solid 0.2 lc 10 notitle, \
     ARG1 index 9 using 1:2 with lines lw 2 lc 10 title 'structured', \
     ARG1 index 10 using 1:3:4 with filledcurves fs transparent solid 0.2 lc 11 notitle, \
     ARG1 index 10 using 1:2 with lines lw 2 lc 11 title 'taught', \
     ARG1 index 11 using 1:3:4 with filledcurves fs transparent solid 0.2 lc 12 notitle, \
     ARG1 index 11 using 1:2 with lines lw 2 lc 12 title 'taughtattn', \
     ARG1 index 12 using 1:3:4 with filledcurves fs transparent solid 0.2 lc 13 notitle, \
     ARG1 index 12 using 1:2 with lines lw 2 lc 13 title 'taughtcat'
