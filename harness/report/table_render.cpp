// Rendering of tables as Markdown, LaTeX (booktabs) and CSV.
#include <regex>
#include <string>

#include "harness/report/table.h"
#include "base/error.h"

namespace specsweep {

TableFormat ParseTableFormat(std::string_view s) {
  if (s == "md" || s == "markdown") return TableFormat::Markdown;
  if (s == "latex" || s == "tex") return TableFormat::Latex;
  if (s == "csv") return TableFormat::Csv;
  Fail("table: --format: unknown format '{}' (expected md, latex, csv)", s);
}

static std::string CsvQuote(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

static std::string LatexEscape(const std::string& s) {
  std::string o;
  // Greek letters and marks of headers and notes in math mode (a plain pdflatex has no glyph).
  static const std::pair<std::string, std::string> kMath[] = {{"τ", "$\\tau$"},     {"α", "$\\alpha$"},
                                                              {"§", "\\S{}"},       {"±", "$\\pm$"},
                                                              {"†", "$^\\dagger$"}, {"‡", "$^\\ddagger$"},
                                                              {"·", "$\\cdot$"},    {"—", "--"}};
  for (size_t i = 0; i < s.size();) {
    bool replaced = false;
    for (auto& [from, to] : kMath)
      if (s.compare(i, from.size(), from) == 0) {
        o += to;
        i += from.size();
        replaced = true;
        break;
      }
    if (replaced) continue;
    const char c = s[i++];
    switch (c) {
      case '_':
      case '%':
      case '&':
      case '#':
      case '$':
      case '{':
      case '}':
        o += '\\';
        o += c;
        break;
      case '|': o += "\\textbar{}"; break;  // text-mode | < > are other glyphs in OT1
      case '<': o += "\\textless{}"; break;
      case '>': o += "\\textgreater{}"; break;
      case '\n':
      case '\r': o += ' '; break;  // a blank line would end the row
      case '~': o += "\\textasciitilde{}"; break;
      case '^': o += "\\textasciicircum{}"; break;
      case '\\': o += "\\textbackslash{}"; break;
      default: o += c;
    }
  }
  return o;
}

// A cell in LaTeX: "1.52x" becomes $1.52\times$, "±0.08" $\pm 0.08$, the flags
// superscripts.
static std::string LatexCell(const std::string& c) {
  static const std::regex times(R"(([0-9]+\.[0-9]+)x)");
  std::string o = LatexEscape(c);
  o = std::regex_replace(o, times, "$$$1\\times$$");
  for (auto [from, to] :
       {std::pair<std::string, std::string>{"±", "$\\pm$"}, {"†", "$^\\dagger$"}, {"‡", "$^\\ddagger$"}}) {
    for (size_t at = o.find(from); at != std::string::npos; at = o.find(from, at + to.size()))
      o.replace(at, from.size(), to);
  }
  return o;
}

// A cell in Markdown: a "|" would end the cell and a line break the row.
static std::string MarkdownCell(const std::string& c) {
  std::string o;
  for (char ch : c) {
    if (ch == '|')
      o += "\\|";
    else
      o += ch == '\n' || ch == '\r' ? ' ' : ch;
  }
  return o;
}

std::string RenderTable(const Table& t, TableFormat f) {
  std::string out;
  size_t n = t.header.size();
  if (f == TableFormat::Csv) {
    for (size_t i = 0; i < n; ++i) out.append(i ? "," : "").append(CsvQuote(t.header[i]));
    out += "\n";
    for (auto& r : t.rows) {
      for (size_t i = 0; i < n; ++i) out.append(i ? "," : "").append(CsvQuote(i < r.size() ? r[i] : ""));
      out += "\n";
    }
    return out;
  }
  if (f == TableFormat::Latex) {
    out += "% needs \\usepackage{booktabs} (\\toprule, \\midrule, \\bottomrule)\n";
    out += "\\begin{table}[t]\n\\centering\n";
    if (!t.title.empty()) out += "\\caption{" + LatexEscape(t.title) + "}\n";
    out += "\\begin{tabular}{";
    for (size_t i = 0; i < n; ++i) out += i < t.label_cols ? "l" : "r";
    out += "}\n\\toprule\n";
    for (size_t i = 0; i < n; ++i) out += (i ? " & " : "") + LatexEscape(t.header[i]);
    out += " \\\\\n\\midrule\n";
    for (auto& r : t.rows) {
      for (size_t i = 0; i < n; ++i) out += (i ? " & " : "") + LatexCell(i < r.size() ? r[i] : "");
      out += " \\\\\n";
    }
    out += "\\bottomrule\n\\end{tabular}\n";
    for (auto& note : t.notes) out += "\\\\[2pt]{\\footnotesize " + LatexEscape(note) + "}\n";
    out += "\\end{table}\n";
    return out;
  }
  // Markdown with columns padded to equal width (in characters: ± † ‡ are multi-byte).
  auto width = [](const std::string& c) {
    size_t w = 0;
    for (unsigned char b : c) w += (b & 0xC0) != 0x80;
    return w;
  };
  std::vector<size_t> w(n, 3);
  for (size_t i = 0; i < n; ++i) w[i] = std::max(w[i], width(MarkdownCell(t.header[i])));
  for (auto& r : t.rows)
    for (size_t i = 0; i < n && i < r.size(); ++i) w[i] = std::max(w[i], width(MarkdownCell(r[i])));
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l = "|";
    for (size_t i = 0; i < n; ++i) {
      std::string c = i < cells.size() ? MarkdownCell(cells[i]) : "";
      std::string pad(w[i] - std::min(w[i], width(c)), ' ');
      l.append(" ").append(i < t.label_cols ? c + pad : pad + c).append(" |");
    }
    return l + "\n";
  };
  if (!t.title.empty()) out += "**" + t.title + "**\n\n";
  out += line(t.header);
  out += "|";
  for (size_t i = 0; i < n; ++i)
    out += (i < t.label_cols ? " :" : " ") + std::string(w[i] - 1, '-') + (i < t.label_cols ? " |" : ": |");
  out += "\n";
  for (auto& r : t.rows) out += line(r);
  if (!t.notes.empty()) out += "\n";
  for (auto& note : t.notes) out += "_" + note + "_\n";
  return out;
}

}  // namespace specsweep
