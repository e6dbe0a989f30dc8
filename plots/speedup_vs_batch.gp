# Speedup over autoregressive decoding at the same batch size vs the batch size (log2
# axis), one colour per draft configuration: the measured points with their 95% bootstrap
# interval as a solid line, the verify-cost model's prediction from the costs measured at
# each batch as a dashed line of the same colour. Series come in pairs: index 2j is a
# configuration's measured speedup, 2j+1 its prediction. Below the y = 1 line speculation
# loses to autoregressive decoding at that batch (docs/batching.md).
load sprintf("%s/common.gp", system("dirname ".ARG0))
set xlabel "batch size B (sequences per target call, log2 scale)"
set ylabel "speedup (tokens/s of the batch vs AR at the same B)"
set logscale x 2
set yrange [0:*]
npairs = nseries / 2
do for [ext in exts] {
  eval(terminal(ext))
  set output outbase.".".ext
  plot for [j=0:npairs-1] datafile index 2*j using @curve title columnheader(1) \
         lw 2 lc rgb colour(2*j) dt 1 pt shape(2*j), \
       for [j=0:npairs-1] datafile index 2*j+1 using 1:2 with lines notitle lw 2 lc rgb colour(2*j) dt 2, \
       keyentry with lines lw 2 dt 2 lc rgb "#444444" title "dashed: predicted (cost model at B)", \
       1 with lines dt 3 lw 1.5 lc rgb "#000000" title "AR (1x)", @hollow_points
  set output
}
