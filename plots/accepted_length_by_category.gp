# `plot --by category`: mean accepted length τ (tokens per target call, bonus token
# included) per task group as grouped bars, a bar per method with its 95% bootstrap
# interval over the group's questions (overall last).
load sprintf("%s/common.gp", system("dirname ".ARG0))
set xlabel ""  # the tick labels name the groups
set ylabel "mean accepted length τ (tokens per target call)"
set yrange [0:*]
set xrange [-0.6:ngroups - 0.4]
set offsets 0, 0, graph 0.03, 0
set grid noxtics ytics
set xtics scale 0
# two-line group names: a blank line between them and the legend
set key title (strlen(note) > 0 ? " \n \n".lines(note) : " \n ") font ",9"
if (ngroups > 1) { set arrow 1 from ngroups - 1.5, graph 0 to ngroups - 1.5, graph 1 nohead dt 3 lc rgb "#888888" }
do for [ext in exts] {
  eval(terminal(ext))
  set output outbase.".".ext
  plot for [i=0:nseries-1] datafile index i using 1:2:3:4:(boxwidth) with boxerrorbars \
         title columnheader(1) fs solid 0.85 border lc rgb colour(i) lc rgb colour(i)
  set output
}
