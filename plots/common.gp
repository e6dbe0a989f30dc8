# Shared setup of the specsweep plots. Parameters (set with gnuplot -e):
#   datafile  .dat written by `specsweep plot` (one index block per series, first line its title)
#   outbase   output path without extension; <outbase>.png and <outbase>.svg are written
#   plottitle title shown on top
if (!exists("datafile")) datafile = "data.dat"
if (!exists("outbase")) outbase = "plot"
if (!exists("plottitle")) plottitle = ""
stats datafile nooutput
nseries = STATS_blocks
set title plottitle noenhanced
set key outside right top noenhanced spacing 1.1 font ",9"
set grid lc rgb "#dddddd"
set border lc rgb "#555555"
set style data linespoints
set pointsize 1.2
# The PNG terminal: pngcairo when built in, else the libgd png one.
png_term = (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) ? "pngcairo" : "png"
