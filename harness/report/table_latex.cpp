// Tables as LaTeX for a paper: compiles with pdflatex in a plain article with booktabs and
// graphicx, and fits \linewidth (docs/commands.md, "LaTeX tables"). No raw non-ASCII
// reaches the .tex: symbols go to math mode, marks to superscripts.
#include <algorithm>
#include <cctype>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "base/utf8.h"
#include "harness/report/table.h"

namespace specsweep {

namespace {

// How a character of the table's UTF-8 text is set.
enum class Set { Text, Math, Mark };  // Mark: a superscript in math mode (†, ‡, §)
struct Glyph {
  std::string_view utf8;
  Set set;
  std::string_view tex;
};
constexpr Glyph kGlyphs[] = {
    {"τ", Set::Math, "\\tau"},     {"α", Set::Math, "\\alpha"},  {"β", Set::Math, "\\beta"},
    {"γ", Set::Math, "\\gamma"},   {"δ", Set::Math, "\\delta"},  {"λ", Set::Math, "\\lambda"},
    {"μ", Set::Math, "\\mu"},      {"σ", Set::Math, "\\sigma"},  {"±", Set::Math, "\\pm"},
    {"×", Set::Math, "\\times"},   {"·", Set::Math, "\\cdot"},   {"−", Set::Math, "-"},
    {"≤", Set::Math, "\\le"},      {"≥", Set::Math, "\\ge"},     {"≈", Set::Math, "\\approx"},
    {"→", Set::Math, "\\to"},      {"†", Set::Mark, "\\dagger"}, {"‡", Set::Mark, "\\ddagger"},
    {"§", Set::Mark, "\\S"},       {"—", Set::Text, "---"},      {"–", Set::Text, "--"},
    {"…", Set::Text, "\\ldots{}"}, {"“", Set::Text, "``"},       {"”", Set::Text, "''"},
    {"‘", Set::Text, "`"},         {"’", Set::Text, "'"},        {"\u00a0", Set::Text, "~"},
};

// LaTeX text built piece by piece: adjacent math joins one $...$, adjacent marks one
// superscript, digits right after a math symbol stay in it ("$\pm0.08$").
class LatexWriter {
 public:
  void Text(std::string_view s) {
    Close();
    out_ += s;
  }
  void Math(std::string_view s) {
    EndMarks();
    math_ += s;
  }
  void Mark(std::string_view s) { marks_ += s; }
  bool InMath() const { return !math_.empty() || !marks_.empty(); }
  std::string Done() {
    Close();
    return out_;
  }

 private:
  void EndMarks() {
    if (!marks_.empty()) math_ += "^{" + marks_ + "}";
    marks_.clear();
  }
  void Close() {
    EndMarks();
    if (!math_.empty()) out_ += "$" + math_ + "$";
    math_.clear();
  }
  std::string out_, math_, marks_;
};

// ASCII spelled as a symbol: "1.52x" is 1.52×, "a x b" a × b, "<=" ≤.
std::string Symbols(const std::string& s) {
  static const std::regex times_after_number(R"(([0-9])x(?![A-Za-z0-9_]|\.[A-Za-z0-9]))"), times_between(" x ");
  std::string o = std::regex_replace(s, times_after_number, "$1×");
  o = std::regex_replace(o, times_between, " × ");
  for (auto [from, to] : {std::pair<std::string, std::string>{"<=", "≤"}, {">=", "≥"}})
    for (size_t at = o.find(from); at != std::string::npos; at = o.find(from, at + to.size())) o.replace(at, 2, to);
  return o;
}

// The ASCII characters TeX reads as commands, as text.
std::string_view AsciiText(char c) {
  switch (c) {
    case '_': return "\\_";
    case '%': return "\\%";
    case '&': return "\\&";
    case '#': return "\\#";
    case '$': return "\\$";
    case '{': return "\\{";
    case '}': return "\\}";
    case '|': return "\\textbar{}";  // text-mode | < > are other glyphs in OT1
    case '<': return "\\textless{}";
    case '>': return "\\textgreater{}";
    case '~': return "\\textasciitilde{}";
    case '^': return "\\textasciicircum{}";
    case '\\': return "\\textbackslash{}";
    default: return {};
  }
}

// `s` (UTF-8) as LaTeX text. `breakable`: a word too long for a line of notes (a path, a
// spec) may break after / and _.
std::string Latex(const std::string& raw, bool breakable = false) {
  const std::string s = Symbols(raw);
  LatexWriter w;
  size_t word_end = 0;  // where the word at i ends
  bool long_word = false;
  for (size_t i = 0; i < s.size();) {
    if (i >= word_end) {
      word_end = std::min(s.find(' ', i + 1), s.size());
      long_word = breakable && word_end - i > 24;
    }
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const Glyph* g = std::find_if(std::begin(kGlyphs), std::end(kGlyphs),
                                    [&](const Glyph& x) { return s.compare(i, x.utf8.size(), x.utf8) == 0; });
      if (g != std::end(kGlyphs)) {
        g->set == Set::Text ? w.Text(g->tex) : g->set == Set::Math ? w.Math(g->tex) : w.Mark(g->tex);
        i += g->utf8.size();
        continue;
      }
      // Any other character: a plain pdflatex may have no glyph for it.
      w.Text("?");
      for (++i; i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80;) ++i;
      continue;
    }
    ++i;
    if ((std::isdigit(c) || c == '.') && w.InMath()) {
      w.Math(std::string(1, char(c)));
    } else if (c < 0x20) {
      w.Text(" ");  // a line break or blank line would end the row
    } else if (c == '-') {
      w.Text(i < s.size() && s[i] == '-' ? "-{}" : "-");  // "--intervals", not an en dash
    } else {
      const std::string_view escaped = AsciiText(char(c));
      w.Text(escaped.empty() ? std::string_view(&s[i - 1], 1) : escaped);
      if (long_word && (c == '_' || c == '/')) w.Text("\\allowbreak{}");
    }
  }
  return w.Done();
}

// A header over a narrower column: its words on lines no wider than the column's widest
// cell (or its longest word), stacked in a tabular of one column.
std::string Header(const std::string& h, size_t cells_width, bool left) {
  std::vector<std::string> words, lines;
  for (size_t at = 0; at <= h.size();) {
    size_t sp = h.find(' ', at);
    if (sp == std::string::npos) sp = h.size();
    if (sp > at) words.push_back(h.substr(at, sp - at));
    at = sp + 1;
  }
  size_t width = std::max<size_t>(cells_width, 6);
  for (auto& w : words) width = std::max(width, Utf8Length(w));
  if (Utf8Length(h) <= width || words.size() < 2) return Latex(h);
  for (auto& w : words) {
    if (!lines.empty() && Utf8Length(lines.back()) + 1 + Utf8Length(w) <= width)
      lines.back() += " " + w;
    else
      lines.push_back(w);
  }
  std::string o = left ? "\\begin{tabular}[b]{@{}l@{}}" : "\\begin{tabular}[b]{@{}c@{}}";
  for (size_t i = 0; i < lines.size(); ++i) o += (i ? "\\\\ " : "") + Latex(lines[i]);
  return o + "\\end{tabular}";
}

// The label's key: letters, digits and - . : kept, anything else a -.
std::string LabelKey(const std::string& s) {
  std::string o;
  for (char c : s) o += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == ':' ? c : '-';
  return o;
}

}  // namespace

std::string WithoutInterval(const std::string& cell, bool& dropped) {
  static const std::regex interval(R"( ?± ?[0-9]+(\.[0-9]+)?| ?\[-?[0-9]+(\.[0-9]+)?%?, -?[0-9]+(\.[0-9]+)?%?\])");
  std::string o = std::regex_replace(cell, interval, "");
  dropped = dropped || o != cell;
  return o;
}

std::string RenderLatex(const Table& t, const RenderOptions& o) {
  const size_t n = t.header.size();
  std::string out =
      "% needs \\usepackage{booktabs} (\\toprule, \\midrule, \\bottomrule) and \\usepackage{graphicx} "
      "(\\resizebox)\n";
  out += "\\begin{table}[t]\n\\centering\n";
  out += "\\caption{" + Latex(t.title.empty() ? t.kind : t.title, true) + "}\n";
  std::string key = t.kind.empty() ? "table" : t.kind;
  if (!o.experiment.empty()) key += "-" + o.experiment;
  out += "\\label{tab:" + LabelKey(key) + "}\n";
  // Scaled down to the line only when wider than it (\width: the tabular's own).
  out += "\\resizebox{\\ifdim\\width>\\linewidth\\linewidth\\else\\width\\fi}{!}{%\n\\begin{tabular}{";
  for (size_t i = 0; i < n; ++i) out += i < t.label_cols ? "l" : "r";
  out += "}\n\\toprule\n";
  for (size_t i = 0; i < n; ++i) {
    size_t cells = 0;
    for (auto& r : t.rows) cells = std::max(cells, i < r.size() ? Utf8Length(r[i]) : 0);
    out += (i ? " & " : "") + Header(t.header[i], cells, i < t.label_cols);
  }
  out += " \\\\\n\\midrule\n";
  for (auto& r : t.rows) {
    for (size_t i = 0; i < n; ++i) out += (i ? " & " : "") + Latex(i < r.size() ? r[i] : "");
    out += " \\\\\n";
  }
  out += "\\bottomrule\n\\end{tabular}}\n";
  if (!t.notes.empty()) {
    out += "\\par\\smallskip\n{\\footnotesize\\raggedright\n";
    for (auto& note : t.notes) out += Latex(note, true) + "\\par\n";
    out += "}\n";
  }
  out += "\\end{table}\n";
  return out;
}

}  // namespace specsweep
