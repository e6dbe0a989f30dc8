# Conditional acceptance at each draft position (1 = first drafted token): accepted at i
# among the steps that accepted i-1 and drafted i. The results also hold the unconditional rate.
load sprintf("%s/common.gp", system("dirname ".ARG0))
set xlabel "draft position"
set ylabel "conditional acceptance: P(accept i | i-1 accepted)"
set yrange [0:1.05]
do for [ext in "png svg"] {
  eval(terminal(ext))
  set output outbase.".".ext
  plot for [i=0:nseries-1] datafile index i using 1:2 with linespoints title columnheader(1) lw 2 lc rgb colour(i) dt dash(i) pt shape(i)
  set output
}
