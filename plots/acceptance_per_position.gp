# Conditional acceptance at each draft position (1 = first drafted token): accepted at i
# among the steps that accepted i-1 and drafted i, with its 95% Wilson interval; the
# legend gives n (those steps) per position. A position no step reached (0/0) is a blank
# line in the data: a gap in the curve, not a point at 0. The results also hold the
# unconditional rate.
load sprintf("%s/common.gp", system("dirname ".ARG0))
set xlabel "draft position"
set ylabel "conditional acceptance: P(accept i | i-1 accepted)"
set yrange [0:1.05]
do for [ext in exts] {
  eval(terminal(ext))
  set output outbase.".".ext
  plot for [i=0:nseries-1] datafile index i using @curve title columnheader(1) lw 2 lc rgb colour(i) dt dash(i) pt shape(i)
  set output
}
