# Shared setup of the specsweep plots. Parameters (set with gnuplot -e):
#   datafile  .dat written by `specsweep plot` (one index block per series, first line its
#             title; columns x y y_low y_high "label")
#   outbase   output path without extension; <outbase>.png and <outbase>.svg are written
#   plottitle title shown on top
#   plotsubtitle second, smaller title line: models, prompts, CPU, kernels, threads
#   xticvals  comma-separated measured x values to put ticks at ("" = automatic)
if (!exists("datafile")) datafile = "data.dat"
if (!exists("outbase")) outbase = "plot"
if (!exists("plottitle")) plottitle = ""
if (!exists("plotsubtitle")) plotsubtitle = ""
if (!exists("xticvals")) xticvals = ""
stats datafile using 1 nooutput
nseries = STATS_blocks
set title plottitle.(strlen(plotsubtitle) > 0 ? "\n".plotsubtitle : "") noenhanced
set key outside below center horizontal maxrows 4 noenhanced spacing 1.1 font ",9"
set grid lc rgb "#dddddd"
set border lc rgb "#555555"
set pointsize 1.2
# Series i: one of 8 colours (colour-blind safe), a new dash pattern and point shape
# every 8 series, so 16 or 24 series stay distinct.
array palette[8] = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"]
colour(i) = palette[(i % 8) + 1]
dash(i) = 1 + (i / 8) % 5
shape(i) = 5 + 2 * ((i / 8) % 4) + (i % 2)
if (strlen(xticvals) > 0) { eval("set xtics (".xticvals.")") }
# The PNG terminal: pngcairo when built in, else the libgd png one.
png_term = (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) ? "pngcairo" : "png"
