# Shared setup of the specsweep plots. Parameters (set with gnuplot -e):
#   datafile  .dat written by `specsweep plot` (one index block per series, first line its
#             title; columns x y y_low y_high "label" "marks")
#   outbase   output path without extension; <outbase>.png and <outbase>.svg are written
#   plottitle title shown on top
#   plotsubtitle second title line(s), "|" between lines: models, prompts, CPU, kernels, threads
#   xticvals  comma-separated measured x values to put ticks at ("" = automatic)
#   markkey   key entries explaining hollow points, "|" between them ("" = none is marked)
#   canvas    "width,height" of the image in pixels (grown by `specsweep plot` to hold the legend)
#   pointkeys the points' labels ("k=2|k=4"), drawn as marker shapes with a key entry each
#   errorbars 1 when the data holds intervals (columns 3 and 4), else 0
#   colours, dashes, shapes  per series (index order), "|" between them: the colour
#             ("#0072B2"), dash pattern and filled point shape `specsweep plot` chose
#             (SeriesStyles: AR black, the others a colour-blind-safe palette)
#   logy      1 for a logarithmic y axis (the values span more than a decade)
#   note      lines under the plot naming its suspect points, "|" between lines ("" = none)
#   boxwidth, ngroups  width of one bar and number of groups of the grouped-bar plots
if (!exists("datafile")) datafile = "data.dat"
if (!exists("outbase")) outbase = "plot"
if (!exists("plottitle")) plottitle = ""
if (!exists("plotsubtitle")) plotsubtitle = ""
if (!exists("xticvals")) xticvals = ""
if (!exists("markkey")) markkey = ""
if (!exists("canvas")) canvas = "1100,650"
if (!exists("pointkeys")) pointkeys = ""
if (!exists("errorbars")) errorbars = 1
if (!exists("colours")) colours = ""
if (!exists("dashes")) dashes = ""
if (!exists("shapes")) shapes = ""
if (!exists("logy")) logy = 0
if (!exists("note")) note = ""
if (!exists("boxwidth")) boxwidth = 0.2
if (!exists("ngroups")) ngroups = 0
# Text is UTF-8 (τ, α, †, ‡, ±), drawn as written (noenhanced: no ^ _ markup).
set encoding utf8
# A curve with its error bars when the data holds intervals, else a plain line, so the
# key shows no error bar that the plot does not draw. Used as `using @curve`.
curve = errorbars ? "1:2:3:4 with yerrorlines" : "1:2 with linespoints"
stats datafile using 1 nooutput
nseries = STATS_blocks
# Lists in one string, "|" between items (one -e argument holds no newline): the
# subtitle's lines, the marks' key entries, the point keys. items(s) counts them, item(s,
# j) is the j-th (1-based), lines(s) puts them on lines of their own.
items(s) = strlen(s) == 0 ? 0 : 1 + (strstrt(s, "|") ? items(s[strstrt(s, "|") + 1:]) : 0)
item(s, j) = j <= 1 ? (strstrt(s, "|") ? s[1:strstrt(s, "|") - 1] : s) : item(s[strstrt(s, "|") + 1:], j - 1)
lines(s) = strstrt(s, "|") ? s[1:strstrt(s, "|") - 1]."\n".lines(s[strstrt(s, "|") + 1:]) : s
set title plottitle.(strlen(plotsubtitle) > 0 ? "\n".lines(plotsubtitle) : "") noenhanced
# The legend below the plot, as many columns as the width holds; its title (font 9 as
# its entries) is a line of space, so the legend never touches the x label, and the note
# naming suspect points.
set key outside below center horizontal noenhanced spacing 1.1 font ",9" \
    title (strlen(note) > 0 ? " \n".lines(note) : " ") font ",9"
# Measured x values at the ends, and the top of an autoscaled y range, sit inside the
# frame, their error bars visible.
set offsets graph 0.04, graph 0.04, graph 0.03, 0
set grid lc rgb "#dddddd"
set border lc rgb "#555555"
set pointsize 1.2
# Series i (0-based): its colour, dash pattern and filled point shape as `specsweep plot`
# chose them (colours, dashes, shapes; without them the palette in index order).
# hollow(i) is the open form of shape(i).
array palette[6] = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#56B4E9", "#CCBB44"]
colour(i) = items(colours) > i ? item(colours, i + 1) : palette[(i % 6) + 1]
dash(i) = items(dashes) > i ? int(item(dashes, i + 1)) : 1 + (i / 6) % 5
shape(i) = items(shapes) > i ? int(item(shapes, i + 1)) : 5 + 2 * ((i + i / 6) % 5)
hollow(i) = shape(i) - 1
# Points the tables mark (column 6: † busy host, ‡ 95% interval wider than ±15%) drawn
# hollow, a white point over the filled one and the open shape in the series' colour,
# and a key entry per mark (markkey) saying what hollow means. No mark is written beside
# the points: text there overlaps the error bars and the marks of nearby points (the
# tables and the .dat files keep each point's marks). Appended to a plot command as
# `, @hollow_points` (`, @hollow_keys`: the key entries only).
marked_y(c) = strlen(strcol(6)) > 0 ? column(c) : NaN
hollow_keys = "for [j=1:items(markkey)] keyentry with points pt 6 lc rgb '#444444' title item(markkey, j)"
hollow_points = "for [i=0:nseries-1] datafile index i using 1:(marked_y(2)) with points pt shape(i) lc rgb 'white' notitle, "\
  ."for [i=0:nseries-1] datafile index i using 1:(marked_y(2)) with points pt hollow(i) lc rgb colour(i) notitle, "\
  .hollow_keys
if (strlen(xticvals) > 0) { eval("set xtics (".xticvals.")") }
# The PNG terminal: pngcairo when built in, else the libgd png one. The print version:
# PDF (pdfcairo), or EPS where this gnuplot has no pdfcairo (epscairo, else postscript
# eps). exts lists the images; terminal(ext) is the command that opens the image of type
# ext at the canvas size (print: the PNG's pixels as points, 72 to the inch, so its text
# sits where the PNG's does; a paper scales it to the column).
png_term = (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) ? "pngcairo" : "png"
print_ext = (strstrt(GPVAL_TERMINALS, "pdfcairo") > 0) ? "pdf" : "eps"
eps_term = (strstrt(GPVAL_TERMINALS, "epscairo") > 0) ? "epscairo" : "postscript eps color"
exts = "png svg ".print_ext
canvas_w = real(canvas[1:strstrt(canvas, ",") - 1])
canvas_h = real(canvas[strstrt(canvas, ",") + 1:])
print_size = sprintf("size %.2fin,%.2fin", canvas_w / 72, canvas_h / 72)
terminal(ext) = ext eq "png" ? "set terminal ".png_term." size ".canvas." noenhanced" \
              : ext eq "svg" ? "set terminal svg size ".canvas." dynamic noenhanced" \
              : ext eq "pdf" ? "set terminal pdfcairo ".print_size." noenhanced fontscale 1" \
                             : "set terminal ".eps_term." ".print_size." noenhanced"
