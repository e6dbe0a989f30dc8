// specsweep-microbench: matrix-kernel throughput per weight format on the shapes of a
// 134M Llama (dim 768, FFN 2048, vocab 32000), plus the roofline's two ceilings.
//
//   BM_MatMul/<type>/<shape>/<n>     one MatMul; shape 0: 768x768, 1: 2048x768 (w1/w3),
//                                    2: 768x2048 (w2), 3: 32000x768 (classifier)
//   BM_Decode134M/<type>/<n>         every matrix of the 12-layer model once (weights far
//                                    beyond the caches: the memory-bound decode step)
//   BM_MatMulIsa/<isa>/<type>/<n>    2048x768, n = 1 or 8, per kernel family (scalar, avx2,
//                                    avx512, avx2vnni)
//   BM_KernelCpu/<isa>/<type>/<n>    one family on one thread, 32768x2048 from memory, CPU time
//                                    (types: q4_0 q8_0 q4_1 q5_0 q5_1 iq4_nl iq4_xs)
//   BM_KQuantCpu/<isa>/<type>/<n>/<m> one family on one thread, K-quant 512x2048 in L2 (m 0) or
//                                    32768x2048 from memory (m 1), CPU time (types: q4_k q5_k q6_k)
//   BM_QuantizeActs/<isa>/<cols>     activation quantization of one row
//   BM_ReadBandwidth/<pattern>       STREAM-like read of 256 MiB (GB/s counter), prefetching
//                                    4 KB ahead (0), page-interleaved to L1 (1) or to L2 (2),
//                                    4 KB ahead to L2 in bursts (3), or not at all (4)
//   BM_FmaPeak                       float multiply-add peak of the active kernel family
//   BM_Forward1B/<type>/<n>          one Forward on n tokens at context 64 of the TinyLlama-1.1B
//                                    shape (synthetic weights; F16, Q8_0 or Q4_0): the decode
//                                    and verification step at real size (see Model1B)
//   BM_MatMuls1B/<type>/<n>          every matrix of that model once, nothing else: the
//                                    part of Forward1B no overhead can shrink
//   BM_PrefetchLead1B/<type>         MatMuls1B(1) of Q8_0 (1) or Q4_0 (2) at lead distances 4-128
//                                    KB, interleaved per round, one probe reading per round
//                                    (stderr; SPECSWEEP_PREFETCH=lead)
// Counters: bytes_per_second = weight bytes per call, items_per_second = multiply-adds.
// Threads follow OMP_NUM_THREADS (all cores by default). Wall-clock time (UseRealTime).
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "harness/store/results.h"
#include "harness/measure/process_runtime.h"
#include "harness/report/statistics.h"
#include "models/forward.h"
#include "models/gguf.h"
#include "models/kv_cache.h"
#include "models/loader.h"
#include "models/synthetic.h"
#include "quant/bandwidth.h"
#include "quant/kernels.h"
#include "quant/matmul.h"
#include "quant/prefetch.h"

namespace specsweep {
namespace {

constexpr QType kTypes[] = {QType::F32,  QType::F16,    QType::BF16,   QType::Q8_0,
                            QType::Q4_0, QType::Q4_G64, QType::Q4_G128};
struct Shape {
  int rows, cols;
};
constexpr Shape kShapes[] = {{768, 768}, {2048, 768}, {768, 2048}, {32000, 768}};
constexpr double kMinTime = 0.1;  // seconds per benchmark: keeps the full run short

// The process's runtime (the environment's kernels, OpenMP's default team), and the
// one the ISA benchmarks force a family on.
Runtime& Rt() {
  static Runtime rt = ProcessRuntime(omp_get_max_threads());
  return rt;
}

// Cache-line aligned like the forward pass's activations, so 512-bit loads never split.
AlignedFloats RandomValues(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-0.03f, 0.03f);
  AlignedFloats v(n);  // [n]
  for (float& x : v) x = u(rng);
  return v;
}

// Weights per (type, shape) in the layout the active kernel family runs (packed Q8_0/Q4_0
// for avx512, avx2, avx2vnni), built on first use.
const QMatrix& Weights(QType t, int shape) {
  static std::map<std::tuple<int, int, std::string>, std::unique_ptr<QMatrix>> cache;
  auto& slot = cache[{static_cast<int>(t), shape, Rt().kernel_isa()}];
  if (!slot) {
    const Shape s = kShapes[shape];
    AlignedFloats w = RandomValues(size_t(s.rows) * s.cols, 1 + shape);  // [rows][cols]
    slot = std::make_unique<QMatrix>(PackForKernels(Rt().kernels, Quantize(w.data(), s.rows, s.cols, t)));
  }
  return *slot;
}

void SetCounters(benchmark::State& st, double bytes_per_iter, double macs_per_iter) {
  st.SetBytesProcessed(static_cast<int64_t>(bytes_per_iter * st.iterations()));
  st.SetItemsProcessed(static_cast<int64_t>(macs_per_iter * st.iterations()));
}

void BM_MatMul(benchmark::State& st) {
  const QType t = kTypes[st.range(0)];
  const QMatrix& W = Weights(t, static_cast<int>(st.range(1)));
  const int n = static_cast<int>(st.range(2));
  AlignedFloats x = RandomValues(size_t(n) * W.cols, 99);  // [n][cols]
  AlignedFloats y(size_t(n) * W.rows);                     // [n][rows]
  for (auto _ : st) {
    MatMul(Rt(), W, x.data(), n, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  SetCounters(st, double(W.bytes()), double(n) * W.rows * W.cols);
  st.SetLabel(std::string(QTypeName(t)) + " " + Rt().kernel_isa());
}

void MatMulArgs(benchmark::internal::Benchmark* b) {
  for (int t = 0; t < 7; ++t)
    for (int s = 0; s < 4; ++s)
      for (int n : {1, 2, 4, 8, 16}) b->Args({t, s, n});
}
BENCHMARK(BM_MatMul)->Apply(MatMulArgs)->UseRealTime()->MinTime(kMinTime);

// The matrices of a 134M Llama (12 layers: 4 x 768x768, 2 x 2048x768, 768x2048; plus
// the 32000x768 classifier), in one type. One model alive at a time (F32: 440 MB).
struct DecodeModel {
  QType type;
  std::vector<QMatrix> mats;  // in forward order
  size_t bytes = 0;
  double macs = 0;
};
const DecodeModel& Model134M(QType t) {
  static std::unique_ptr<DecodeModel> m;
  if (!m || m->type != t) {
    m.reset();
    m = std::make_unique<DecodeModel>();
    m->type = t;
    uint64_t seed = 7;
    auto add = [&](int rows, int cols) {
      AlignedFloats w = RandomValues(size_t(rows) * cols, seed++);  // [rows][cols]
      m->mats.push_back(PackForKernels(Rt().kernels, Quantize(w.data(), rows, cols, t)));
      m->bytes += m->mats.back().bytes();
      m->macs += double(rows) * cols;
    };
    for (int l = 0; l < 12; ++l) {
      for (int k = 0; k < 4; ++k) add(768, 768);
      add(2048, 768);
      add(2048, 768);
      add(768, 2048);
    }
    add(32000, 768);
  }
  return *m;
}

void BM_Decode134M(benchmark::State& st) {
  const QType t = kTypes[st.range(0)];
  const int n = static_cast<int>(st.range(1));
  const DecodeModel& m = Model134M(t);
  AlignedFloats x = RandomValues(size_t(n) * 2048, 5);  // [n][<= 2048]
  AlignedFloats y(size_t(n) * 32000);                   // [n][<= 32000]
  for (auto _ : st) {
    for (const QMatrix& W : m.mats) MatMul(Rt(), W, x.data(), n, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  SetCounters(st, double(m.bytes), n * m.macs);
  st.SetLabel(std::string(QTypeName(t)) + " " + Rt().kernel_isa());
}
BENCHMARK(BM_Decode134M)->ArgsProduct({{0, 1, 2, 3, 4, 5, 6}, {1, 8}})->UseRealTime()->MinTime(0.3);

const char* kIsas[] = {"scalar", "avx2", "avx512", "avx2vnni"};

void BM_MatMulIsa(benchmark::State& st) {
  const char* isa = kIsas[st.range(0)];
  const KernelChoice saved = Rt().kernels;
  if (!ForceKernelIsa(Rt().kernels, isa)) {
    st.SkipWithError("kernel family not supported by this CPU");
    return;
  }
  const QType t = kTypes[st.range(1)];
  const int n = static_cast<int>(st.range(2));
  const QMatrix& W = Weights(t, 1);
  AlignedFloats x = RandomValues(size_t(n) * W.cols, 3), y(size_t(n) * W.rows);  // [n][cols], [n][rows]
  for (auto _ : st) {
    MatMul(Rt(), W, x.data(), n, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  Rt().kernels = saved;
  SetCounters(st, double(W.bytes()), double(n) * W.rows * W.cols);
  st.SetLabel(std::string(isa) + " " + std::string(QTypeName(t)));
}
BENCHMARK(BM_MatMulIsa)->ArgsProduct({{0, 1, 2, 3}, {0, 1, 3, 4}, {1, 8}})->UseRealTime()->MinTime(kMinTime);

// One family on the calling thread (MatMulWith), 32768 x 2048 weights (Q4_0: 38 MB, past
// the L3) in the layout the family runs: the kernel's own cost of streaming a matrix from
// memory, in thread CPU time (Google Benchmark's CPU column), which other processes on the
// host do not inflate. The 32-value types beside Q4_0/Q8_0 (all seven held: 320 MB, so
// --benchmark_enable_random_interleaving=true interleaves them without re-quantizing).
constexpr QType kCpuTypes[] = {QType::Q4_0, QType::Q8_0,   QType::Q4_1,  QType::Q5_0,
                               QType::Q5_1, QType::IQ4_NL, QType::IQ4_XS};

// One family on the calling thread: y = W x for a `rows` x 2048 matrix of type t (held
// per type and size: every SIMD family packs these types alike, quant/packed.h), timed by
// the caller's clock choice.
void KernelOnOneThread(benchmark::State& st, QType t, int rows, int n) {
  const KernelFamily* k = FindKernelFamily(kIsas[st.range(0)]);
  if (!k) {
    st.SkipWithError("kernel family not supported by this CPU");
    return;
  }
  static std::map<std::pair<QType, int>, QMatrix> held;
  QMatrix& W = held[{t, rows}];
  if (W.rows == 0) {
    AlignedFloats w = RandomValues(size_t(rows) * 2048, 11);  // [rows][cols]
    W = PackFor(*k, Quantize(w.data(), rows, 2048, t));
  }
  AlignedFloats x = RandomValues(size_t(n) * W.cols, 3), y(size_t(n) * W.rows);  // [n][cols], [n][rows]
  for (auto _ : st) {
    MatMulWith(*k, W, x.data(), n, y.data(), 1);
    benchmark::DoNotOptimize(y.data());
  }
  SetCounters(st, double(W.bytes()), double(n) * W.rows * W.cols);
  st.SetLabel(std::string(k->name) + " " + std::string(QTypeName(t)));
}

void BM_KernelCpu(benchmark::State& st) {
  KernelOnOneThread(st, kCpuTypes[st.range(1)], 32768, static_cast<int>(st.range(2)));
}
BENCHMARK(BM_KernelCpu)->ArgsProduct({{1, 2, 3}, {0, 1, 2, 3, 4, 5, 6}, {1, 8}})->MinTime(0.5);

// The K-quants the same way, 512 x 2048 in L2 (m = 0; Q4_K 590 KB: the kernel's compute
// per weight byte) or 32768 x 2048 from memory (m = 1; Q4_K 38 MB), thread CPU time.
void BM_KQuantCpu(benchmark::State& st) {
  const QType t = std::array{QType::Q4_K, QType::Q5_K, QType::Q6_K}[st.range(1)];
  KernelOnOneThread(st, t, st.range(3) ? 32768 : 512, static_cast<int>(st.range(2)));
}
BENCHMARK(BM_KQuantCpu)->ArgsProduct({{1, 2, 3}, {0, 1, 2}, {1, 8}, {0, 1}})->MinTime(0.3);

void BM_QuantizeActs(benchmark::State& st) {
  const KernelFamily* k = FindKernelFamily(kIsas[st.range(0)]);
  if (!k) {
    st.SkipWithError("kernel family not supported by this CPU");
    return;
  }
  const int cols = static_cast<int>(st.range(1));
  const int cp = (cols + 127) / 128 * 128;
  AlignedFloats x = RandomValues(cols, 4);  // [cols]
  std::vector<int8_t> q(cp);                // [cp]
  std::vector<float> d(cp / 32);            // [cp/32]
  std::vector<int32_t> corr(cp / 4);        // [cp/4]
  for (auto _ : st) {
    k->quantize_acts(x.data(), cols, cp, q.data(), d.data(), corr.data());
    benchmark::DoNotOptimize(q.data());
  }
  st.SetItemsProcessed(static_cast<int64_t>(st.iterations()) * cols);
  st.SetLabel(k->name);
}
BENCHMARK(BM_QuantizeActs)->ArgsProduct({{0, 1, 2, 3}, {768, 2048}})->MinTime(kMinTime);

void BM_ReadBandwidth(benchmark::State& st) {
  const int pattern = static_cast<int>(st.range(0));
  const size_t bytes = kReadProbeBytes;
  static AlignedBuffer buf = MakeReadProbeBuffer();  // [256 MiB]
  std::vector<double> gbs;
  for (auto _ : st) gbs.push_back(ReadPassGBs(buf.data(), bytes, pattern));
  st.counters["GBps_median"] = Median(gbs);
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * bytes));
  const char* names[] = {"prefetch 4 KB ahead", "page-interleaved prefetch to L1",
                         "page-interleaved prefetch to L2 in bursts", "prefetch 4 KB ahead to L2 in bursts",
                         "no software prefetch"};
  static_assert(std::size(names) == kReadProbePatterns);
  st.SetLabel(std::to_string(Rt().threads) + " threads, " + names[pattern]);
}
BENCHMARK(BM_ReadBandwidth)->DenseRange(0, kReadProbePatterns - 1)->UseRealTime()->Iterations(9);

// The compute ceiling of the float kernels: the active family's FMA probe on all threads.
void BM_FmaPeak(benchmark::State& st) {
  std::vector<double> gmacs;
  for (auto _ : st) gmacs.push_back(MeasureFmaPeakGmacs(*Rt().kernels.base));
  st.counters["GMACps_median"] = Median(gmacs);
  st.SetLabel(std::to_string(Rt().threads) + " threads " + Rt().kernel_isa());
}
BENCHMARK(BM_FmaPeak)->UseRealTime()->Iterations(3);

// The TinyLlama-1.1B shape ("1b": dim 2048, 22 layers, 32/4 heads, FFN 5632, vocab
// 32000) with synthetic F16 weights, read from a cached GGUF: $SPECSWEEP_MICROBENCH_1B,
// else /tmp/specsweep-microbench-1b-f16.gguf, written on first use (2.3 GB, minutes;
// `specsweep synth --shape 1b --type f16 -o FILE` writes the same file). Quantized
// formats are made from it in memory. Null (the benchmark skips) when
// SPECSWEEP_MICROBENCH_1B=skip or less than 8 GiB of memory is available.
const char* Skip1B() {
  const char* env = std::getenv("SPECSWEEP_MICROBENCH_1B");
  if (env && std::string(env) == "skip") return "SPECSWEEP_MICROBENCH_1B=skip";
  std::ifstream f("/proc/meminfo");
  std::string key;
  long kb = 0;
  while (f >> key >> kb)
    if (key == "MemAvailable:") return kb < 8L << 20 ? "less than 8 GiB of memory available" : nullptr;
  return nullptr;
}
std::shared_ptr<const Model> Model1B(QType t) {
  static std::shared_ptr<const Model> f16;
  static std::pair<QType, std::shared_ptr<const Model>> quantized;  // one alive at a time
  Rt();  // applied before loading: the loader packs for its kernels
  if (!f16) {
    const char* env = std::getenv("SPECSWEEP_MICROBENCH_1B");
    const std::string path = env && *env ? env : "/tmp/specsweep-microbench-1b-f16.gguf";
    if (!std::filesystem::exists(path)) {
      const ModelConfig c = SyntheticShape("1b");
      const Model m = QuantizeModel(MakeSyntheticModel(c, 1), QType::F16);
      const std::string tmp = path + ".part";  // a crash never leaves a truncated cache
      WriteGguf(m, *MakeScoreBpeTokenizer(SyntheticVocab(c.vocab_size)), tmp);
      std::filesystem::rename(tmp, path);
    }
    f16 = LoadModel(path).model;
  }
  if (t == QType::F16) return f16;
  if (!quantized.second || quantized.first != t) {
    quantized.second.reset();
    quantized = {t, std::make_shared<const Model>(QuantizeModel(*f16, t))};
  }
  return quantized.second;
}

constexpr QType k1BTypes[] = {QType::F16, QType::Q8_0, QType::Q4_0};

void BM_Forward1B(benchmark::State& st) {
  if (const char* why = Skip1B()) {
    st.SkipWithError(why);
    return;
  }
  const QType t = k1BTypes[st.range(0)];
  const int n = static_cast<int>(st.range(1)), ctx = 64;
  const std::shared_ptr<const Model> m = Model1B(t);
  KVCache cache(m->config, 0, ctx + n);
  std::vector<int> toks(ctx + n);  // [ctx + n] fixed pseudo-random ids, as bench-forward
  for (size_t i = 0; i < toks.size(); ++i) toks[i] = static_cast<int>((i * 7919 + 3) % m->config.vocab_size);
  Forward(Rt(), *m, std::span<const int>(toks.data(), ctx), 0, cache, false);
  for (auto _ : st) {
    cache.Truncate(ctx);
    benchmark::DoNotOptimize(Forward(Rt(), *m, std::span<const int>(toks.data() + ctx, n), ctx, cache, true).data());
  }
  const double streamed = double(m->WeightBytes() - m->tok_embeddings.bytes());
  st.SetBytesProcessed(static_cast<int64_t>(streamed * st.iterations()));
  st.SetLabel(std::string(QTypeName(t)) + " " + Rt().kernel_isa());
}
BENCHMARK(BM_Forward1B)->ArgsProduct({{0, 1, 2}, {1, 8}})->UseRealTime()->MinTime(1.0);

// Every matrix of the 1.1B shape once, in forward order (7 per layer, then the
// classifier): the forward's weight work without attention, norms, activation
// quantization per layer or the barriers between them. MatMuls1B(8) / Forward1B(1)
// bounds T(8)/T(1) from below for any forward built on these kernels.
void BM_MatMuls1B(benchmark::State& st) {
  if (const char* why = Skip1B()) {
    st.SkipWithError(why);
    return;
  }
  const QType t = k1BTypes[st.range(0)];
  const int n = static_cast<int>(st.range(1));
  const std::shared_ptr<const Model> m = Model1B(t);
  std::vector<const QMatrix*> mats;
  for (const LayerWeights& L : m->layers)
    for (const QMatrix* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w1, &L.w3, &L.w2}) mats.push_back(w);
  mats.push_back(&m->output);
  double bytes = 0, macs = 0;
  size_t widest = 0, tallest = 0;
  for (const QMatrix* w : mats) {
    bytes += double(w->bytes());
    macs += double(w->rows) * w->cols;
    widest = std::max<size_t>(widest, w->cols), tallest = std::max<size_t>(tallest, w->rows);
  }
  AlignedFloats x = RandomValues(size_t(n) * widest, 5);  // [n][<= widest]
  AlignedFloats y(size_t(n) * tallest);                   // [n][<= tallest]
  for (auto _ : st) {
    for (const QMatrix* w : mats) MatMul(Rt(), *w, x.data(), n, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  SetCounters(st, bytes, n * macs);
  st.SetLabel(std::string(QTypeName(t)) + " " + Rt().kernel_isa());
}
BENCHMARK(BM_MatMuls1B)->ArgsProduct({{0, 1, 2}, {1, 8}})->UseRealTime()->MinTime(1.0);

// The lead pattern's distance (quant/prefetch.h) swept within one process, for the
// kernels that read it at run time (packed Q8_0/Q4_0, K-quants): per round one probe
// reading (the memory phase it met), then per distance the median of 5 passes over every
// matrix of the 1.1B shape, as GB/s of weights, to stderr. Interleaving the distances in
// every round keeps each comparison inside one phase (docs/performance.md, "Zen 4, #49").
void BM_PrefetchLead1B(benchmark::State& st) {
  Rt();  // sets the process's prefetch pattern
  if (const char* why = Skip1B(); why || ActivePrefetchPattern() != PrefetchPattern::kLead) {
    st.SkipWithError(why ? why : "the prefetch pattern is not lead (SPECSWEEP_PREFETCH=lead)");
    return;
  }
  const QType t = k1BTypes[st.range(0)];
  const std::shared_ptr<const Model> m = Model1B(t);
  std::vector<const QMatrix*> mats;
  for (const LayerWeights& L : m->layers)
    for (const QMatrix* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w1, &L.w3, &L.w2}) mats.push_back(w);
  mats.push_back(&m->output);
  double bytes = 0;
  for (const QMatrix* w : mats) bytes += double(w->bytes());
  AlignedFloats x = RandomValues(size_t(m->config.hidden_dim), 5);  // [1][<= widest]
  AlignedFloats y(size_t(m->config.vocab_size));                    // [1][<= tallest]
  AlignedBuffer probe = MakeReadProbeBuffer();
  for (auto _ : st) {
    for (int round = 0; round < 12; ++round) {
      double bw = 0;
      for (int p = 0; p < kReadProbePatterns; ++p) bw = std::max(bw, ReadPassGBs(probe.data(), kReadProbeBytes, p));
      std::string line = fmt::format("round {} {} probe {:.1f} GB/s, weights GB/s by lead:", round, QTypeName(t), bw);
      for (uintptr_t lead : {4096, 8192, 16384, 32768, 65536, 131072}) {
        g_prefetch_formula.ahead.store(lead, std::memory_order_relaxed);
        std::vector<double> secs;
        for (int k = 0; k < 5; ++k) {
          const auto t0 = std::chrono::steady_clock::now();
          for (const QMatrix* w : mats) MatMul(Rt(), *w, x.data(), 1, y.data());
          secs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
        line += fmt::format(" {}K {:.1f}", lead / 1024, bytes / Median(secs) / 1e9);
      }
      fmt::print(stderr, "{}\n", line);
    }
  }
  SetPrefetchPattern(PrefetchPattern::kLead);  // back to kLeadBytes
}
BENCHMARK(BM_PrefetchLead1B)->Arg(1)->Arg(2)->Iterations(1)->UseRealTime();

}  // namespace
}  // namespace specsweep

BENCHMARK_MAIN();
