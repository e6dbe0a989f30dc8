# Mean next-token latency vs prompt length in tokens, one line per decoder configuration.
load sprintf("%s/common.gp", system("dirname ".ARG0))
set xlabel "prompt length (tokens)"
set ylabel "next-token latency (ms)"
set yrange [0:*]
do for [ext in "png svg"] {
  eval(terminal(ext))
  set output outbase.".".ext
  plot for [i=0:nseries-1] datafile index i using 1:2 with linespoints title columnheader(1) lw 2 lc rgb colour(i) dt dash(i) pt shape(i), \
       @hollow_points
  set output
}
