// A newcomer's first hour (issue #34): "did you mean", HF and llama.cpp spellings, a
// draft selecting the speculative decoder, the plan `run` prints and the prompts it
// records, --where errors, --version, and messages about missing folders. Runs on a
// synthetic model the test writes.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/suggest.h"
#include "harness/sweep/experiment.h"
#include "tests/test_util.h"

namespace fs = std::filesystem;

namespace specsweep {
namespace {

using testing::CliResult;
using testing::RunCli;
using testing::WriteFile;

struct Files {
  std::string dir, model, prompts;
};
const Files& F() {
  static Files f = [] {
    Files x;
    x.dir = testing::TempDir();
    x.model = x.dir + "/tiny.gguf";
    testing::WriteTinyGguf(x.model, 5);
    x.prompts = x.dir + "/prompts.txt";
    WriteFile(x.prompts, "Once upon a time\nThe dog ran\n\nA big red ball\nTom had a\n");
    return x;
  }();
  return f;
}

std::string Exp(const std::string& name, const std::string& body) {
  const std::string p = F().dir + "/" + name;
  WriteFile(p, "name: " + fs::path(name).stem().string() + "\nmodels: [" + F().model +
                   "]\nprompts: {file: prompts.txt, count: 2}\n" + body);
  return p;
}

std::string ErrorOf(const std::string& path) {
  try {
    LoadExperiment(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << text

TEST(FirstHour, EditDistanceSuggestsTyposOnly) {
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(ClosestName("modle", {"models", "name"}), "models");
  EXPECT_EQ(ClosestName("drft", {"draft", "decoders"}), "draft");
  EXPECT_EQ(ClosestName("xyz", {"draft", "decoders"}), "");  // not a typo of anything
}

TEST(FirstHour, UnknownExperimentKeysGetSuggestions) {
  EXPECT_HAS(ErrorOf(Exp("a.yaml", "decoders: [ar]\nmodel: x\n")), "unknown key (did you mean 'models'?)");
  EXPECT_HAS(ErrorOf(Exp("b.yaml", "decoders: [ar]\nsweep: {kk: 2}\n")), "sweep.kk: unknown key (did you mean 'k'?)");
  EXPECT_HAS(ErrorOf(Exp("c.yaml", "decoders: [ar]\nk: 4\n")), "k: a sweep axis: write it under sweep:");
  EXPECT_HAS(ErrorOf(Exp("d.yaml", "decoders: [speculatve]\n")), "did you mean 'speculative'?");
}

TEST(FirstHour, HuggingFaceNamesAreAliases) {
  Experiment e =
      LoadExperiment(Exp("hf.yaml",
                         "decoders:\n  - ar\n  - decoder: speculative\n    prompt_lookup_num_tokens: [2, 3]\n"
                         "  - decoder: speculative\n    draft: layers=1\n    num_assistant_tokens: 5\n"));
  std::vector<std::string> keys;
  for (auto& p : e.points) keys.push_back(p.Key());
  auto has = [&](const std::string& part) {
    return std::any_of(keys.begin(), keys.end(), [&](auto& k) { return k.find(part) != std::string::npos; });
  };
  EXPECT_TRUE(has("k=2;kp=constant;draft=lookup+max_ngram=3+min_ngram=1"));
  EXPECT_TRUE(has("k=3;kp=constant;draft=lookup"));
  EXPECT_TRUE(has("k=5;kp=constant;draft=layers=1"));
  EXPECT_EQ(e.points.size(), 4u);
  EXPECT_HAS(ErrorOf(Exp("hf2.yaml", "decoders: [ar]\nsweep: {k: 2, num_assistant_tokens: 3}\n")),
             "Hugging Face name for k, which is given too");
}

TEST(FirstHour, PromptsDirectoryAndMissingModelsFolderSaySo) {
  fs::create_directories(F().dir + "/pdir");
  const std::string p = F().dir + "/dir.yaml";
  WriteFile(p, "name: dir\nmodels: [" + F().model + "]\nprompts: {file: pdir}\ndecoders: [ar]\n");
  EXPECT_HAS(ErrorOf(p), "is a directory; give a text file (one prompt per line)");
  CliResult r = RunCli({"--models", F().dir + "/nowhere", "generate", "--model", "tinystories-260k"});
  EXPECT_HAS(r.err, "the models directory " + F().dir + "/nowhere does not exist");
}

TEST(FirstHour, CliSpellingsOfHfAndLlamaCpp) {
  // A draft alone selects the speculative decoder; -p, -md and --draft-max are ours.
  CliResult r = RunCli(
      {"generate", "--model", F().model, "-p", "a b", "-n", "6", "--draft", "q4_0", "--draft-max", "3", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["decoder"], "speculative");
  EXPECT_EQ(j["speculative"]["k"], 3);
  EXPECT_EQ(j["prompt"], "a b");
  r = RunCli({"generate", "--model", F().model, "-md", F().model, "-n", "4", "--json", "-t", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["speculative"]["draft"], "model=" + F().model);
  // --decoder still says otherwise.
  r = RunCli({"generate", "--model", F().model, "--decoder", "ar", "--draft", "q4_0"});
  EXPECT_HAS(r.err, "does not apply to --decoder ar");
  r = RunCli({"generate", "--model", F().model, "-ngl", "99"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_HAS(r.err, "-ngl: means nothing here");
  r = RunCli({"generate", "--model", F().model, "--promt", "x"});
  EXPECT_HAS(r.err, "unknown option --promt (did you mean --prompt?)");
  r = RunCli({"gnerate"});
  EXPECT_HAS(r.err, "did you mean `specsweep generate`?");
  // The values of global options before the command are no command names.
  for (auto args : {std::vector<std::string>{"--models", F().dir, "-t", "1", "gnerate"},
                    std::vector<std::string>{"--threads", "2", "--models=" + F().dir, "gnerate"}}) {
    r = RunCli(args);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_HAS(r.err, "error: 'gnerate' is not a command");
  }
}

TEST(FirstHour, VersionNamesBuildAndKernelFamilies) {
  CliResult r = RunCli({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* part : {"specsweep ", "revision:", "compiler:", "build type:", "kernel families: scalar"})
    EXPECT_HAS(r.out, part);
}

TEST(FirstHour, RunPrintsPlanRecordsPromptsAndTableWhereErrors) {
  const std::string exp = Exp("plan.yaml",
                              "repetitions: 2\nsweep: {k: 2, max_new_tokens: 4}\n"
                              "decoders: [ar, {decoder: speculative, draft: q4_0}]\n");
  const std::string out = F().dir + "/plan_out";
  CliResult r = RunCli({"run", exp, "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.err, "plan: 2 points in 1 group(s)");
  EXPECT_HAS(r.err, "2 repetition(s) x 2 prompt(s) = 4 rounds per group");
  EXPECT_HAS(r.err, "plan: prompts 2 of 4 from " + fs::absolute(F().prompts).string());
  nlohmann::json doc = nlohmann::json::parse(testing::ReadFile(out + "/plan.json"));
  EXPECT_EQ(doc["context"]["prompts"]["file"]["path"], fs::absolute(F().prompts).string());
  EXPECT_EQ(doc["context"]["prompts"]["file"]["sha256"].get<std::string>().size(), 64u);
  EXPECT_EQ(doc["context"]["prompts"]["file"]["available"], 4);

  r = RunCli({"table", out + "/plan.json", "--where", "drft=q4_0"});
  EXPECT_HAS(r.err, "no record has the field 'drft' (did you mean 'draft'?)");
  r = RunCli({"table", out + "/plan.json", "--where", "draft=q5_0"});
  EXPECT_HAS(r.err, "no record has that value (values of draft: -, q4_0)");
}

}  // namespace
}  // namespace specsweep
