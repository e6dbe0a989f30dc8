// The documented commands of README.md and docs/*.md (tests/test_docs_commands.cpp).
//
// A code line is a line indented by 4+ spaces after a blank line or another code line
// (Markdown's indented code block); a chunk is a run of code lines without a blank line, a
// block the chunks separated by blank lines only. A documented command is a `specsweep ...`
// or `build/specsweep ...` command of a code line: lines ending in `\` are joined, a
// trailing `#` comment is dropped, and a shell line is cut at `;`, `&&`, `|`, `do`, so
// `M=x; build/specsweep synth ...` and `for ...; do VAR=v /usr/bin/time -v build/specsweep
// generate ...` count (environment assignments and `time` in front are dropped).
// An inline code span `specsweep ...` of prose is a command too, unless it shows syntax
// (a placeholder: FILE, DIR, I/N, M) or only names a command (`specsweep check`).
// `build/specsweep-microbench` is another binary.
// An output block is a chunk without commands directly after a chunk whose last command
// it belongs to (blank lines only between them).
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

namespace specsweep::docs {

struct DocCommand {
  std::string file;          // README.md, docs/NAME.md
  int line = 0;              // 1-based line where its shell line starts
  std::string command;       // "specsweep ...", without prefixes, comment or line breaks
  bool inline_span = false;  // an inline code span of prose, not a code block
};

struct DocOutput {
  DocCommand command;              // the last command of the chunk before it
  int line = 0;                    // its first line
  std::vector<std::string> lines;  // without the block's indentation
};

struct DocText {
  std::vector<DocCommand> commands;
  std::vector<DocOutput> outputs;
  std::vector<DocCommand> syntax;  // inline spans naming a command or showing its syntax
};

// Splits at `sep` characters outside single or double quotes and [...], quotes kept; an empty `sep`
// splits into words as a shell does (quotes dropped, nothing expanded).
inline std::vector<std::string> SplitShell(const std::string& s, const std::string& sep = "") {
  const bool words = sep.empty();
  std::vector<std::string> out;
  std::string cur;
  bool any = false;
  char quote = 0;  // also ']' inside a `[--a | --b]` of alternatives
  for (char c : s) {
    if (quote) {
      if (c != quote || !words || quote == ']') cur += c;
      if (c == quote) quote = 0;
    } else if (!words && c == '[') {
      quote = ']', cur += c;
    } else if (c == '\'' || c == '"') {
      quote = c, any = true;
      if (!words) cur += c;
    } else if (words ? (c == ' ' || c == '\t') : sep.find(c) != std::string::npos) {
      if (!words || any) out.push_back(cur), cur.clear(), any = false;
    } else {
      cur += c, any = true;
    }
  }
  if (!words || any) out.push_back(cur);
  return out;
}

// A shell line without its trailing `#` comment (a `#` after a blank, outside quotes).
inline std::string WithoutComment(const std::string& line) {
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '#' && i > 0 && (line[i - 1] == ' ' || line[i - 1] == '\t')) {
      return line.substr(0, i);
    }
  }
  return line;
}

// The `specsweep ...` commands of one joined shell line.
inline std::vector<std::string> CommandsOfShellLine(const std::string& line) {
  static const std::regex prefix(R"(^([A-Za-z_][A-Za-z0-9_]*=\S*\s+|(do|then)\s+|(/usr/bin/time -v|time)\s+))"),
      trim(R"(^\s+|\s+$)");
  std::vector<std::string> out;
  for (std::string seg : SplitShell(WithoutComment(line), ";&|")) {
    seg = std::regex_replace(seg, trim, "");
    for (std::string prev; prev != seg;) prev = seg, seg = std::regex_replace(seg, prefix, "");
    if (seg.starts_with("build/specsweep ")) seg = seg.substr(6);
    if (seg.starts_with("specsweep ")) out.push_back(seg);
  }
  return out;
}

inline int Indent(const std::string& l) { return int(l.find_first_not_of(' ')); }

// Whether an inline span shows syntax or names a command rather than being one: a
// placeholder (an upper-case word: FILE, DIR, I/N, OUT.json, M; $M is a variable the test
// substitutes) or only a command's name.
inline bool IsSyntax(const std::string& span) {
  static const std::regex placeholder(R"((^|[^A-Za-z0-9_$])[A-Z][A-Z_]*([^A-Za-z0-9_]|$))");
  const std::vector<std::string> w = SplitShell(span);
  if (w.size() == 1 || (w.size() == 2 && !w[1].starts_with("-"))) return true;
  return std::any_of(w.begin() + 1, w.end(), [](const std::string& x) {
    return x.find('=') == std::string::npos && std::regex_search(x, placeholder);  // not VAR=value
  });
}

// The inline `specsweep ...` code spans of a prose line.
inline void InlineCommands(const std::string& line, const DocCommand& where, DocText& doc) {
  static const std::regex span("`(build/)?(specsweep( [^`]*)?)`");
  for (std::sregex_iterator m(line.begin(), line.end(), span), end; m != end; ++m) {
    DocCommand c = where;
    c.command = (*m)[2].str();
    (IsSyntax(c.command) ? doc.syntax : doc.commands).push_back(c);
  }
}

inline bool Blank(const std::string& l) { return l.find_first_not_of(' ') == std::string::npos; }

// Commands and output blocks of one Markdown file.
inline void ExtractFile(const std::string& path, const std::string& name, DocText& doc) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  bool prev_blank = true, in_block = false, prev_output = false;
  int block_indent = 0;
  DocCommand owner;  // the last command of this block, if any (owner.line > 0)
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    if (Blank(l)) {
      prev_blank = true;
      continue;
    }
    if (Indent(l) < 4 || !prev_blank) {  // prose (a 4-space line right after prose continues it)
      in_block = prev_blank = prev_output = false, owner = {};
      // A code span may break across lines of a paragraph: join up to its closing backtick.
      std::string prose = l.substr(Indent(l));
      const int first = int(i) + 1;
      while (std::count(prose.begin(), prose.end(), '`') % 2 && i + 1 < lines.size() && !Blank(lines[i + 1])) {
        ++i;
        prose += " " + lines[i].substr(Indent(lines[i]));
      }
      InlineCommands(prose, {name, first, "", true}, doc);
      continue;
    }
    if (!in_block) block_indent = Indent(l), in_block = true;
    size_t end = i;  // the chunk: code lines up to a blank or a less indented line
    while (end < lines.size() && !Blank(lines[end]) && Indent(lines[end]) >= 4) ++end;
    std::vector<DocCommand> cmds;
    std::vector<std::string> text;
    for (size_t j = i; j < end; ++j) text.push_back(lines[j].substr(std::min<size_t>(lines[j].size(), block_indent)));
    for (size_t j = i; j < end; ++j) {
      const int first = int(j) + 1;
      std::string joined = lines[j].substr(Indent(lines[j]));
      while (!joined.empty() && joined.back() == '\\' && j + 1 < end) {
        ++j;
        joined.pop_back();
        joined += lines[j].substr(Indent(lines[j]));
      }
      for (auto& c : CommandsOfShellLine(joined)) cmds.push_back({name, first, c});
    }
    if (!cmds.empty()) {
      owner = cmds.back(), prev_output = false;
    } else if (owner.line > 0 && prev_output) {
      doc.outputs.back().lines.push_back("");
      doc.outputs.back().lines.insert(doc.outputs.back().lines.end(), text.begin(), text.end());
    } else if (owner.line > 0) {
      doc.outputs.push_back({owner, int(i) + 1, text}), prev_output = true;
    }
    doc.commands.insert(doc.commands.end(), cmds.begin(), cmds.end());
    i = end - 1, prev_blank = false;
  }
}

// README.md, then docs/*.md by name.
inline DocText ExtractDocs(const std::string& source_dir) {
  std::vector<std::string> files;
  for (auto& e : std::filesystem::directory_iterator(source_dir + "/docs"))
    if (e.path().extension() == ".md") files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  DocText doc;
  ExtractFile(source_dir + "/README.md", "README.md", doc);
  for (auto& f : files) ExtractFile(source_dir + "/docs/" + f, "docs/" + f, doc);
  return doc;
}

}  // namespace specsweep::docs
