# Mean next-token latency vs prompt length in tokens, one line per decoder configuration.
load sprintf("%s/common.gp", system("dirname ".ARG0))
set xlabel "prompt length (tokens)"
set ylabel "next-token latency (ms)"
# Series a decade apart (AR and a small draft under a large one) on a log axis (logy).
if (logy) { set logscale y 10; set yrange [*:*]; set autoscale yfix; set ylabel "next-token latency (ms, log scale)" } else { set yrange [0:*] }
do for [ext in exts] {
  eval(terminal(ext))
  set output outbase.".".ext
  plot for [i=0:nseries-1] datafile index i using 1:2 with linespoints title columnheader(1) lw 2 lc rgb colour(i) dt dash(i) pt shape(i), \
       @hollow_points
  set output
}
