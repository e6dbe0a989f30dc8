// Issue #22: one rule for the stored type of a quantized tensor (in memory and in a
// quantized file), one speculative decoder with a draft spec (assisted and self-spec as
// aliases), and the adaptive K policy bounded by k.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "decoders/decoder.h"
#include "decoders/draft_policy.h"
#include "harness/report/load.h"
#include "harness/sweep/experiment.h"
#include "harness/store/merge.h"
#include "harness/report/plot.h"
#include "harness/sweep/shard.h"
#include "harness/store/results.h"
#include "harness/report/table.h"
#include "base/error.h"
#include "models/forward.h"
#include "models/gguf.h"
#include "models/loader.h"
#include "models/synthetic.h"
#include "tests/test_util.h"

namespace specsweep {
namespace {

using nlohmann::json;
using testing::ErrorOf;
using testing::RunCli;
using testing::TempDir;
using testing::WriteFile;

std::vector<float> Logits(const Model& m, const std::vector<int>& tokens) {
  KVCache cache(m.config);
  auto out = Forward(testing::Serial(), m, tokens, 0, cache, true);
  return std::vector<float>(out.begin(), out.end());
}

TEST(StoredQType, BlockFormatsThatDoNotDivideTheWidthBecomeF16) {
  EXPECT_EQ(StoredQType(QType::Q4_0, 192), QType::Q4_0);
  EXPECT_EQ(StoredQType(QType::Q4_0, 172), QType::F16);
  EXPECT_EQ(StoredQType(QType::Q8_0, 172), QType::F16);
  EXPECT_EQ(StoredQType(QType::Q4_K, 512), QType::Q4_K);
  EXPECT_EQ(StoredQType(QType::Q4_K, 384), QType::Q5_0);  // llama.cpp's fallback table
  EXPECT_EQ(StoredQType(QType::Q5_K, 896), QType::Q5_1);
  EXPECT_EQ(StoredQType(QType::Q6_K, 896), QType::Q8_0);
  EXPECT_EQ(StoredQType(QType::Q3_K, 896), QType::IQ4_NL);
  EXPECT_EQ(StoredQType(QType::IQ4_XS, 1152), QType::IQ4_NL);
  EXPECT_EQ(StoredQType(QType::IQ4_NL, 1152), QType::IQ4_NL);
  EXPECT_EQ(StoredQType(QType::Q4_K, 172), QType::F16);  // not even 32 divides
  EXPECT_EQ(StoredQType(QType::Q4_G64, 96), QType::F16);
  EXPECT_EQ(StoredQType(QType::F32, 172), QType::F32);
  EXPECT_EQ(StoredQType(QType::BF16, 3), QType::BF16);
}

// An FFN of width 172 (stories260K's): `--quant q4_0` in memory and the file `specsweep
// quantize --quant q4_0` writes hold the same types and give bit-identical logits.
TEST(StoredQType, InMemoryQuantEqualsQuantizedFile) {
  ModelConfig c = TinyTestConfig();
  c.hidden_dim = 172;
  const std::string dir = TempDir();
  WriteGguf(MakeSyntheticModel(c, 17), *MakeScoreBpeTokenizer(SyntheticVocab(c.vocab_size)), dir + "/f32.gguf");
  const std::vector<int> tokens = {1, 17, 42, 99, 5, 64};
  for (QType t : {QType::Q4_0, QType::Q8_0}) {
    const std::string name(QTypeName(t));
    SCOPED_TRACE(name);
    const std::string out = dir + "/" + name + ".gguf";
    testing::CliResult r = RunCli({"quantize", dir + "/f32.gguf", out, "--quant", name});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("blk.0.ffn_down.weight"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("172 columns"), std::string::npos) << r.out;  // says why it is F16

    LoadedModel mem = WithQuant(LoadGguf(dir + "/f32.gguf"), t);
    LoadedModel file = LoadGguf(out);
    for (const Model* m : {mem.model.get(), file.model.get()}) {
      EXPECT_EQ(m->layers[0].w2.type, QType::F16);  // 172 columns
      EXPECT_FALSE(m->layers[0].w2.padded());
      EXPECT_EQ(m->layers[0].w1.type, t);  // 64 columns
      EXPECT_EQ(m->output.type, t);
    }
    const std::vector<float> a = Logits(*mem.model, tokens), b = Logits(*file.model, tokens);
    ASSERT_EQ(a.size(), b.size());
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
  }
}

// ---- one speculative decoder; assisted and self-spec name kinds of draft ----

std::string AliasError(std::string_view decoder, DraftSpec d) {
  return ErrorOf(
      [&] { ApplyDecoderAlias(decoder, d, [](std::string_view part) { return "OPT(" + std::string(part) + ")"; }); });
}

TEST(DecoderAlias, SettlesTheDraftAndNamesTheContradictingOption) {
  EXPECT_EQ(ParseDecoderKind("assisted"), DecoderKind::Speculative);
  EXPECT_EQ(ParseDecoderKind("self-spec"), DecoderKind::Speculative);
  EXPECT_EQ(ParseDecoderKind("speculative"), DecoderKind::Speculative);
  EXPECT_EQ(DecoderKindName(DecoderKind::Speculative), "speculative");

  DraftSpec d;
  ApplyDecoderAlias("self-spec", d, [](std::string_view) { return std::string(); });
  EXPECT_EQ(d.Label(), "q4_0");  // self-spec's default draft
  d = ParseDraftSpec("q8_0", "t");
  ApplyDecoderAlias("self-spec", d, [](std::string_view) { return std::string(); });
  EXPECT_EQ(d.Label(), "q8_0");
  d = ParseDraftSpec("layers=2", "t");
  ApplyDecoderAlias("speculative", d, [](std::string_view) { return std::string(); });
  EXPECT_EQ(d.Label(), "layers=2");  // the general name leaves the draft alone

  EXPECT_TRUE(AliasError("self-spec", ParseDraftSpec("layers=2", "t")).starts_with("OPT(layers): self-spec"));
  EXPECT_TRUE(AliasError("self-spec", ParseDraftSpec("model=x", "t")).starts_with("OPT(model): self-spec"));
  EXPECT_TRUE(AliasError("self-spec", ParseDraftSpec("lookup", "t")).starts_with("OPT(lookup): self-spec"));
  EXPECT_TRUE(AliasError("assisted", ParseDraftSpec("q4_0", "t")).starts_with("OPT(model): assisted needs"));
  EXPECT_TRUE(AliasError("assisted", ParseDraftSpec("lookup", "t")).starts_with("OPT(lookup): assisted"));
  EXPECT_EQ(AliasError("assisted", ParseDraftSpec("model=x+layers=1+q8_0", "t")), "");
}

// CLI: the aliases refuse what contradicts them with one line naming the option, and
// self-spec is speculative with a q4_0 copy of the target, token for token.
TEST(DecoderAlias, GenerateCli) {
  const std::string model = TempDir() + "/tiny.gguf";
  testing::WriteTinyGguf(model, 5);
  const std::vector<std::string> head = {"generate", "--model", model, "--prompt", "ab", "-n", "12", "--no-eos"};
  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = head;
    args.insert(args.end(), extra.begin(), extra.end());
    return RunCli(args);
  };
  auto fails = [&](std::vector<std::string> extra, const std::string& msg) {
    testing::CliResult r = run(extra);
    EXPECT_EQ(r.exit_code, 2) << msg;  // usage errors (docs/commands.md)
    EXPECT_TRUE(r.err.starts_with(msg) || r.err.find(": " + msg) != std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  };
  fails({"--decoder", "self-spec", "--draft-layers", "2"}, "--draft-layers: self-spec");
  fails({"--decoder", "self-spec", "--draft-lookup"}, "--draft-lookup: self-spec");
  fails({"--decoder", "assisted", "--draft-quant", "q4_0"}, "--draft-model: assisted needs a separate draft model");
  fails({"--decoder", "assisted", "--draft-lookup"}, "--draft-lookup: assisted");
  fails({"--decoder", "self-spec", "--draft", "layers=1"}, "--draft layers=1 (layers): self-spec");
  fails({"--decoder", "speculative", "--draft", "layers=1", "--draft-quant", "q4_0"},
        "--draft-quant: not with --draft");
  fails({"--decoder", "speculative", "--max-ngram", "4"}, "--max-ngram: applies only to --draft-lookup");
  fails({"--decoder", "speculative", "--draft", "tiny"}, "--draft: 'tiny' is not self");
  fails({"--decoder", "speculative"}, "--decoder speculative: needs a draft");
  fails({"--decoder", "ar", "--draft", "q4_0"}, "--draft: does not apply to --decoder ar");

  auto json_of = [&](std::vector<std::string> extra) {
    extra.push_back("--json");
    testing::CliResult r = run(extra);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? json::parse(r.out) : json{};
  };
  const json self = json_of({"--decoder", "self-spec"});
  const json spec = json_of({"--decoder", "speculative", "--draft-quant", "q4_0"});
  const json text = json_of({"--decoder", "speculative", "--draft", "q4_0"});
  for (const json* j : {&self, &spec, &text}) {
    EXPECT_EQ((*j)["decoder"], "speculative");
    EXPECT_EQ((*j)["speculative"]["draft"], "q4_0");
    EXPECT_EQ((*j)["speculative"]["draft_quant"], "q4_0");
    EXPECT_EQ((*j)["tokens"], self["tokens"]);
    EXPECT_EQ((*j)["stats"]["drafted"], self["stats"]["drafted"]);
  }
  const json exit = json_of({"--decoder", "speculative", "--draft-layers", "1", "--draft-quant", "q8_0"});
  EXPECT_EQ(exit["speculative"]["draft"], "layers=1+q8_0");
  EXPECT_EQ(exit["speculative"]["draft_base"], "layers=1");
  EXPECT_EQ(exit["tokens"], self["tokens"]);  // lossless, whatever drafts
  const json lookup = json_of({"--decoder", "speculative", "--draft-lookup", "--max-ngram", "4"});
  EXPECT_EQ(lookup["speculative"]["draft"], "lookup+max_ngram=4+min_ngram=1");
  const json ext = json_of({"--decoder", "assisted", "--draft-model", model, "--draft-layers", "1"});
  EXPECT_EQ(ext["speculative"]["draft"], "model=" + model + "+layers=1");
}

// Experiment files: the aliases expand to the same points as speculative with the
// draft they name, and refuse the rest naming file and key.
TEST(DecoderAlias, ExperimentFiles) {
  const std::string dir = TempDir(), model = dir + "/tiny.gguf", prompts = dir + "/p.txt";
  testing::WriteTinyGguf(model, 6);
  WriteFile(prompts, "Once upon a time\n");
  const std::string head = "name: a\nmodels: [\"" + model + "\"]\nprompts: {file: \"" + prompts + "\", count: 1}\n";
  auto keys = [&](const std::string& name, const std::string& decoders) {
    WriteFile(dir + "/" + name, head + "decoders: " + decoders + "\n");
    std::set<std::string> k;
    for (const Point& p : LoadExperiment(dir + "/" + name).points) k.insert(p.Key());
    return k;
  };
  EXPECT_EQ(keys("a.yaml", "[self-spec]"), keys("b.yaml", "[{decoder: speculative, draft: [q4_0]}]"));
  EXPECT_EQ(keys("c.yaml", "[{decoder: self-spec, draft_quant: [q8_0]}]"),
            keys("d.yaml", "[{decoder: speculative, draft: [q8_0]}]"));
  const std::string draft = dir + "/draft.gguf";
  testing::WriteTinyGguf(draft, 7);
  const std::set<std::string> assisted =
      keys("e.yaml", "[{decoder: assisted, draft: [\"model=" + draft + "+layers=1\"]}]");
  EXPECT_EQ(assisted.size(), 2u);  // baseline and one point
  EXPECT_EQ(assisted, keys("f.yaml", "[{decoder: speculative, draft: [\"model=" + draft + "+layers=1\"]}]"));
  for (const std::string& k : keys("g.yaml", "[self-spec]"))
    if (k.find(";dec=ar;") == std::string::npos) {
      EXPECT_NE(k.find(";dec=speculative;"), std::string::npos) << k;
    }

  auto bad = [&](const std::string& name, const std::string& decoders, const std::string& key,
                 const std::string& what) {
    WriteFile(dir + "/" + name, head + "decoders: " + decoders + "\n");
    const std::string e = ErrorOf([&] { LoadExperiment(dir + "/" + name); });
    EXPECT_NE(e.find(dir + "/" + name + ": " + key), std::string::npos) << e;
    EXPECT_NE(e.find(what), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  };
  bad("x1.yaml", "[{decoder: self-spec, draft: [layers=2]}]", "decoders[0].draft 'layers=2' (layers)", "self-spec");
  bad("x2.yaml", "[{decoder: assisted, draft: [q4_0]}]", "decoders[0].draft 'q4_0' (model)", "assisted needs");
  bad("x3.yaml", "[assisted]", "decoders[0] 'self' (model)", "assisted needs");
  bad("x4.yaml", "[speculative]", "decoders[0]", "speculative needs a draft");
  bad("x5.yaml", "[beam]", "decoders[0]", "expected ar, speculative");
}

// ---- results written before: the old decoder names still load, as today's ----

TEST(OldResults, DecoderNamesAndAdaptiveKAreReadAsToday) {
  const std::string ar_key = "model=m;tq=none;dec=ar;in=0;new=8;temp=0;topk=0;topp=1;seed=0;thr=0";
  auto rec = [&](const std::string& dec, int k, const std::string& policy, const std::string& draft) {
    return json{{"key", fmt::format("model=m;tq=none;dec={};in=0;new=8;temp=0;topk=0;topp=1;seed=0;thr=0;k={};"
                                    "kp={};draft={}",
                                    dec, k, policy, draft)},
                {"baseline_key", ar_key},
                {"name", fmt::format("m/{}/{}/k={}{}/new=8", dec, draft, k, policy == "constant" ? "" : "/" + policy)},
                {"model", "m"},
                {"decoder", dec},
                {"k", k},
                {"k_policy", policy},
                {"draft", draft},
                {"acceptance_rate", 0.5},
                {"mean_accepted_length", 2.0},
                {"temperature", 0.0}};
  };
  json doc = {{"context", {{"schema_version", 2}}},
              {"benchmarks",
               {{{"key", ar_key}, {"name", "m/ar/new=8"}, {"decoder", "ar"}, {"k", 0}},
                rec("self-spec", 2, "constant", "q4_0"),
                rec("assisted", 3, "constant", "layers=1"),
                rec("assisted", 4, "adaptive", "layers=1")}}};
  const std::string path = TempDir() + "/old.json";
  WriteFile(path, doc.dump());
  Results r = LoadResults(path);
  ASSERT_EQ(r.records.size(), 4u);
  EXPECT_EQ(r.records[1]["decoder"], "speculative");
  EXPECT_EQ(r.records[1]["key"],
            "model=m;tq=none;dec=speculative;in=0;new=8;temp=0;topk=0;topp=1;seed=0;thr=0;"
            "k=2;kp=constant;draft=q4_0");
  EXPECT_EQ(r.records[1]["name"], "m/speculative/q4_0/k=2/new=8");
  EXPECT_EQ(r.records[2]["decoder"], "speculative");
  // The old adaptive policy drafted up to 8 whatever k said: it is k<=8 adaptive now.
  EXPECT_EQ(r.records[3]["k"], 8);
  EXPECT_NE(r.records[3]["key"].get<std::string>().find(";k=8;kp=adaptive;"), std::string::npos);
  EXPECT_EQ(r.records[3]["name"], "m/speculative/layers=1/k=8/adaptive/new=8");
  EXPECT_EQ(KLabelOf(r.records[3]), "k<=8 adaptive");
  EXPECT_EQ(r.records[0]["key"], ar_key);

  // A point measured today has the upgraded key, so an old baseline still gates it.
  Point p;
  p.model = "m";
  p.options.max_new_tokens = 8;
  p.options.kind = DecoderKind::Speculative;
  p.options.k = 2;
  p.options.draft = ParseDraftSpec("q4_0", "t");
  EXPECT_EQ(p.Key(), r.records[1]["key"]);

  // An older schema is refused by name.
  doc["context"]["schema_version"] = 1;
  WriteFile(path, doc.dump());
  EXPECT_NE(ErrorOf([&] { LoadResults(path); }).find("context.schema_version"), std::string::npos);
}

// merge reads old shards as today's records and says so in its context.
TEST(OldResults, MergedOldShardsAreWrittenInTodaysTerms) {
  json ctx = {{"schema_version", 2}, {"experiment", "exp"}, {"experiment_sha256", "abc"}};
  ctx.update(ShardContext(ShardSpec{0, 1}, 1, 1));
  const json old = {{"key",
                     "model=m;tq=none;dec=self-spec;in=0;new=8;temp=0;topk=0;topp=1;seed=0;thr=0;k=2;"
                     "kp=constant;draft=q4_0"},
                    {"name", "m/self-spec/q4_0/k=2/new=8"},
                    {"decoder", "self-spec"},
                    {"k", 2},
                    {"k_policy", "constant"},
                    {"draft", "q4_0"}};
  const std::string path = TempDir() + "/old.shard-0-of-1.json";
  WriteFile(path, json{{"context", ctx}, {"benchmarks", {old}}}.dump());
  MergedResults m = MergeShards({LoadResults(path)}, {});
  // ... except its speedups, arithmetic means of per-round ratios: the last such schema.
  EXPECT_EQ(m.doc["context"]["schema_version"], kGeometricSpeedupSchemaVersion - 1);
  ASSERT_EQ(m.doc["benchmarks"].size(), 1u);
  EXPECT_EQ(m.doc["benchmarks"][0]["decoder"], "speculative");
  EXPECT_NE(m.doc["benchmarks"][0]["key"].get<std::string>().find(";dec=speculative;"), std::string::npos);
}

// The committed CI baseline keeps matching the quick experiment's points.
TEST(OldResults, CommittedBaselineKeysAreTheQuickExperimentsKeys) {
  const std::string models = testing::SharedModelsDir();
  if (models.empty()) GTEST_SKIP() << "the quick experiment needs the shared models";
  const std::string src = SPECSWEEP_SOURCE_DIR;
  Experiment e = LoadExperiment(src + "/experiments/quick.yaml", models);
  std::set<std::string> want, have;
  for (const Point& p : e.points) want.insert(p.Key());
  for (const json& r : LoadResults(src + "/results/baseline/quick.json").records) have.insert(FieldText(r, "key"));
  EXPECT_EQ(want, have);
}

// ---- the adaptive policy is bounded by k, and tables say so ----

TEST(AdaptiveK, KBoundsTheStepsAndLabelsSayWhatRan) {
  EXPECT_EQ(AdaptivePolicy(2).NextK(), 2);
  EXPECT_EQ(AdaptivePolicy(8).NextK(), 8);
  AdaptivePolicy one(1);
  EXPECT_EQ(one.OnDraft(1, 0.0f), DraftAction::KeepAndStop);  // min steps never above the bound
  EXPECT_EQ(KLabel(4, KPolicy::Constant), "k=4");
  EXPECT_EQ(KLabel(4, KPolicy::Adaptive), "k<=4 adaptive");
  EXPECT_EQ(KLabel(5, KPolicy::Threshold), "k<=5 threshold");
  EXPECT_EQ(KLabel(2, KPolicy::Heuristic), "k0=2 heuristic");

  ModelConfig c = TinyTestConfig();
  LoadedModel t;
  t.model = std::make_shared<const Model>(MakeSyntheticModel(c, 3));
  t.name = "synthetic";
  for (int k : {2, 5}) {
    DecoderOptions o;
    o.kind = DecoderKind::Speculative;
    o.draft = DraftSpec::Make(TargetDraft{1, std::nullopt});
    o.k = k;
    o.k_policy = KPolicy::Adaptive;
    o.max_new_tokens = 30;
    o.stop_at_eos = false;
    GenerationResult r = MakeDecoder(t, o)->Generate(std::vector<int>{1, 4, 9});
    ASSERT_FALSE(r.stats.k_per_step.empty());
    for (int ks : r.stats.k_per_step) EXPECT_LE(ks, k);
    // At least min(kMinSteps, k) per step; a random draft is rarely confident beyond.
    EXPECT_GE(*std::max_element(r.stats.k_per_step.begin(), r.stats.k_per_step.end()),
              std::min(k, AdaptivePolicy::kMinSteps));
    EXPECT_LE(r.stats.drafted_at_pos.size(), size_t(k));
  }

  auto rec = [](int k, const std::string& policy, double speedup) {
    return json{{"key", policy + std::to_string(k)},
                {"name", policy},
                {"model", "m"},
                {"decoder", "speculative"},
                {"k", k},
                {"k_policy", policy},
                {"draft", "layers=1"},
                {"draft_base", "layers=1"},
                {"draft_quant", "none"},
                {"speedup", speedup},
                {"mean_accepted_length", 2.0},
                {"temperature", 0.0}};
  };
  const std::string md = RenderTable(MainTable(RecordsFromJson(
                                         {rec(4, "constant", 1.1), rec(4, "adaptive", 1.2), rec(8, "constant", 1.3)})),
                                     TableFormat::Markdown);
  for (const char* h : {"| k=4 ", "| k<=4 adaptive |", "| k=8 "}) {
    const std::string cell = std::string(h).substr(2);  // right-aligned headers: "|   k=4 |"
    EXPECT_NE(md.find(cell), std::string::npos) << h << "\n" << md;
  }
  EXPECT_EQ(md.find("k_policy"), std::string::npos) << md;  // the column says it
  EXPECT_LT(md.find("k<=4 adaptive"), md.find("k=8"));      // columns by K

  // Plots: a per-position curve names its K as run; a series over K says what K is.
  json a = rec(4, "adaptive", 1.2), h = rec(4, "heuristic", 1.0);
  a["acceptance_at_pos_conditional"] = h["acceptance_at_pos_conditional"] = {0.9, 0.8};
  std::vector<std::string> titles;
  for (const Series& se : AcceptancePerPosition(RecordsFromJson({a, h}))) titles.push_back(se.title);
  EXPECT_EQ(titles, (std::vector<std::string>{"m, speculative, adaptive (K = bound), k<=4 adaptive",
                                              "m, speculative, heuristic (K = start), k0=4 heuristic"}));
  titles.clear();
  for (const Series& se : SpeedupVsK(RecordsFromJson({a, rec(8, "adaptive", 1.1), h}))) titles.push_back(se.title);
  EXPECT_EQ(titles, (std::vector<std::string>{"m, speculative, adaptive (K = bound)",
                                              "m, speculative, heuristic (K = start)"}));
}

}  // namespace
}  // namespace specsweep
