# Speedup over autoregressive decoding vs draft length K, one line per decoder/draft,
# with the 95% bootstrap interval of each point as an error bar.
load sprintf("%s/common.gp", system("dirname ".ARG0))
set xlabel "draft length K"
set ylabel "speedup (tokens/s vs AR, same rounds)"
set yrange [0:*]
do for [ext in exts] {
  eval(terminal(ext))
  set output outbase.".".ext
  plot for [i=0:nseries-1] datafile index i using @curve title columnheader(1) \
         lw 2 lc rgb colour(i) dt dash(i) pt shape(i), \
       1 with lines dt 2 lw 1.5 lc rgb "#000000" title "AR (1x)", @hollow_points
  set output
}
