# Measured speedup (with its 95% interval) against the verify-cost model's prediction
# E[tokens per step] x T(1) / (draft time per step + T(K+1)). The draft is the colour,
# K the marker shape (pointkeys, one key entry each): no text beside the points, which
# overlaps where points nearly coincide. Points on the diagonal agree.
# Parameter besides common.gp's: keyside "right" or "below", where the legend goes.
load sprintf("%s/common.gp", system("dirname ".ARG0))
set xlabel "predicted speedup (cost model)"
set ylabel "measured speedup"
stats datafile using 1:4 nooutput
hi = (STATS_max_x > STATS_max_y ? STATS_max_x : STATS_max_y) * 1.15
set xrange [0:hi]
set yrange [0:hi]
set xtics autofreq
set size ratio -1
# The square plot leaves the canvas' width free on the right: the legend goes there
# (keyside "right", when its titles are short and few enough), one entry a line, in the
# font gnuplot sizes the key by (a smaller one leaves a gap); else below, as in common.gp.
if (!exists("keyside")) keyside = "right"
if (keyside eq "right") { set key outside right top vertical Left reverse noenhanced spacing 1.2 font "" title "" }
set title font ""
# The series: colour(i), and from the ninth on a dash pattern of the error bars.
# Key j (1-based, in pointkeys order): six filled shapes (circle, square, triangles,
# diamond, pentagon), larger from the seventh key on; the open form marks a point as
# in the tables.
array kshapes[6] = [7, 5, 9, 11, 13, 15]
kshape(j) = kshapes[((j - 1) % 6) + 1]
ksize(j) = 1.3 + 0.9 * ((j - 1) / 6)
keyof(label, s, j) = strlen(s) == 0 ? 1 : (item(s, 1) eq label ? j : \
                     (strstrt(s, "|") ? keyof(label, s[strstrt(s, "|") + 1:], j + 1) : 1))
key(label) = keyof(label, pointkeys, 1)
unmarked_y(c) = strlen(strcol(6)) > 0 ? NaN : column(c)
do for [ext in exts] {
  eval(terminal(ext))
  set output outbase.".".ext
  plot for [i=0:nseries-1] datafile index i using 1:2:3:4 with yerrorbars title columnheader(1) \
         lc rgb colour(i) dt dash(i) pt 7 ps 0, \
       for [i=0:nseries-1] datafile index i using 1:(unmarked_y(2)):(ksize(key(strcol(5)))):(kshape(key(strcol(5)))) \
         with points ps variable pt variable lc rgb colour(i) notitle, \
       for [i=0:nseries-1] datafile index i using 1:(marked_y(2)):(ksize(key(strcol(5)))):(kshape(key(strcol(5)))) \
         with points ps variable pt variable lc rgb "white" notitle, \
       for [i=0:nseries-1] datafile index i using 1:(marked_y(2)):(ksize(key(strcol(5)))):(kshape(key(strcol(5))) - 1) \
         with points ps variable pt variable lc rgb colour(i) notitle, \
       for [j=1:items(pointkeys)] keyentry with points pt kshape(j) ps ksize(j) lc rgb "#444444" title item(pointkeys, j), \
       x with lines dt 2 lc rgb "#888888" title "measured = predicted", @hollow_keys
  set output
}
