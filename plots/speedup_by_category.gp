# `plot --by category`: speedup over autoregressive decoding per task group as grouped
# bars (Spec-Bench's leaderboard as a figure): a group per task (overall last), a bar
# per method in its colour, with its 95% bootstrap interval over the group's questions;
# a marked bar († ‡ suspect) is hollow. The AR line at 1.
load sprintf("%s/common.gp", system("dirname ".ARG0))
set xlabel ""  # the tick labels name the groups
set ylabel "speedup (tokens/s vs AR, same rounds)"
set yrange [0:*]
set xrange [-0.6:ngroups - 0.4]
set offsets 0, 0, graph 0.03, 0
set grid noxtics ytics
set xtics scale 0
# two-line group names: a blank line between them and the legend
set key title (strlen(note) > 0 ? " \n \n".lines(note) : " \n ") font ",9"
# overall is no task: a line sets it apart
if (ngroups > 1) { set arrow 1 from ngroups - 1.5, graph 0 to ngroups - 1.5, graph 1 nohead dt 3 lc rgb "#888888" }
unmarked_y(c) = strlen(strcol(6)) > 0 ? NaN : column(c)
do for [ext in exts] {
  eval(terminal(ext))
  set output outbase.".".ext
  plot for [i=0:nseries-1] datafile index i using 1:(unmarked_y(2)):3:4:(boxwidth) with boxerrorbars \
         title columnheader(1) fs solid 0.85 border lc rgb colour(i) lc rgb colour(i), \
       for [i=0:nseries-1] datafile index i using 1:(marked_y(2)):3:4:(boxwidth) with boxerrorbars \
         notitle fs empty border lc rgb colour(i) lw 2 lc rgb colour(i), \
       1 with lines dt 2 lw 1.5 lc rgb "#000000" title "AR (1x)", \
       for [j=1:items(markkey)] keyentry with boxes fs empty border lc rgb "#444444" title item(markkey, j)
  set output
}
