#include "tests/test_util.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <vector>

#include <gtest/gtest.h>

#include "base/error.h"
#include "models/gguf.h"
#include "models/synthetic.h"
#include "quant/matmul.h"

namespace fs = std::filesystem;

namespace specsweep::testing {

std::string SharedFile(const std::string& path_below_shared) {
  const std::string models = SharedModelsDir();
  if (models.empty()) return "";
  const std::filesystem::path p = std::filesystem::path(models).parent_path() / path_below_shared;
  return std::filesystem::exists(p) ? p.string() : "";
}

std::vector<std::string> TinyStoriesPrompts() {
  std::ifstream f(std::string(SPECSWEEP_SOURCE_DIR) + "/experiments/prompts/tinystories.txt");
  std::vector<std::string> lines;
  for (std::string s; std::getline(f, s);)
    if (!s.empty()) lines.push_back(s);
  return lines;
}

std::string SharedModelsDir() {
  if (const char* env = std::getenv("SPECSWEEP_MODELS"); env && fs::is_directory(env)) return env;
  fs::path p = fs::path(SPECSWEEP_SOURCE_DIR) / ".." / "shared" / "models";
  if (fs::is_directory(p)) return fs::canonical(p).string();
  return "";
}

static std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'')
      q += "'\\''";
    else
      q += c;
  }
  return q + "'";
}

namespace {

// Every directory TempDir made, removed when the test process exits (ctest runs each
// test in a process of its own), so repeated runs leave nothing behind in /tmp.
class MadeDirs {
 public:
  void Add(const std::string& d) {
    std::lock_guard<std::mutex> lock(mu_);
    dirs_.push_back(d);
  }
  ~MadeDirs() {
    std::error_code ec;
    for (const std::string& d : dirs_) fs::remove_all(d, ec);
  }

 private:
  std::mutex mu_;
  std::vector<std::string> dirs_;
};
MadeDirs& Made() {  // constructed on first use, whatever calls TempDir first
  static MadeDirs dirs;
  return dirs;
}

}  // namespace

std::string TempDir() {
  std::string tmpl = (fs::temp_directory_path() / "specsweep-test-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) {
    std::string msg = "TempDir: mkdtemp failed for ";
    msg += tmpl;
    throw std::runtime_error(msg);
  }
  Made().Add(tmpl);
  return tmpl;
}

TinyFiles MakeTinyFiles(unsigned seed, const std::string& prompt_lines) {
  TinyFiles x;
  x.dir = TempDir();
  x.model = x.dir + "/tiny.gguf";
  WriteTinyGguf(x.model, seed);
  x.prompts = x.dir + "/prompts.txt";
  WriteFile(x.prompts, prompt_lines);
  return x;
}

ScopedEnv::ScopedEnv(const char* name, const char* value) : name_(name) {
  if (const char* v = std::getenv(name)) had_ = true, old_ = v;
  if (value)
    setenv(name, value, 1);
  else
    unsetenv(name);
}

ScopedEnv::~ScopedEnv() {
  if (had_)
    setenv(name_, old_.c_str(), 1);
  else
    unsetenv(name_);
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

CliResult RunCli(const std::vector<std::string>& args) {
  std::string dir = TempDir();
  std::string out = dir + "/out", err = dir + "/err";
  std::string cmd = Quote(SPECSWEEP_BIN);
  // append(), not " " + s: GCC 12 gives a false -Wrestrict for const char* + std::string.
  for (auto& a : args) cmd.append(" ").append(Quote(a));
  cmd.append(" >").append(Quote(out)).append(" 2>").append(Quote(err)).append(" </dev/null");
  CliResult r;
  int status = std::system(cmd.c_str());
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = ReadFile(out);
  r.err = ReadFile(err);
  fs::remove_all(dir);
  return r;
}

int SpawnCli(const std::vector<std::string>& args, const std::string& out_path, const std::string& err_path) {
  std::vector<std::string> all = {SPECSWEEP_BIN};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  const std::string out = out_path.empty() ? "/dev/null" : out_path;
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, SPECSWEEP_BIN, &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void ExpectError(const std::function<void()>& f, std::initializer_list<std::string> fragments) {
  try {
    f();
    ADD_FAILURE() << "no error thrown";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    for (auto& frag : fragments) EXPECT_NE(msg.find(frag), std::string::npos) << "'" << frag << "' not in: " << msg;
  }
}

void WriteTinyGguf(const std::string& path, unsigned seed) {
  const ModelConfig c = TinyTestConfig();
  WriteGguf(MakeSyntheticModel(c, seed), *MakeScoreBpeTokenizer(SyntheticVocab(c.vocab_size)), path);
}

std::vector<ArchVariant> ArchVariants(const ModelConfig& base) {
  std::vector<ArchVariant> v;
  v.push_back({"llama", base});
  ModelConfig l3 = base;
  l3.rope_scaling = "llama3";
  l3.rope_scaling_factor = 8;
  l3.rope_low_freq_factor = 1;
  l3.rope_high_freq_factor = 4;
  l3.rope_original_context = 512;
  l3.rope_freq_factors = Llama3RopeFactors(l3.rope_theta, l3.head_dim(), 8, 1, 4, 512);
  v.push_back({"llama3_rope", l3});
  ModelConfig lin = base;
  lin.rope_scaling = "linear";
  lin.rope_scaling_factor = 4;
  v.push_back({"linear_rope", lin});
  ModelConfig q2 = base;
  q2.arch = "qwen2";
  q2.qkv_bias = true;
  q2.rope_theta = 1e6f;
  v.push_back({"qwen2", q2});
  ModelConfig q3 = base;
  q3.arch = "qwen3";
  q3.qk_norm = true;
  q3.head_size = 24;
  v.push_back({"qwen3", q3});
  ModelConfig q3b = q3;
  q3b.head_size = 32;
  q3b.n_kv_heads = 1;
  v.push_back({"qwen3_hd32", q3b});
  return v;
}

const Runtime& Serial() {
  static const Runtime rt;
  return rt;
}

Runtime Threads(int threads, TeamPolicy team) {
  Runtime rt;
  rt.threads = threads;
  rt.team = team;
  return rt;
}

bool ForceIsa(Runtime& rt, const char* isa) {
  if (!ForceKernelIsa(rt.kernels, isa)) return false;
  SetLoadLayoutKernels(rt.kernels);
  return true;
}

KernelIsaGuard::~KernelIsaGuard() { SetLoadLayoutKernels(DefaultKernels()); }

}  // namespace specsweep::testing
