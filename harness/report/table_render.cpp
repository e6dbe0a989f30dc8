// Rendering of tables as Markdown and CSV (LaTeX: table_latex.cpp).
#include <string>

#include "base/utf8.h"
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

namespace {

// The table with its cells' intervals left out (when `o` or the format says so), and a
// note saying how to show them.
Table Shown(const Table& t, TableFormat f, const RenderOptions& o) {
  if (o.intervals.value_or(f != TableFormat::Latex)) return t;
  Table s = t;
  bool dropped = false;
  for (auto& r : s.rows)
    for (size_t i = s.label_cols; i < r.size(); ++i) r[i] = WithoutInterval(r[i], dropped);
  if (dropped) s.notes.push_back("95% intervals left out (specsweep table --intervals shows them)");
  return s;
}

}  // namespace

std::string RenderTable(const Table& table, TableFormat f, const RenderOptions& o) {
  const Table t = Shown(table, f, o);
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
  if (f == TableFormat::Latex) return RenderLatex(t, o);
  // Markdown with columns padded to equal width (in characters: ± † ‡ are multi-byte).
  std::vector<size_t> w(n, 3);
  for (size_t i = 0; i < n; ++i) w[i] = std::max(w[i], Utf8Length(MarkdownCell(t.header[i])));
  for (auto& r : t.rows)
    for (size_t i = 0; i < n && i < r.size(); ++i) w[i] = std::max(w[i], Utf8Length(MarkdownCell(r[i])));
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l = "|";
    for (size_t i = 0; i < n; ++i) {
      std::string c = i < cells.size() ? MarkdownCell(cells[i]) : "";
      std::string pad(w[i] - std::min(w[i], Utf8Length(c)), ' ');
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
