// The habits of llama.cpp and Hugging Face users (issue #47): their spellings work
// (-m, -c/--ctx-size, --temperature, --do-sample, -v), a misspelt command, flag, draft,
// decoder or experiment key gets "did you mean", and the exit codes follow one scheme
// (docs/commands.md): usage 2, input 1, interrupted 130.
// Runs the built binary (SPECSWEEP_BIN) on synthetic GGUF files the test writes.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "models/gguf.h"
#include "models/synthetic.h"
#include "tests/test_util.h"

extern char** environ;

namespace specsweep {
namespace {

using namespace std::chrono_literals;
using testing::CliResult;
using testing::RunCli;

#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

// A GGUF of `c` with random weights and a synthetic vocabulary, in a fresh folder.
std::string WriteModel(ModelConfig c, unsigned seed) {
  const std::string p = testing::TempDir() + "/model.gguf";
  WriteGguf(MakeSyntheticModel(c, seed), *MakeScoreBpeTokenizer(SyntheticVocab(c.vocab_size)), p);
  return p;
}

// The tiny test model (128 positions), written once per process.
const std::string& Tiny() {
  static const std::string path = WriteModel(TinyTestConfig(), 47);
  return path;
}

// Exit code `code` and one line on stderr holding `part` (besides a first process's
// notice of its kernel calibration).
void ExpectError(const CliResult& r, int code, const std::string& part) {
  EXPECT_EQ(r.exit_code, code) << r.err;
  EXPECT_HAS(r.err, part);
  int lines = 0;
  for (size_t at = 0; at < r.err.size(); at = r.err.find('\n', at) + 1)
    lines += !r.err.substr(at).starts_with("notice:");
  EXPECT_EQ(lines, 1) << r.err;
}

nlohmann::json GenerateJson(std::vector<std::string> extra) {
  std::vector<std::string> args = {"generate", "-t", "1", "--json", "-p", "a b"};
  args.insert(args.end(), extra.begin(), extra.end());
  const CliResult r = RunCli(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
}

TEST(CliHabits, DashMIsTheModelWhereverModelIs) {
  EXPECT_EQ(GenerateJson({"-m", Tiny(), "-n", "2"})["model"], Tiny());
  for (auto args : {std::vector<std::string>{"tokenize", "-m", Tiny(), "--text", "a b"},
                    std::vector<std::string>{"inspect", "-m", Tiny()}}) {
    const CliResult r = RunCli(args);
    EXPECT_EQ(r.exit_code, 0) << args[0] << ": " << r.err;
  }
}

// -c/--ctx-size sets the context as llama.cpp's: the generation stops when it is full,
// a prompt that fills it and a context above the model's are refused.
TEST(CliHabits, CtxSizeSetsTheContextOfGenerate) {
  const nlohmann::json full = GenerateJson({"-m", Tiny(), "-n", "40", "--no-eos"});
  ASSERT_EQ(full["generated_tokens"], 40);
  const int prompt = int(full["prompt_ids"].size());
  for (const char* flag : {"-c", "--ctx-size"}) {
    const nlohmann::json j = GenerateJson({"-m", Tiny(), "-n", "40", "--no-eos", flag, std::to_string(prompt + 5)});
    EXPECT_EQ(j["generated_tokens"], 5) << flag;
    EXPECT_EQ(j["stop_reason"], "context") << flag;
    std::vector<int> first = full["tokens"].get<std::vector<int>>();
    first.resize(5);
    EXPECT_EQ(j["tokens"].get<std::vector<int>>(), first) << flag;
  }
  ExpectError(RunCli({"generate", "-m", Tiny(), "-p", "a b", "-c", std::to_string(prompt)}), 2,
              fmt::format("error: -c/--ctx-size: the prompt is {} tokens: a context of {} leaves no room to generate",
                          prompt, prompt));
  // Beyond the model's own context the file cannot serve it: an input error, as a bad file.
  ExpectError(RunCli({"generate", "-m", Tiny(), "-c", "129"}), 1,
              "error: " + Tiny() + ": a context of 129 positions exceeds the model's 128");
}

TEST(CliHabits, TemperatureAndDoSample) {
  EXPECT_FLOAT_EQ(
      GenerateJson({"-m", Tiny(), "-n", "2", "--temperature", "0.7"})["sampling"]["temperature"].get<float>(), 0.7f);
  EXPECT_FLOAT_EQ(GenerateJson({"-m", Tiny(), "-n", "2", "--do-sample"})["sampling"]["temperature"].get<float>(), 1.0f);
  EXPECT_FLOAT_EQ(GenerateJson({"-m", Tiny(), "-n", "2", "--do-sample", "--temp", "0.5"})["sampling"]["temperature"]
                      .get<float>(),
                  0.5f);
  EXPECT_FLOAT_EQ(GenerateJson({"-m", Tiny(), "-n", "2"})["sampling"]["temperature"].get<float>(),
                  0.0f);  // greedy by default
  ExpectError(RunCli({"generate", "-m", Tiny(), "--do-sample", "--temp", "0"}), 2,
              "error: --do-sample: samples, but --temp 0 is greedy");
}

TEST(CliHabits, DashVIsTheVersion) {
  const CliResult v = RunCli({"-v"}), version = RunCli({"--version"});
  EXPECT_EQ(v.exit_code, 0) << v.err;
  EXPECT_TRUE(v.out.starts_with("specsweep ")) << v.out;
  EXPECT_EQ(v.out, version.out);
}

TEST(CliHabits, CommandsGetDidYouMean) {
  ExpectError(RunCli({"bench"}), 2, "error: 'bench' is not a command (did you mean `specsweep bench-forward`?)");
  ExpectError(RunCli({"version"}), 2, "error: 'version' is not a command (did you mean `specsweep --version`?)");
  ExpectError(RunCli({"-t", "1", "gnerate"}), 2,
              "error: 'gnerate' is not a command (did you mean `specsweep generate`?)");
  ExpectError(RunCli({"frobnicate"}), 2, "error: 'frobnicate' is not a command (specsweep help lists them)");
}

TEST(CliHabits, FlagsGetDidYouMeanInOneLine) {
  ExpectError(RunCli({"generate", "-m", Tiny(), "--tempp", "1"}), 2,
              "error: generate: unknown option --tempp (did you mean --temp?)");
  ExpectError(RunCli({"generate", "-m", Tiny(), "--max_new_tokens", "3"}), 2,
              "error: generate: unknown option --max_new_tokens (did you mean --max-new-tokens?)");
  // A one-letter flag is one edit from every other: no guess (it was "did you mean -h?").
  const CliResult x = RunCli({"generate", "-m", Tiny(), "-x"});
  ExpectError(x, 2, "error: generate: unknown option -x (specsweep generate --help lists its options)");
  EXPECT_EQ(x.err.find("did you mean"), std::string::npos) << x.err;
}

// The option's values are read before any model loads: the model here does not exist.
TEST(CliHabits, DraftsAndDecodersGetDidYouMeanBeforeLoading) {
  ExpectError(RunCli({"generate", "-m", "no-such-model", "--draft", "q4_O"}), 2, "(did you mean 'q4_0'?)");
  ExpectError(RunCli({"generate", "-m", "no-such-model", "--draft", "layer=2+q8_0"}), 2,
              "error: --draft: 'layer=2' is not self");
  ExpectError(RunCli({"generate", "-m", "no-such-model", "--draft", "lookpu"}), 2, "(did you mean 'lookup'?)");
  const CliResult d = RunCli({"generate", "-m", "no-such-model", "--decoder", "speculatve"});
  ExpectError(d, 2, "error: --decoder: unknown decoder 'speculatve' (did you mean 'speculative'?)");
  EXPECT_EQ(d.err.find("kind:"), std::string::npos) << d.err;
  ExpectError(RunCli({"generate", "-m", "no-such-model", "--decoder", "speculative"}), 2,
              "error: --decoder speculative: needs a draft");
}

// A key valid elsewhere in an experiment file is pointed there.
TEST(CliHabits, MisplacedExperimentKeysArePointedWhereTheyBelong) {
  const std::string dir = testing::TempDir();
  testing::WriteFile(dir + "/p.txt", "Once upon a time\n");
  const std::string head = "name: m\nmodels: [\"" + Tiny() + "\"]\n";
  for (auto [body, where] : {std::pair{"prompts: {file: p.txt, count: 1}\nsweep: {temperature: 0.5}\ndecoders: [ar]\n",
                                       "sweep.temperature: misplaced key (did you mean sweep.sampling.temperature?)"},
                             {"prompts: {file: p.txt, count: 1}\nsweep: {sampling: {k: 2}}\ndecoders: [ar]\n",
                              "sweep.sampling.k: misplaced key (did you mean sweep.k?)"},
                             {"prompts: {file: p.txt, count: 1}\nsweep: {k: 2, repetitions: 3}\ndecoders: [ar]\n",
                              "sweep.repetitions: misplaced key (did you mean top-level repetitions?)"},
                             {"prompts: {file: p.txt, count: 1, max_new_tokens: 8}\ndecoders: [ar]\n",
                              "prompts.max_new_tokens: misplaced key (did you mean sweep.max_new_tokens?)"},
                             {"prompts: {file: p.txt, count: 1}\ndecoders: [ar, {decoder: speculative, draft: q4_0, "
                              "top_p: 0.9}]\n",
                              "decoders[1].top_p: misplaced key (did you mean decoders[1].sampling.top_p?)"}}) {
    testing::WriteFile(dir + "/m.yaml", head + body);
    ExpectError(RunCli({"run", dir + "/m.yaml", "-o", dir + "/out", "--list"}), 1, dir + "/m.yaml: " + where);
  }
}

// Usage errors exit 2, input errors 1, --help and --version 0.
TEST(CliHabits, ExitCodesSayUsageOrInput) {
  EXPECT_EQ(RunCli({"generate", "-m", Tiny(), "-n", "abc"}).exit_code, 2);  // CLI11's own: 105
  EXPECT_EQ(RunCli({"generate"}).exit_code, 2);                             // --model is required: 106
  EXPECT_EQ(RunCli({"generate", "-m", Tiny(), "--bogus"}).exit_code, 2);    // 109
  EXPECT_EQ(RunCli({}).exit_code, 2);
  EXPECT_EQ(RunCli({"help", "nope"}).exit_code, 2);
  EXPECT_EQ(RunCli({"generate", "-m", Tiny(), "--temp", "-1"}).exit_code, 2);
  EXPECT_EQ(RunCli({"generate", "-m", Tiny(), "-ngl", "99"}).exit_code, 2);
  ExpectError(RunCli({"generate", "-m", testing::TempDir() + "/absent.gguf"}), 1, "absent.gguf");
  EXPECT_EQ(RunCli({"run", testing::TempDir() + "/absent.yaml"}).exit_code, 1);
  EXPECT_EQ(RunCli({"generate", "--help"}).exit_code, 0);
  EXPECT_EQ(RunCli({"--version"}).exit_code, 0);
}

// Every command's refused option value is a usage error, not only generate's.
TEST(CliHabits, EveryCommandsBadOptionValueIsUsage) {
  const std::string out = testing::TempDir() + "/usage";
  ExpectError(RunCli({"bench-forward", "-m", Tiny(), "--decode-k", "0"}), 2, "--decode-k: 0");
  ExpectError(RunCli({"bench-forward", "-m", Tiny(), "--team", "wide"}), 2, "wide");
  ExpectError(RunCli({"synth", "--shape", "nope", "-o", out + ".gguf"}), 2, "nope");
  ExpectError(RunCli({"synth", "--shape", "tiny", "--type", "q9", "-o", out + ".gguf"}), 2, "q9");
  ExpectError(RunCli({"quantize", "-m", Tiny(), "--quant", "q9", "-o", out + ".gguf"}), 2, "q9");
  ExpectError(RunCli({"table", out + ".json", "--table", "nope"}), 2, "nope");
  ExpectError(RunCli({"table", out + ".json", "--format", "docx"}), 2, "docx");
  ExpectError(RunCli(
                  {"run", std::string(SPECSWEEP_SOURCE_DIR) + "/experiments/quick.yaml", "--shard", "5/2", "--list"}),
              2, "--shard");
  // A file the tool cannot use stays an input error.
  ExpectError(RunCli({"table", out + "-absent.json"}), 1, "absent");
}

// Ctrl-C (or SIGTERM) during a generation: the text printed so far stays, exit 130.
// A model with room for 8000 new tokens, signalled once its first text is out.
TEST(CliHabits, InterruptedGenerateExits130) {
  ModelConfig c = TinyTestConfig();
  c.dim = 256, c.hidden_dim = 512, c.n_layers = 4, c.n_heads = 4, c.n_kv_heads = 4, c.max_seq_len = 8192;
  const std::string model = WriteModel(c, 3), dir = testing::TempDir();
  for (int sig : {SIGINT, SIGTERM}) {
    const std::string out = dir + "/out" + std::to_string(sig), err = dir + "/err" + std::to_string(sig);
    const pid_t pid = testing::SpawnCli({"generate", "-m", model, "-n", "8000", "--no-eos", "-t", "1"}, out, err);
    ASSERT_GT(pid, 0);
    int status = 0;
    const auto until = std::chrono::steady_clock::now() + 300s;
    struct stat st {};
    while ((stat(out.c_str(), &st) != 0 || st.st_size == 0) && std::chrono::steady_clock::now() < until) {
      ASSERT_EQ(waitpid(pid, &status, WNOHANG), 0) << "generate ended before printing: " << testing::ReadFile(err);
      std::this_thread::sleep_for(10ms);
    }
    ASSERT_GT(st.st_size, 0) << "no text within 300 s: " << testing::ReadFile(err);
    ASSERT_EQ(kill(pid, sig), 0);
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status)) << "ended by signal " << WTERMSIG(status);
    EXPECT_EQ(WEXITSTATUS(status), 130) << testing::ReadFile(err);
    EXPECT_HAS(testing::ReadFile(err), "interrupted");
    EXPECT_TRUE(testing::ReadFile(out).starts_with("Once upon a time")) << testing::ReadFile(out);
  }
}

}  // namespace
}  // namespace specsweep
