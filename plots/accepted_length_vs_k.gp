# Mean accepted length τ (tokens per target call, bonus token included) vs K,
# with its 95% bootstrap interval where the results hold one.
load sprintf("%s/common.gp", system("dirname ".ARG0))
set xlabel "draft length K"
set ylabel "mean accepted length τ (tokens per target call)"
set yrange [1:*]
do for [ext in exts] {
  eval(terminal(ext))
  set output outbase.".".ext
  plot for [i=0:nseries-1] datafile index i using @curve title columnheader(1) lw 2 lc rgb colour(i) dt dash(i) pt shape(i)
  set output
}
