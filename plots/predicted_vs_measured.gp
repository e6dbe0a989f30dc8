# Measured speedup against Leviathan et al.'s prediction (1-a^(K+1))/((1-a)(cK+1)) from
# measured acceptance a, K and cost ratio c; points on the diagonal agree.
load sprintf("%s/common.gp", system("dirname ".ARG0))
set xlabel "predicted speedup"
set ylabel "measured speedup"
set style data points
stats datafile using 1:2 nooutput
hi = (STATS_max_x > STATS_max_y ? STATS_max_x : STATS_max_y) * 1.1
set xrange [0:hi]
set yrange [0:hi]
set size ratio -1
do for [ext in "png svg"] {
  if (ext eq "png") { eval("set terminal ".png_term." size 1000,700 noenhanced") } else { set terminal svg size 1000,700 dynamic noenhanced }
  set output outbase.".".ext
  plot for [i=0:nseries-1] datafile index i using 1:2 title columnheader(1) pt 7, \
       x with lines dt 2 lc rgb "#888888" title "measured = predicted"
  set output
}
