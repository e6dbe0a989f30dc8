# Shared setup of the specsweep plots. Parameters (set with gnuplot -e):
#   datafile  .dat written by `specsweep plot` (one index block per series, first line its
#             title; columns x y y_low y_high "label")
#   outbase   output path without extension; <outbase>.png and <outbase>.svg are written
#   plottitle title shown on top
#   plotsubtitle second, smaller title line: models, prompts, CPU, kernels, threads
#   xticvals  comma-separated measured x values to put ticks at ("" = automatic)
#   markkey   key entry explaining hollow points ("" = none is marked)
if (!exists("datafile")) datafile = "data.dat"
if (!exists("outbase")) outbase = "plot"
if (!exists("plottitle")) plottitle = ""
if (!exists("plotsubtitle")) plotsubtitle = ""
if (!exists("xticvals")) xticvals = ""
if (!exists("markkey")) markkey = ""
stats datafile using 1 nooutput
nseries = STATS_blocks
set title plottitle.(strlen(plotsubtitle) > 0 ? "\n".plotsubtitle : "") noenhanced
set key outside below center horizontal maxrows 4 noenhanced spacing 1.1 font ",9"
set grid lc rgb "#dddddd"
set border lc rgb "#555555"
set pointsize 1.2
# Series i: one of 8 colours (colour-blind safe) and 5 filled point shapes (square,
# circle, triangles, diamond), a new dash pattern every 8 series, so 24 series stay
# distinct. hollow(i) is the open form of shape(i).
array palette[8] = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"]
colour(i) = palette[(i % 8) + 1]
dash(i) = 1 + (i / 8) % 5
shape(i) = 5 + 2 * ((i + i / 8) % 5)
hollow(i) = shape(i) - 1
# Points the tables mark (column 6: † busy host, ‡ 95% interval wider than ±15%) drawn
# hollow, a white point over the filled one and the open shape in the series' colour,
# with the marks beside them, and one key entry (markkey) saying so. Appended to a plot
# command as `, @hollow_points`.
marked_y(c) = strlen(strcol(6)) > 0 ? column(c) : NaN
hollow_points = "for [i=0:nseries-1] datafile index i using 1:(marked_y(2)) with points pt shape(i) lc rgb 'white' notitle, "\
  ."for [i=0:nseries-1] datafile index i using 1:(marked_y(2)) with points pt hollow(i) lc rgb colour(i) notitle, "\
  ."for [i=0:nseries-1] datafile index i using 1:2:6 with labels offset -1.3,0.9 font ',10' tc rgb colour(i) notitle, "\
  ."keyentry with points pt 6 lc rgb '#444444' title markkey"
if (strlen(xticvals) > 0) { eval("set xtics (".xticvals.")") }
# The PNG terminal: pngcairo when built in, else the libgd png one.
png_term = (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) ? "pngcairo" : "png"
