#include "harness/report/plot_layout.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <set>

#include <fmt/ranges.h>

#include "base/utf8.h"
#include "harness/store/results.h"

namespace specsweep {

namespace {

// Legend metrics of common.gp's key (font 9, spacing 1.1) as gnuplot lays it out in the
// PNG (pngcairo; the SVG's estimate is smaller, so the PNG sets the rows), measured on
// keys of titles of 20 to 70 characters: a row is 15.5 px, a column 8.2 px a character
// of the longest title plus 47 px of sample and gaps, and the columns share the canvas
// width less about 60 px.
constexpr int kRowPx = 16;
constexpr double kCharPx = 8.2;
constexpr double kSamplePx = 47;
constexpr int kMarginsPx = 60;
// Rows the base canvas (650 px) holds below the plot without shrinking it.
constexpr size_t kRowsBelow = 3;
// The key beside the plot (predicted_vs_measured.gp: default font, spacing 1.2): 22.5 px
// a line, and about 100 px of the canvas height above and below it.
constexpr int kRightRowPx = 23;
constexpr int kSpareRight = 100;

// Numbers inside labels compared by value: "k=2" < "k=12".
bool NaturalLess(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t ie = i, je = j;
      while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie]))) ++ie;
      while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je]))) ++je;
      const std::string na = a.substr(i, ie - i), nb = b.substr(j, je - j);
      if (na.size() != nb.size()) return na.size() < nb.size();  // no leading zeros in K
      if (na != nb) return na < nb;
      i = ie, j = je;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i, ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

}  // namespace

std::string PlotSubtitle(const nlohmann::json& context, const std::vector<AggregateRecord>& records) {
  std::set<std::string> models, isas, threads;
  for (auto& r : records) {
    models.insert(FieldText(r, "model"));
    if (!FieldText(r, "kernel_isa").empty()) isas.insert(KernelsLabel(r.flat));
    if (!FieldText(r, "threads_used").empty()) threads.insert(FieldText(r, "threads_used"));
  }
  std::vector<std::string> parts{fmt::format("{}", fmt::join(models, ", "))};
  const nlohmann::json* prompts = context.contains("prompts") ? &context["prompts"] : nullptr;
  if (prompts && prompts->contains("file"))
    parts.push_back("prompts " + std::filesystem::path((*prompts)["file"].value("path", "")).filename().string());
  else if (prompts && prompts->contains("passages"))
    parts.push_back("passages " + std::filesystem::path((*prompts)["passages"].value("path", "")).filename().string());
  if (context.contains("cpu_model") && context["cpu_model"].is_string())
    parts.push_back(context["cpu_model"].get<std::string>());
  if (!isas.empty()) parts.push_back(fmt::format("kernels {}", fmt::join(isas, "/")));
  if (!threads.empty()) parts.push_back(fmt::format("{} threads", fmt::join(threads, "/")));
  parts.push_back("error bars: 95% bootstrap CI");
  std::string t = fmt::format("{}", fmt::join(parts, "; "));
  std::erase(t, '\'');                         // passed to gnuplot in single quotes
  std::replace(t.begin(), t.end(), '|', '/');  // "|" breaks lines there (common.gp)
  return t;
}

std::string PlotCaption(const nlohmann::json& context, const std::vector<AggregateRecord>& records) {
  std::set<std::string> reps, prompts, tokens;
  for (auto& r : records) {
    reps.insert(FieldText(r, "repetitions"));
    prompts.insert(FieldText(r, "prompts"));
    tokens.insert(FieldText(r, "max_new_tokens"));
  }
  auto join = [](std::set<std::string> v) {
    v.erase("");
    return v.empty() ? std::string("?") : fmt::format("{}", fmt::join(v, "/"));
  };
  std::vector<std::string> parts;
  std::string date = context.is_object() && context.contains("date") && context["date"].is_string()
                         ? context["date"].get<std::string>()
                         : "";
  // "2026-11-29T04:30:50+0000" (ISO 8601, UTC) as "2026-11-29 04:30 UTC".
  if (date.size() == 24 && date[10] == 'T' && date.ends_with("+0000"))
    date = date.substr(0, 10) + " " + date.substr(11, 5) + " UTC";
  if (!date.empty()) parts.push_back(date);
  parts.push_back(fmt::format("n = {} repetitions x {} prompts", join(reps), join(prompts)));
  parts.push_back("max_new_tokens " + join(tokens));
  std::string t = fmt::format("{}", fmt::join(parts, "; "));
  std::erase(t, '\'');
  std::replace(t.begin(), t.end(), '|', '/');
  return t;
}

std::string WrapParts(const std::string& text, size_t width) {
  std::string out, line;
  size_t at = 0;
  while (at <= text.size()) {
    size_t end = text.find("; ", at);
    const bool last = end == std::string::npos;
    const std::string part = text.substr(at, last ? std::string::npos : end - at);
    const std::string joined = line.empty() ? part : line + "; " + part;
    if (!line.empty() && joined.size() > width) {
      out += (out.empty() ? "" : "\n") + line;
      line = part;
    } else {
      line = joined;
    }
    if (last) break;
    at = end + 2;
  }
  if (!line.empty()) out += (out.empty() ? "" : "\n") + line;
  return out;
}

namespace {

// UTF-8 code points of `s`: their byte offsets.
std::vector<size_t> CodePoints(const std::string& s) {
  std::vector<size_t> starts;
  for (size_t i = 0; i < s.size(); ++i)
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) starts.push_back(i);
  return starts;
}

}  // namespace

std::string FitKeyTitle(const std::string& title) {
  // What a 1100 px canvas's key column holds, in characters of its font: gnuplot kept
  // titles of 95 characters and gave up on those of 105 (the plot's margins and the sample
  // take more than the estimate's 107 px).
  constexpr size_t kMax = 95;
  size_t length = Utf8Length(title);
  if (length <= kMax) return title;
  // The row's cells are joined by ", ": the longest ones (a trace's file and point, then
  // the model) give way in their middles, so the short cells that tell series apart stay.
  std::vector<std::string> parts;
  for (size_t at = 0;;) {
    const size_t end = title.find(", ", at);
    parts.push_back(title.substr(at, end == std::string::npos ? std::string::npos : end - at));
    if (end == std::string::npos) break;
    at = end + 2;
  }
  while (length > kMax) {
    std::string& longest =
        *std::max_element(parts.begin(), parts.end(),
                          [](const std::string& a, const std::string& b) { return Utf8Length(a) < Utf8Length(b); });
    const std::vector<size_t> cps = CodePoints(longest);
    if (cps.size() <= 8) break;  // nothing long is left to shorten
    const size_t keep = std::max<size_t>(6, cps.size() > length - kMax + 1 ? cps.size() - (length - kMax + 1) : 0);
    const size_t head = keep / 2, tail = keep - head;
    longest = longest.substr(0, cps[head]) + "…" + longest.substr(cps[cps.size() - tail]);
    length -= cps.size() - keep - 1;
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::vector<std::string> PointKeys(const std::vector<Series>& series) {
  std::set<std::string> seen;
  for (auto& s : series)
    for (auto& l : s.labels)
      if (!l.empty()) seen.insert(l);
  std::vector<std::string> keys(seen.begin(), seen.end());
  std::sort(keys.begin(), keys.end(), NaturalLess);
  return keys;
}

KeyText KeyTextOf(const std::vector<Series>& series, const std::string& marks, const std::vector<std::string>& keys,
                  int extra) {
  KeyText k;
  auto add = [&k](const std::string& title) {
    k.entries += 1, k.longest = std::max(k.longest, Utf8Length(title));  // † ‡ ± are one each
  };
  for (auto& s : series) add(s.title);
  for (auto& key : keys) add(key);
  for (size_t at = 0; !marks.empty() && at <= marks.size();) {
    const size_t end = std::min(marks.find('|', at), marks.size());
    add(marks.substr(at, end - at));
    at = end + 1;
  }
  k.entries += size_t(std::max(extra, 0));
  return k;
}

Canvas CanvasForKeyBelow(Canvas base, KeyText key) {
  const double column_px = kCharPx * double(key.longest) + kSamplePx;
  const size_t columns = std::max<size_t>(1, size_t(double(base.width - kMarginsPx) / column_px));
  const size_t rows = (key.entries + columns - 1) / columns;
  if (rows > kRowsBelow) base.height += int(rows - kRowsBelow) * kRowPx;
  return base;
}

Canvas CanvasForKeyRight(Canvas base, KeyText key) {
  base.height = std::max(base.height, int(key.entries) * kRightRowPx + kSpareRight);
  return base;
}

bool KeyFitsRight(Canvas base, KeyText key) {
  return key.longest <= 45 && CanvasForKeyRight(base, key).height <= base.height * 3 / 2;
}

const std::vector<std::string> kPalette = {"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#56B4E9", "#CCBB44"};

std::vector<SeriesStyle> SeriesStyles(const std::vector<Series>& series) {
  std::vector<SeriesStyle> out;
  size_t j = 0, a = 0;  // series that are not AR, and AR series (one per model)
  for (auto& s : series) {
    if (s.ar) {  // black, a dash pattern and shape each: circle, square, triangle, ...
      static const int kArShapes[5] = {7, 5, 9, 11, 13};
      out.push_back({"#000000", 1 + int(a % 5), kArShapes[a % 5]});
      ++a;
      continue;
    }
    const size_t round = j / kPalette.size();
    // Shapes: square, circle, triangle up, triangle down, diamond, shifted each round.
    out.push_back({kPalette[j % kPalette.size()], 1 + int(round % 5), 5 + 2 * int((j + round) % 5)});
    ++j;
  }
  return out;
}

bool SpansDecade(const std::vector<Series>& series) {
  double lo = INFINITY, hi = 0;
  for (auto& s : series)
    for (auto& [x, y] : s.xy)
      if (std::isfinite(y) && y > 0) lo = std::min(lo, y), hi = std::max(hi, y);
  return hi > 10 * lo;
}

}  // namespace specsweep
