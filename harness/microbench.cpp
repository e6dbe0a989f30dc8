// specsweep-microbench: matrix-kernel throughput per weight format on the shapes of a
// 134M Llama (dim 768, FFN 2048, vocab 32000), plus the roofline's two ceilings.
//
//   BM_MatMul/<type>/<shape>/<n>     one MatMul; shape 0: 768x768, 1: 2048x768 (w1/w3),
//                                    2: 768x2048 (w2), 3: 32000x768 (classifier)
//   BM_Decode134M/<type>/<n>         every matrix of the 12-layer model once (weights far
//                                    beyond the caches: the memory-bound decode step)
//   BM_MatMulIsa/<isa>/<type>/<n>    2048x768, n = 1 or 8, per kernel family
//   BM_QuantizeActs/<isa>/<cols>     activation quantization of one row
//   BM_ReadBandwidth/<pattern>       STREAM-like read of 256 MiB (GB/s counter), prefetching
//                                    4 KB ahead (0), page-interleaved to L1 (1) or to L2 (2)
//   BM_FmaPeak                       float multiply-add peak of the active kernel family
// Counters: bytes_per_second = weight bytes per call, items_per_second = multiply-adds.
// Threads follow OMP_NUM_THREADS (all cores by default). Wall-clock time (UseRealTime).
#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "harness/results.h"
#include "models/kv_cache.h"
#include "quant/bandwidth.h"
#include "quant/kernels.h"
#include "quant/matmul.h"

namespace specsweep {
namespace {

constexpr QType kTypes[] = {QType::F32,  QType::F16,    QType::BF16,   QType::Q8_0,
                            QType::Q4_0, QType::Q4_G64, QType::Q4_G128};
struct Shape {
  int rows, cols;
};
constexpr Shape kShapes[] = {{768, 768}, {2048, 768}, {768, 2048}, {32000, 768}};
constexpr double kMinTime = 0.1;  // seconds per benchmark: keeps the full run short

// Cache-line aligned like the forward pass's activations, so 512-bit loads never split.
AlignedFloats RandomValues(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-0.03f, 0.03f);
  AlignedFloats v(n);  // [n]
  for (float& x : v) x = u(rng);
  return v;
}

// Weights per (type, shape) in the layout the active kernel family runs (packed Q8_0/Q4_0
// for avx512), built on first use.
const QMatrix& Weights(QType t, int shape) {
  static std::map<std::tuple<int, int, std::string>, std::unique_ptr<QMatrix>> cache;
  auto& slot = cache[{static_cast<int>(t), shape, ActiveKernelIsa()}];
  if (!slot) {
    const Shape s = kShapes[shape];
    AlignedFloats w = RandomValues(size_t(s.rows) * s.cols, 1 + shape);  // [rows][cols]
    slot = std::make_unique<QMatrix>(PackForKernels(Quantize(w.data(), s.rows, s.cols, t)));
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
  AlignedFloats y(size_t(n) * W.rows);                      // [n][rows]
  for (auto _ : st) {
    MatMul(W, x.data(), n, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  SetCounters(st, double(W.bytes()), double(n) * W.rows * W.cols);
  st.SetLabel(std::string(QTypeName(t)) + " " + ActiveKernelIsa());
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
      m->mats.push_back(PackForKernels(Quantize(w.data(), rows, cols, t)));
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
  AlignedFloats y(size_t(n) * 32000);                    // [n][<= 32000]
  for (auto _ : st) {
    for (const QMatrix& W : m.mats) MatMul(W, x.data(), n, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  SetCounters(st, double(m.bytes), n * m.macs);
  st.SetLabel(std::string(QTypeName(t)) + " " + ActiveKernelIsa());
}
BENCHMARK(BM_Decode134M)
    ->ArgsProduct({{0, 1, 2, 3, 4, 5, 6}, {1, 8}})
    ->UseRealTime()
    ->MinTime(0.3);

const char* kIsas[] = {"scalar", "avx2", "avx512"};

void BM_MatMulIsa(benchmark::State& st) {
  const char* isa = kIsas[st.range(0)];
  const std::string saved = ActiveKernelIsa();
  if (!ForceKernelIsa(isa)) {
    st.SkipWithError("kernel family not supported by this CPU");
    return;
  }
  const QType t = kTypes[st.range(1)];
  const int n = static_cast<int>(st.range(2));
  const QMatrix& W = Weights(t, 1);
  AlignedFloats x = RandomValues(size_t(n) * W.cols, 3), y(size_t(n) * W.rows);  // [n][cols], [n][rows]
  for (auto _ : st) {
    MatMul(W, x.data(), n, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  ForceKernelIsa(saved.c_str());
  SetCounters(st, double(W.bytes()), double(n) * W.rows * W.cols);
  st.SetLabel(std::string(isa) + " " + std::string(QTypeName(t)));
}
BENCHMARK(BM_MatMulIsa)->ArgsProduct({{0, 1, 2}, {0, 1, 3, 4}, {1, 8}})->UseRealTime()->MinTime(kMinTime);

void BM_QuantizeActs(benchmark::State& st) {
  const KernelFamily* k = FindKernelFamily(kIsas[st.range(0)]);
  if (!k) {
    st.SkipWithError("kernel family not supported by this CPU");
    return;
  }
  const int cols = static_cast<int>(st.range(1));
  const int cp = (cols + 127) / 128 * 128;
  AlignedFloats x = RandomValues(cols, 4);  // [cols]
  std::vector<int8_t> q(cp);                    // [cp]
  std::vector<float> d(cp / 32);                // [cp/32]
  std::vector<int32_t> corr(cp / 4);            // [cp/4]
  for (auto _ : st) {
    k->quantize_acts(x.data(), cols, cp, q.data(), d.data(), corr.data());
    benchmark::DoNotOptimize(q.data());
  }
  st.SetItemsProcessed(static_cast<int64_t>(st.iterations()) * cols);
  st.SetLabel(k->name);
}
BENCHMARK(BM_QuantizeActs)->ArgsProduct({{0, 1, 2}, {768, 2048}})->MinTime(kMinTime);

void BM_ReadBandwidth(benchmark::State& st) {
  const int pattern = static_cast<int>(st.range(0));
  const size_t bytes = size_t{256} << 20;
  static AlignedBuffer buf(bytes);  // [256 MiB]
  std::vector<double> gbs;
  for (auto _ : st) gbs.push_back(ReadPassGBs(buf.data(), bytes, pattern));
  st.counters["GBps_median"] = Median(gbs);
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * bytes));
  const char* names[] = {"prefetch 4 KB ahead", "page-interleaved prefetch to L1", "page-interleaved prefetch to L2 in bursts"};
  st.SetLabel(std::to_string(omp_get_max_threads()) + " threads, " + names[pattern]);
}
BENCHMARK(BM_ReadBandwidth)->DenseRange(0, 2)->UseRealTime()->Iterations(9);

// The compute ceiling of the float kernels: the active family's FMA probe on all threads.
void BM_FmaPeak(benchmark::State& st) {
  std::vector<double> gmacs;
  for (auto _ : st) gmacs.push_back(MeasureFmaPeakGmacs());
  st.counters["GMACps_median"] = Median(gmacs);
  st.SetLabel(std::to_string(omp_get_max_threads()) + " threads " + ActiveKernelIsa());
}
BENCHMARK(BM_FmaPeak)->UseRealTime()->Iterations(3);

}  // namespace
}  // namespace specsweep

BENCHMARK_MAIN();
