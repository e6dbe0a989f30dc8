// Issue #46, item 2: every table specsweep writes as LaTeX compiles with pdflatex in a plain
// article with only the packages its preamble comment names, and fits the text width:
// the quick sweep's records (results/baseline/quick.json) and a tiny question-set run with a
// replayed point, through the main, latency, replay, pivot and spec-bench tables.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "harness/report/record.h"
#include "harness/report/table.h"
#include "tests/test_util.h"

namespace specsweep {
namespace {

using testing::ReadFile;
using testing::RunCli;
using testing::TempDir;
using testing::WriteFile;

bool Has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

bool Installed(const char* tool) {
  return std::system(("command -v " + std::string(tool) + " >/dev/null 2>&1").c_str()) == 0;
}

// The packages the "% needs \usepackage{...}" comments of `tex` name.
std::string NeededPackages(const std::string& tex) {
  static const std::regex package(R"(\\usepackage\{[a-z]+\})");
  std::string out;
  std::istringstream lines(tex);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("% needs ")) continue;
    for (std::sregex_iterator p(line.begin(), line.end(), package), end; p != end; ++p)
      if (!Has(out, p->str())) out += p->str() + "\n";
  }
  return out;
}

// The word boxes of a PDF (pdftotext -bbox): text and left and right edges in points.
struct Word {
  std::string text;
  double x_min, x_max;
};
std::vector<Word> Words(const std::string& pdf) {
  const std::string html = pdf + ".html";
  if (std::system(("pdftotext -bbox '" + pdf + "' '" + html + "' >/dev/null 2>&1").c_str()) != 0) return {};
  static const std::regex word(
      R"re(<word xMin="([0-9.]+)" yMin="[0-9.]+" xMax="([0-9.]+)" yMax="[0-9.]+">([^<]*)</word>)re");
  const std::string text = ReadFile(html);
  std::vector<Word> out;
  for (std::sregex_iterator it(text.begin(), text.end(), word), end; it != end; ++it)
    out.push_back({(*it)[3].str(), std::stod((*it)[1].str()), std::stod((*it)[2].str())});
  return out;
}

// `tex` (one command's output) in a plain article with the packages it names: pdflatex
// (twice, so the captions are read back from the .aux) exits 0 with no overfull box and no
// missing glyph, and every word of the PDF lies between the ends of a line of text width.
void ExpectCompilesWithinTextWidth(const std::string& tex, const std::string& name) {
  SCOPED_TRACE(name);
  for (unsigned char c : tex) ASSERT_LT(c, 0x80) << "non-ASCII byte in the LaTeX of " << name << ":\n" << tex;
  const std::string dir = TempDir() + "/" + name;
  std::filesystem::create_directories(dir);
  WriteFile(dir + "/table.tex", tex);
  WriteFile(dir + "/doc.tex", "\\documentclass{article}\n" + NeededPackages(tex) +
                                  "\\tracinglostchars=1\n\\begin{document}\n"
                                  "\\noindent LEFTEDGE\\hfill RIGHTEDGE\\par\n\\input{table}\n\\end{document}\n");
  const std::string run =
      "cd '" + dir + "' && pdflatex -interaction=nonstopmode -halt-on-error doc.tex >/dev/null 2>&1";
  ASSERT_EQ(std::system(run.c_str()), 0) << ReadFile(dir + "/doc.log") << "\n" << tex;
  ASSERT_EQ(std::system(run.c_str()), 0) << ReadFile(dir + "/doc.log") << "\n" << tex;
  const std::string log = ReadFile(dir + "/doc.log");
  EXPECT_FALSE(Has(log, "Overfull \\hbox")) << log << "\n" << tex;
  EXPECT_FALSE(Has(log, "Missing character")) << log << "\n" << tex;
  if (!Installed("pdftotext")) return;
  const std::vector<Word> words = Words(dir + "/doc.pdf");
  double left = -1, right = -1;
  for (auto& w : words) {
    if (w.text == "LEFTEDGE") left = w.x_min;
    if (w.text == "RIGHTEDGE") right = w.x_max;
  }
  ASSERT_GT(right, left) << "no reference line in the PDF";
  ASSERT_GT(words.size(), 10u);
  for (auto& w : words) {
    EXPECT_GE(w.x_min, left - 0.5) << w.text;
    EXPECT_LE(w.x_max, right + 0.5) << w.text;
  }
}

// `specsweep table args...` in LaTeX: exit 0, a caption and the label of every table.
std::string LatexOf(std::vector<std::string> args, const std::vector<std::string>& labels) {
  args.insert(args.begin(), "table");
  args.insert(args.end(), {"--format", "latex"});
  const testing::CliResult r = RunCli(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  size_t tables = 0;
  for (size_t at = r.out.find("\\begin{table}"); at != std::string::npos; at = r.out.find("\\begin{table}", at + 1))
    ++tables;
  EXPECT_EQ(tables, labels.size()) << r.out;
  size_t captions = 0;
  for (size_t at = r.out.find("\\caption{"); at != std::string::npos; at = r.out.find("\\caption{", at + 1)) ++captions;
  EXPECT_EQ(captions, labels.size()) << r.out;
  for (auto& l : labels) EXPECT_TRUE(Has(r.out, "\\label{tab:" + l + "}")) << l << "\n" << r.out;
  return r.out;
}

const std::string& Quick() {
  static const std::string path = std::string(SPECSWEEP_SOURCE_DIR) + "/results/baseline/quick.json";
  return path;
}

TEST(CameraLatex, QuickSweepTablesCompileAndFitTheTextWidth) {
  if (!Installed("pdflatex")) GTEST_SKIP() << "pdflatex is not installed (.ci/install-deps installs it)";
  ExpectCompilesWithinTextWidth(LatexOf({Quick()}, {"main-quick"}), "main");
  ExpectCompilesWithinTextWidth(LatexOf({Quick(), "--intervals"}, {"main-quick"}), "main_intervals");
  ExpectCompilesWithinTextWidth(LatexOf({Quick(), "--table", "latency"}, {"latency-quick"}), "latency");
  ExpectCompilesWithinTextWidth(LatexOf({Quick(), "--rows", "draft_quant", "--cols", "k", "--metric",
                                         "speedup,mean_accepted_length"},
                                        {"pivot-draft-quant-by-k-quick"}),
                                "pivot");
  ExpectCompilesWithinTextWidth(LatexOf({Quick(), "--rows", "draft_quant", "--metric", "speedup"},
                                        {"pivot-draft-quant-quick"}),
                                "pivot_rows");
  ExpectCompilesWithinTextWidth(LatexOf({Quick(), "--table", "all", "--intervals"},
                                        {"main-quick", "latency-quick", "quant-quick"}),
                                "all");
}

// A tiny question-set run (categories whose names need escaping) with a measured and a
// replayed speculative point at K 2 and 4: the main table with its replay table, the
// latency, spec-bench and a pivot table.
TEST(CameraLatex, ReplayAndSpecBenchTablesCompileAndFitTheTextWidth) {
  if (!Installed("pdflatex")) GTEST_SKIP() << "pdflatex is not installed (.ci/install-deps installs it)";
  const std::string dir = TempDir();
  WriteFile(dir + "/q.jsonl",
            R"({"question_id": 1, "category": "writing", "turns": ["Write a poem about the sea.", "Shorter."]}
{"question_id": 10, "category": "translation", "turns": ["Translate German to English: Guten Tag ."]}
{"question_id": 20, "category": "qa", "turns": ["Why is the sky blue?"]}
{"question_id": 30, "category": "rag_&_#1 τ≥50% ~x^2", "turns": ["What is rain?"]}
)");
  testing::WriteTinyGguf(dir + "/tiny.gguf", 7);
  WriteFile(dir + "/camera_latex.yaml",
            "name: camera_latex\nmodels: [\"" + dir + "/tiny.gguf\"]\nprompts: {file: \"" + dir +
                "/q.jsonl\", per_category: 1}\ntemplate: \"Q: {prompt} A:\"\nrepetitions: 2\nwarmup: 0\n"
                "sweep: {k: [2, 4], max_new_tokens: 4}\n"
                "decoders:\n  - ar\n  - {decoder: speculative, draft: [layers=1]}\n"
                "  - {decoder: speculative, draft: [layers=1], acceptance_source: [alpha=0.8]}\n");
  const testing::CliResult run = RunCli({"run", dir + "/camera_latex.yaml", "-o", dir + "/out"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string results = dir + "/out/camera_latex.json";
  ASSERT_TRUE(std::filesystem::exists(results)) << run.out;

  const std::string main = LatexOf({results}, {"main-camera-latex", "replay-camera-latex"});
  EXPECT_TRUE(Has(main, "$\\alpha$=0.8")) << main;  // the replayed row, its α in math mode
  ExpectCompilesWithinTextWidth(main, "main_replay");
  ExpectCompilesWithinTextWidth(LatexOf({results, "--intervals"}, {"main-camera-latex", "replay-camera-latex"}),
                                "main_replay_intervals");
  ExpectCompilesWithinTextWidth(LatexOf({results, "--table", "latency", "--intervals"}, {"latency-camera-latex"}),
                                "latency_replay");
  const std::string sb = LatexOf({results, "--table", "spec-bench"}, {"spec-bench-camera-latex"});
  // The group of its own under its name, escaped (a long header is stacked over lines).
  EXPECT_TRUE(Has(sb, "rag\\_\\&\\_\\#1") && Has(sb, "$\\tau\\ge50$\\%")) << sb;
  ExpectCompilesWithinTextWidth(sb, "spec_bench");
  ExpectCompilesWithinTextWidth(LatexOf({results, "--table", "spec-bench", "--intervals"}, {"spec-bench-camera-latex"}),
                                "spec_bench_intervals");
  ExpectCompilesWithinTextWidth(LatexOf({results, "--by", "category", "--rows", "category", "--cols", "k", "--metric",
                                         "speedup"},
                                        {"pivot-category-by-k-camera-latex"}),
                                "pivot_category");
}

// What the LaTeX holds, whatever pdflatex says: symbols in math mode, names escaped, the
// intervals only when asked, a wide table scaled to the line.
TEST(CameraLatex, SymbolsAreMathAndIntervalsOptional) {
  Table t;
  t.kind = "main";
  t.title = "Speedup (τ, α)";
  t.header = {"draft_base", "k<=4 adaptive"};
  t.label_cols = 1;
  t.rows = {{"a_b%c", "1.52x ±0.08†‡"}, {"x", "2.77§"}, {"y", "0.96x [0.83, 1.11] · τ 3.05 [2.79, 3.30]"}};
  t.notes = {"† busy — ‡ wide; ±15% of 5 repetitions x 8 prompts − 1", "--intervals"};
  const std::string tex = RenderTable(t, TableFormat::Latex, {std::nullopt, "my_exp"});
  for (unsigned char c : tex) EXPECT_LT(c, 0x80) << tex;
  for (const char* s : {"\\label{tab:main-my-exp}", "\\caption{Speedup ($\\tau$, $\\alpha$)}", "a\\_b\\%c",
                        "1.52$\\times^{\\dagger\\ddagger}$", "2.77$^{\\S}$", "0.96$\\times$ $\\cdot$ $\\tau$ 3.05",
                        "k$\\le4$ adaptive", "$^{\\dagger}$ busy --- $^{\\ddagger}$ wide; $\\pm15$\\%",
                        "5 repetitions $\\times$ 8 prompts $-$ 1", "-{}-intervals", "95\\% intervals left out",
                        "\\resizebox{\\ifdim\\width>\\linewidth\\linewidth\\else\\width\\fi}{!}"})
    EXPECT_TRUE(Has(tex, s)) << s << "\n" << tex;
  EXPECT_FALSE(Has(tex, "0.08")) << tex;
  const std::string with = RenderTable(t, TableFormat::Latex, {true, "my_exp"});
  EXPECT_TRUE(Has(with, "1.52$\\times$ $\\pm0.08^{\\dagger\\ddagger}$")) << with;
  EXPECT_TRUE(Has(with, "[0.83, 1.11]")) << with;
  EXPECT_FALSE(Has(with, "intervals left out")) << with;
  // Markdown keeps its intervals unless told otherwise.
  EXPECT_TRUE(Has(RenderTable(t, TableFormat::Markdown), "1.52x ±0.08†‡"));
  EXPECT_FALSE(Has(RenderTable(t, TableFormat::Markdown, {false, ""}), "±0.08"));
}

// A pivot over K shows the speculative points (AR is the baseline, said in a note), keeps
// its caption, and a pivot that averages says over which fields and how many points.
TEST(CameraLatex, PivotsKeepTheirCaptionLeaveOutTheBaselineAndNameWhatTheyAverage) {
  testing::CliResult r = RunCli({"table", Quick(), "--rows", "draft_quant", "--cols", "k", "--metric", "speedup"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "**speedup by draft_quant and k**")) << r.out;
  EXPECT_FALSE(Has(r.out, "| k=0")) << r.out;
  EXPECT_FALSE(Has(r.out, "| -  ")) << r.out;  // no AR row of "-" draft
  EXPECT_TRUE(Has(r.out, "autoregressive decoding (k=0) is the baseline")) << r.out;
  EXPECT_TRUE(Has(
      r.out,
      "* mean (for speedups the geometric mean) of 2 points averaged over model (tinystories-260k, tinystories-656k)"))
      << r.out;
  r = RunCli({"table", Quick(), "--rows", "draft_quant", "--metric", "speedup"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.out,
                  "* mean (for speedups the geometric mean) of 2-4 points averaged over model (tinystories-260k, "
                  "tinystories-656k) and k (2, 4)"))
      << r.out;
  // AR stays where it is a figure of its own: tokens/s by decoder.
  r = RunCli({"table", Quick(), "--rows", "model", "--cols", "decoder", "--metric", "tokens_per_s"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "decoder=ar")) << r.out;
  EXPECT_FALSE(Has(r.out, "is the baseline")) << r.out;
}

}  // namespace
}  // namespace specsweep
