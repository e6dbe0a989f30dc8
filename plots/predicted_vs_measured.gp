# Measured speedup (with its 95% interval) against the verify-cost model's prediction
# E[tokens per step] x T(1) / (draft time per step + T(K+1)); each point labelled with
# its K and draft. Points on the diagonal agree.
load sprintf("%s/common.gp", system("dirname ".ARG0))
set xlabel "predicted speedup (cost model)"
set ylabel "measured speedup"
stats datafile using 1:4 nooutput
hi = (STATS_max_x > STATS_max_y ? STATS_max_x : STATS_max_y) * 1.15
set xrange [0:hi]
set yrange [0:hi]
set xtics autofreq
set size ratio -1
# The square plot is narrower than the canvas and the title is centred over it: a smaller
# font keeps the subtitle inside.
set title font ",9"
do for [ext in "png svg"] {
  if (ext eq "png") { eval("set terminal ".png_term." size 1000,700 noenhanced") } else { set terminal svg size 1000,700 dynamic noenhanced }
  set output outbase.".".ext
  plot for [i=0:nseries-1] datafile index i using 1:2:3:4 with yerrorbars title columnheader(1) \
         lc rgb colour(i) pt shape(i), \
       for [i=0:nseries-1] datafile index i using 1:2:5 with labels offset 0.8,0.6 left font ",8" \
         tc rgb colour(i) notitle, \
       x with lines dt 2 lc rgb "#888888" title "measured = predicted", @hollow_points
  set output
}
