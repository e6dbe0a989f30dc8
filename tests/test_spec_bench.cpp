// Spec-Bench-style runs (#36): question sets, their selection per report group, chat
// templates down to token ids, conversations that carry the model's own answer, and the
// per-category table. The shared question file and tokenizer fixtures are used when
// ../shared exists; synthetic ones cover the same paths without it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "harness/measure/conversation.h"
#include "harness/pipeline.h"
#include "harness/report/category.h"
#include "harness/report/load.h"
#include "harness/report/table.h"
#include "harness/sweep/experiment.h"
#include "harness/sweep/questions.h"
#include "models/chat_template.h"
#include "models/synthetic.h"
#include "tests/test_util.h"

namespace specsweep {
namespace {

using testing::ErrorOf;
using testing::SharedFile;
using testing::TempDir;
using testing::WriteFile;

std::vector<int> Ids(const std::vector<Question>& qs) {
  std::vector<int> out;
  for (auto& q : qs) out.push_back(q.id);
  return out;
}

// A small question file in Spec-Bench's format: two MT-bench categories (two turns), and
// three single-turn tasks.
std::string SyntheticQuestions() {
  static const std::string path = [] {
    std::string p = TempDir() + "/questions.jsonl";
    WriteFile(p,
              R"({"question_id": 1, "category": "writing", "turns": ["Write a poem about the sea.", "Make it shorter."]}
{"question_id": 2, "category": "math", "turns": ["What is 2 + 2?", "And 3 + 3?"]}
{"question_id": 3, "category": "writing", "turns": ["Tell a story.", "Give it a title."]}
{"question_id": 10, "category": "translation", "turns": ["Translate German to English: Guten Tag ."]}
{"question_id": 11, "category": "translation", "turns": ["Translate German to English: Danke ."]}
{"question_id": 20, "category": "qa", "turns": ["Why is the sky blue?"]}
{"question_id": 21, "category": "qa", "turns": ["Who wrote Hamlet, the play about a prince of Denmark?"]}
{"question_id": 22, "category": "qa", "turns": ["What is rain?"]}
)");
    return p;
  }();
  return path;
}

// ---------------------------------------------------------------------------- questions

TEST(Questions, SpecBenchFileSelectsPerGroupDeterministically) {
  const std::string path = SharedFile("prompts/spec-bench/question.jsonl");
  if (path.empty()) GTEST_SKIP() << "no shared Spec-Bench question file";
  const std::vector<Question> all = ReadQuestions(path);
  ASSERT_EQ(all.size(), 480u);
  QuestionSelection s;
  s.per_category = 2;
  const std::vector<Question> first = SelectQuestions(all, s, "t");
  EXPECT_EQ(Ids(first), (std::vector<int>{81, 82, 161, 162, 241, 242, 321, 322, 401, 402, 481, 482}));
  std::vector<std::string> groups;
  for (size_t i = 0; i < first.size(); i += 2) groups.push_back(first[i].group);
  EXPECT_EQ(groups, SpecBenchGroupOrder());
  EXPECT_EQ(first[0].turns.size(), 2u);  // MT-bench questions have two turns
  EXPECT_EQ(Ids(SelectQuestions(all, s, "t")), Ids(first));
  s.select = "shortest";
  EXPECT_EQ(Ids(SelectQuestions(all, s, "t")),
            (std::vector<int>{116, 120, 228, 202, 277, 275, 375, 351, 444, 455, 482, 506}));
  // Every group holds 80 questions: all 480 by default.
  EXPECT_EQ(SelectQuestions(all, QuestionSelection{}, "t").size(), 480u);
}

TEST(Questions, SelectsCategoriesGroupsAndCuts) {
  const std::vector<Question> all = ReadQuestions(SyntheticQuestions());
  ASSERT_EQ(all.size(), 8u);
  QuestionSelection s;
  s.per_category = 2;
  // MT-bench's categories form one group, in the order it first appears.
  const auto sel = SelectQuestions(all, s, "t");
  EXPECT_EQ(Ids(sel), (std::vector<int>{1, 2, 10, 11, 20, 21}));
  EXPECT_EQ(sel[0].group, "multi-turn conversation");
  EXPECT_EQ(sel[1].category, "math");
  EXPECT_EQ(sel[4].group, "question answering");
  s.select = "shortest";
  EXPECT_EQ(Ids(SelectQuestions(all, s, "t")), (std::vector<int>{2, 3, 11, 10, 22, 20}));
  s.categories = {"qa", "writing"};  // a raw category and a group name both select
  s.select = "first";
  EXPECT_EQ(Ids(SelectQuestions(all, s, "t")), (std::vector<int>{1, 3, 20, 21}));
  s.categories = {"poetry"};
  EXPECT_NE(ErrorOf([&] { SelectQuestions(all, s, "t"); }).find("'poetry' is neither"), std::string::npos);
  s.categories = {};
  s.per_category = 3;
  EXPECT_NE(ErrorOf([&] { SelectQuestions(all, s, "t"); }).find("group 'translation' has 2"), std::string::npos);
  s.per_category = 0;
  s.max_chars = 20;
  const auto cut = SelectQuestions(all, s, "t");
  EXPECT_EQ(cut[0].turns[0], "Write a po ... t the sea.");
  EXPECT_EQ(cut[0].turns[1], "Make it shorter.");  // short turns stay whole
  s.max_chars = 0;
  s.groups = {{"writing", "creative"}};
  EXPECT_EQ(SelectQuestions(all, s, "t")[0].group, "creative");
  EXPECT_EQ(SelectQuestions(all, s, "t")[2].group, "math");  // unmapped: its own group
  const std::string bad = TempDir() + "/bad.jsonl";
  WriteFile(bad, "{\"question_id\": 1, \"category\": \"qa\", \"turns\": [\"x\"]}\n{\"category\": \"qa\"}\n");
  EXPECT_NE(ErrorOf([&] { ReadQuestions(bad); }).find("bad.jsonl:2:"), std::string::npos);
}

// ---------------------------------------------------------------------------- templates

TEST(ChatTemplates, RenderTheirFormats) {
  const std::vector<std::string> two{"Hi", "Why?"}, one{"Hi"}, answer{"Hello"};
  EXPECT_EQ(RenderChat(ParseChatTemplate("vicuna", "t"), two, answer),
            "A chat between a curious user and an artificial intelligence assistant. The assistant gives helpful, "
            "detailed, and polite answers to the user's questions. USER: Hi ASSISTANT: Hello</s>USER: Why? "
            "ASSISTANT:");
  EXPECT_EQ(RenderChat(ParseChatTemplate("chatml", "t"), one, {}),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(RenderChat(ParseChatTemplate("llama-3", "t"), {" Hi \n"}, {}),
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(RenderChat(ParseChatTemplate("Q: {prompt} A:", "t"), two, answer), "Q: Hi A:Hello\nQ: Why? A:");
  EXPECT_EQ(RenderChat(ParseChatTemplate("none", "t"), two, answer), "Hi\nHello\nWhy?");
  EXPECT_NE(ErrorOf([] { ParseChatTemplate("alpaca", "--template"); }).find("--template: unknown template 'alpaca'"),
            std::string::npos);
}

TEST(ChatTemplates, Llama3TokenIdsFromItsTokenizer) {
  const std::string path = SharedFile("fixtures/tokenizers/llama3/tokenizer.json");
  if (path.empty()) GTEST_SKIP() << "no shared llama3 tokenizer fixture";
  auto tok = LoadHfTokenizer(path);
  ChatEncoder chat(*tok, ParseChatTemplate("llama-3", "t"), "t");
  // <|begin_of_text|> 128000, <|start_header_id|> 128006, <|end_header_id|> 128007,
  // <|eot_id|> 128009; user 882, assistant 78191, "\n\n" 271, Hi 13347, Hello 9906,
  // Why 10445, ? 30 (tokenizer.json's vocab). BOS once: the template writes it.
  EXPECT_EQ(chat.EncodeTurns({"Hi"}, {}),
            (std::vector<int>{128000, 128006, 882, 128007, 271, 13347, 128009, 128006, 78191, 128007, 271}));
  EXPECT_EQ(chat.EncodeTurns({"Hi", "Why?"}, {"Hello"}),
            (std::vector<int>{128000, 128006, 882, 128007, 271, 13347, 128009, 128006, 78191,  128007, 271,    9906,
                              128009, 128006, 882, 128007, 271, 10445, 30,     128009, 128006, 78191,  128007, 271}));
  // vicuna's "</s>" is this tokenizer's EOS (<|end_of_text|> 128001), after the answer.
  ChatEncoder vicuna(*tok, ParseChatTemplate("vicuna", "t"), "t");
  const std::vector<int> ids = vicuna.EncodeTurns({"Hi", "Why?"}, {"Hello"});
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 128001), 1);
  const std::vector<int> answer_then_eos{22691, 128001};  // " Hello" (after "ASSISTANT:"), EOS
  EXPECT_NE(std::search(ids.begin(), ids.end(), answer_then_eos.begin(), answer_then_eos.end()), ids.end());
}

TEST(ChatTemplates, ChatmlTokenIdsFromQwen3Tokenizer) {
  const std::string path = SharedFile("fixtures/tokenizers/qwen3/tokenizer.json");
  if (path.empty()) GTEST_SKIP() << "no shared qwen3 tokenizer fixture";
  auto tok = LoadHfTokenizer(path);
  ChatEncoder chat(*tok, ParseChatTemplate("chatml", "t"), "t");
  // <|im_start|> 151644, <|im_end|> 151645, user 872, assistant 77091, "\n" 198,
  // Hi 13048, Hello 9707; Qwen adds no BOS.
  EXPECT_EQ(chat.EncodeTurns({"Hi"}, {}), (std::vector<int>{151644, 872, 198, 13048, 151645, 198, 151644, 77091, 198}));
  EXPECT_EQ(chat.EncodeTurns({"Hi", "Hi"}, {"Hello"}),
            (std::vector<int>{151644, 872,    198, 13048, 151645, 198,    151644, 77091,  198,   9707, 151645,
                              198,    151644, 872, 198,   13048,  151645, 198,    151644, 77091, 198}));
  EXPECT_NE(ErrorOf([&] {
              ChatEncoder(*tok, ParseChatTemplate("llama-3", "t"), "exp.yaml: template");
            }).find("exp.yaml: template: template llama-3 needs the special token <|begin_of_text|>"),
            std::string::npos);
}

TEST(ChatTemplates, SyntheticTokenizerSpecialsAndBosOnce) {
  auto tok = MakeScoreBpeTokenizer(SyntheticVocab(200));  // <s> 1, </s> 2, asks for BOS
  auto enc = [&](const char* text) { return tok->Encode(text, false); };
  auto cat = [](std::initializer_list<std::vector<int>> parts) {
    std::vector<int> out;
    for (auto& p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
  };
  // The template writes <s>: it is the BOS, and no second one is added.
  EXPECT_EQ(ChatEncoder(*tok, ParseChatTemplate("<s>[Q] {prompt}</s>", "t"), "t").EncodeTurns({"hi"}, {}),
            cat({{1}, enc("[Q] hi"), {2}}));
  // Without it the tokenizer's BOS comes first, once.
  EXPECT_EQ(ChatEncoder(*tok, ParseChatTemplate("[Q] {prompt}", "t"), "t").EncodeTurns({"hi"}, {}),
            cat({{1}, enc("[Q] hi")}));
  // vicuna: "</s>" closes the answer as the EOS id, the rest is text.
  ChatEncoder vicuna(*tok, ParseChatTemplate("vicuna", "t"), "t");
  const std::string sys = RenderChat(vicuna.chat_template(), {"a"}, {});
  EXPECT_EQ(vicuna.EncodeTurns({"a", "b"}, {"c"}),
            cat({{1}, enc((sys + " c").c_str()), {2}, enc("USER: b ASSISTANT:")}));
  EXPECT_NE(ErrorOf([&] { ChatEncoder(*tok, ParseChatTemplate("chatml", "t"), "t"); }).find("<|im_start|>"),
            std::string::npos);
}

// ---------------------------------------------------------------------------- conversations

// Answers every prompt with fixed tokens and remembers what it was asked.
class EchoDecoder : public Decoder {
 public:
  explicit EchoDecoder(const Tokenizer& tok) : tok_(tok) {}
  using Decoder::Generate;
  GenerationResult Generate(std::span<const int> prompt, DecoderState&, const TokenCallback&) const override {
    prompts.emplace_back(prompt.begin(), prompt.end());
    GenerationResult r;
    r.tokens = tok_.Encode(" answer number " + std::to_string(prompts.size()), false);
    r.text = tok_.Decode(r.tokens);
    r.stats.generated_tokens = int(r.tokens.size());
    r.stats.target_calls = 2;
    r.stats.total_s = 1.0;
    r.stats.prefill_s = 0.5;
    r.stats.first_token_latency_s = 0.6;
    r.stats.mean_next_token_latency_s = 0.1;
    r.stats.k_per_step = {3, 4};
    return r;
  }
  const DecoderOptions& options() const override { return opt_; }
  CallCosts MeasureCallCosts(std::span<const int>, int, int, const DecoderState&, int) const override { return {}; }
  mutable std::vector<std::vector<int>> prompts;

 private:
  const Tokenizer& tok_;
  DecoderOptions opt_;
};

TEST(Conversation, SecondTurnFollowsTheModelsOwnAnswer) {
  auto tok = MakeScoreBpeTokenizer(SyntheticVocab(300));
  ChatEncoder chat(*tok, ParseChatTemplate("vicuna", "t"), "t");
  EchoDecoder d(*tok);
  const std::vector<std::string> turns{"first question", "second question"};
  const std::vector<int> first = chat.EncodeTurns({turns[0]}, {});
  GenerationResult r = GenerateConversation(d, *d.NewState(), first, turns, chat, 4096, 10, "t");
  ASSERT_EQ(d.prompts.size(), 2u);
  EXPECT_EQ(d.prompts[0], first);
  // Turn 2 is the conversation with turn 1's answer (trimmed), as FastChat renders it.
  EXPECT_EQ(d.prompts[1], chat.EncodeTurns(turns, {"answer number 1"}));
  const std::string second = tok->Decode(d.prompts[1]);
  EXPECT_NE(second.find("USER: first question ASSISTANT: answer number 1"), std::string::npos) << second;
  EXPECT_NE(second.find("USER: second question ASSISTANT:"), std::string::npos) << second;
  EXPECT_EQ(r.text, " answer number 1 answer number 2");
  EXPECT_EQ(r.stats.generated_tokens, int(r.tokens.size()));
  EXPECT_EQ(r.stats.target_calls, 4);
  EXPECT_EQ(r.stats.k_per_step, (std::vector<int>{3, 4, 3, 4}));
  EXPECT_DOUBLE_EQ(r.stats.tokens_per_s, r.stats.generated_tokens / 1.0);  // 2 s total, 1 s prefill
  EXPECT_DOUBLE_EQ(r.stats.first_token_latency_s, 0.6);
  // A turn that cannot fit the context is an error naming it.
  EchoDecoder d2(*tok);
  auto run2 = d2.NewState();
  EXPECT_NE(ErrorOf([&] {
              GenerateConversation(d2, *run2, first, turns, chat, int(first.size()) + 12, 10, "q7");
            }).find("q7: turn 2"),
            std::string::npos);
}

// ---------------------------------------------------------------------------- end to end

TEST(SpecBenchCli, GenerateWrapsThePromptInTheTemplate) {
  const std::string model = TempDir() + "/tiny.gguf";
  testing::WriteTinyGguf(model, 7);
  auto r = testing::RunCli(
      {"generate", "--model", model, "--template", "Q: {prompt} A:", "--prompt", "why", "-n", "2", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  auto tok = MakeScoreBpeTokenizer(SyntheticVocab(128));  // the tiny model's vocabulary
  EXPECT_EQ(j["prompt_ids"].get<std::vector<int>>(),
            ChatEncoder(*tok, ParseChatTemplate("Q: {prompt} A:", "t"), "t").EncodeTurns({"why"}, {}));
  EXPECT_EQ(j["template"], "Q: {prompt} A:");
  r = testing::RunCli({"generate", "--model", model, "--template", "chatml", "-n", "2"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--template: template chatml needs the special token <|im_start|>"), std::string::npos) << r.err;
}

std::string QuestionExperiment(const std::string& dir, const std::string& extra) {
  const std::string model = dir + "/tiny.gguf";
  testing::WriteTinyGguf(model, 7);
  const std::string p = dir + "/qs.yaml";
  WriteFile(p, "name: qs\nmodels: [\"" + model + "\"]\nprompts: {file: \"" + SyntheticQuestions() + "\", " + extra +
                   "}\ntemplate: \"Q: {prompt} A:\"\nrepetitions: 2\nsweep: {k: 2, max_new_tokens: 4}\n"
                   "decoders: [ar, {decoder: speculative, draft: [layers=1]}]\n");
  return p;
}

TEST(SpecBenchRun, ExperimentKeysAndErrors) {
  const std::string dir = TempDir();
  Experiment e = LoadExperiment(QuestionExperiment(dir, "per_category: 2, turns: all, select: shortest"));
  EXPECT_TRUE(e.prompts.questions);
  EXPECT_TRUE(e.prompts.all_turns);
  EXPECT_EQ(e.prompts.selection.per_category, 2);
  EXPECT_EQ(e.chat_template.name, "custom");
  EXPECT_NE(ErrorOf([&] { LoadExperiment(QuestionExperiment(dir, "count: 2")); }).find("prompts.count: a question set"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { LoadExperiment(QuestionExperiment(dir, "turns: both")); }).find("prompts.turns: 'both'"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { LoadExperiment(QuestionExperiment(dir, "select: random")); }).find("prompts.select"),
            std::string::npos);
}

TEST(SpecBenchRun, RecordsCarryCategoriesAndTheTableSplitsThem) {
  const std::string dir = TempDir();
  Experiment e = LoadExperiment(QuestionExperiment(dir, "per_category: 2, turns: all"));
  RunOptions o;
  o.out_dir = dir + "/out";
  o.progress = nullptr;
  RunSummary s = RunExperiment(e, o);
  LoadedRecords res = LoadRecords(s.json_path);
  ASSERT_EQ(res.records.size(), 2u);
  const nlohmann::json& spec = res.records[1].flat;
  EXPECT_EQ(spec["per_prompt_category"],
            nlohmann::json({"multi-turn conversation", "multi-turn conversation", "translation", "translation",
                            "question answering", "question answering"}));
  EXPECT_EQ(spec["prompt_set"]["question_ids"], nlohmann::json({1, 2, 10, 11, 20, 21}));
  EXPECT_EQ(spec["prompt_set"]["turns"], "all");
  EXPECT_EQ(spec["prompt_set"]["sha256"].get<std::string>().size(), 64u);
  // Greedy speculative decoding answers like AR, so both decoders hold the same conversations.
  EXPECT_EQ(spec["outputs_match_baseline"], 1.0);

  const std::vector<AggregateRecord> split = SplitByCategory(res.records);
  ASSERT_EQ(split.size(), 8u);  // 3 groups + overall, for each of the two points
  EXPECT_EQ(split[4]["category"], "multi-turn conversation");
  EXPECT_EQ(split[7]["category"], "overall");
  EXPECT_EQ(split[7]["prompts"], 6);
  // The overall speedup is the geometric mean of the per-question speedups: the point's own.
  double sum = 0;
  for (auto& v : spec["per_prompt_speedup"]) sum += std::log(v.get<double>());
  EXPECT_NEAR(split[7]["speedup"].get<double>(), std::exp(sum / 6), 1e-12);
  EXPECT_NEAR(split[7]["speedup"].get<double>(), spec["speedup"].get<double>(), 1e-9);

  const std::string md = RenderTable(SpecBenchTable(res.records), TableFormat::Markdown);
  for (const char* col :
       {"Multi-turn Conversation", "Translation", "Question Answering", "#Mean Accepted Tokens", "Overall"})
    EXPECT_NE(md.find(col), std::string::npos) << md;
  // The same through the CLI, and --by category for the generic tables.
  auto cli = testing::RunCli({"table", s.json_path, "--table", "spec-bench"});
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_EQ(cli.out, md);
  cli = testing::RunCli({"table", s.json_path, "--by", "category", "--rows", "category", "--metric", "speedup"});
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_NE(cli.out.find("| translation"), std::string::npos) << cli.out;
  EXPECT_NE(testing::RunCli({"table", s.json_path, "--by", "task"}).err.find("--by: 'task' (expected category)"),
            std::string::npos);
  // Records of a plain prompt file cannot make this table.
  nlohmann::json plain = spec;
  plain.erase("per_prompt_category");
  EXPECT_NE(ErrorOf([&] { SpecBenchTable(RecordsFromJson({plain})); }).find("no prompt categories"), std::string::npos);
}

// The quick variant on the shared models, one repetition: six groups and overall.
TEST(SpecBenchRun, QuickVariantOnTheSharedModels) {
  const std::string models = testing::SharedModelsDir();
  if (models.empty() || SharedFile("prompts/spec-bench/question.jsonl").empty())
    GTEST_SKIP() << "the quick variant needs the shared models and question file";
  Experiment e = LoadExperiment(std::string(SPECSWEEP_SOURCE_DIR) + "/experiments/spec_bench_quick.yaml", models);
  EXPECT_EQ(e.points.size(), 30u);  // 6 parts (one per group of 5 questions) x 5 points (#47)
  e.repetitions = 1;
  e.warmup = 0;
  RunOptions o;
  o.out_dir = TempDir();
  o.progress = nullptr;
  const Table t = SpecBenchTable(LoadRecords(RunExperiment(e, o).json_path).records);
  std::vector<std::string> cols(t.header.begin() + long(t.label_cols), t.header.end());
  EXPECT_EQ(cols, (std::vector<std::string>{"Multi-turn Conversation", "Translation", "Summarization",
                                            "Question Answering", "Mathematical Reasoning", "Retrieval-aug. Generation",
                                            "#Mean Accepted Tokens", "Overall"}));
  EXPECT_EQ(t.rows.size(), 4u);  // layers=1, q4_0, lookup, the other model
}

}  // namespace
}  // namespace specsweep
