# Per-token acceptance α (accepted / draft tokens evaluated) vs draft length K, one line
# per draft, with its 95% bootstrap interval where the results hold one.
load sprintf("%s/common.gp", system("dirname ".ARG0))
set xlabel "draft length K"
set ylabel "α: per-token acceptance (accepted / evaluated)"
set yrange [0:1.05]
do for [ext in exts] {
  eval(terminal(ext))
  set output outbase.".".ext
  plot for [i=0:nseries-1] datafile index i using @curve title columnheader(1) lw 2 lc rgb colour(i) dt dash(i) pt shape(i)
  set output
}
