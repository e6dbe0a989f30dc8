// MatMul dispatch: picks the kernel family once (cpuid), quantizes activations for the
// integer kernels, and splits output rows over OpenMP threads in fixed chunks, balanced by
// work stealing (quant/chunk_queue.h).
#include "quant/matmul.h"

#include <omp.h>

#include <cpuid.h>
#include <algorithm>
#include <functional>
#include <cstdlib>
#include <string_view>

#include "base/error.h"
#include "quant/chunk_queue.h"
#include "quant/kernel_choice.h"
#include "quant/kernels.h"
#include "quant/kquants.h"
#include "quant/packed.h"

namespace specsweep {
namespace {

// Output rows per OpenMP work item. Each item computes whole dot products, so the
// result never depends on how items are spread over threads.
constexpr int kRowChunk = 16;
static_assert(kRowChunk % packed::kGroupRows == 0, "packed kernels take whole row groups");
// Below this many weight bytes a fork/join costs more than the product (dim 64..128
// real models); the decision depends only on the matrix, never on n.
constexpr size_t kParallelBytes = 64 * 1024;

// F16C through cpuid (leaf 1, ecx bit 29): clang 14's __builtin_cpu_supports does not
// know "f16c" (the fuzz and sanitizer builds use clang).
bool CpuHasF16c() {
  unsigned a, b, c, d;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}

// AVX-VNNI through cpuid (leaf 7 subleaf 1, eax bit 4): clang 14 does not know
// "avxvnni" either.
bool CpuHasAvxVnni() {
  unsigned a, b, c, d;
  return __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 4));
}

bool CpuHas(const char* isa) {
  std::string_view s(isa);
  __builtin_cpu_init();
  if (s == "scalar") return true;
  if (s == "avx2") return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && CpuHasF16c();
  if (s == "avx2vnni") return CpuHas("avx2") && CpuHasAvxVnni();
  if (s == "avx512")
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512vnni") && CpuHasF16c() && __builtin_cpu_supports("fma");
  return false;
}

// The kernels loaders pack for (SetLoadLayoutKernels): a layout, never what runs.
KernelChoice& LoadLayout() {
  static KernelChoice layout = DefaultKernels();
  return layout;
}

}  // namespace

void QuantActs::Reserve(int n_rows, int cols_needed) {
  const size_t elems = static_cast<size_t>(n_rows) * cols_needed;
  if (q.size() < elems) {
    q = AlignedBuffer(elems);
    d = AlignedBuffer(elems / 32 * sizeof(float));
    corr = AlignedBuffer(elems / 4 * sizeof(int32_t));
    bsum = AlignedBuffer(elems / 32 * sizeof(int32_t));
    boff = AlignedBuffer(elems / 16 * sizeof(int32_t));
    xsum = AlignedBuffer(elems / 4 * sizeof(float));
    offsets = AlignedBuffer(elems / 2 * sizeof(int32_t));
  }
  n = n_rows;
  cols = cols_needed;
}

void QuantActs::ReserveK(int n_rows, int cols_needed) {
  const size_t elems = static_cast<size_t>(n_rows) * cols_needed;
  if (kq.size() < elems) {
    kq = AlignedBuffer(elems);
    kd = AlignedBuffer(elems / 256 * sizeof(float));
    kbsum = AlignedBuffer(elems / 16 * sizeof(int16_t));
  }
  n = n_rows;
  cols_k = cols_needed;
}

void QuantizeActsRow(const KernelFamily& k, const float* x, int cols, int i, QuantActs& a) {
  auto* q = const_cast<int8_t*>(a.Q(i));
  k.quantize_acts(x, cols, a.cols, q, const_cast<float*>(a.D(i)), const_cast<int32_t*>(a.Corr(i)));
  auto* bsum = const_cast<int32_t*>(a.BSum(i));  // the packed kernels' offset correction
  auto *boff8 = const_cast<int32_t*>(a.BOff(i, 8)), *boff128 = const_cast<int32_t*>(a.BOff(i, 128));
  for (int b = 0; b < a.cols / 32; ++b) {
    int32_t s = 0;
    for (int j = 0; j < 32; ++j) s += q[32 * b + j];
    bsum[b] = s;
    boff8[b] = -8 * s, boff128[b] = -128 * s;  // broadcast from memory: no per-block ALU step
  }
  const int32_t* corr = a.Corr(i);  // -8 x each 4 values' sum
  auto* xsum = const_cast<float*>(a.XSum(i));
  auto *off16 = const_cast<int32_t*>(a.Offsets(i, 1)), *off128 = const_cast<int32_t*>(a.Offsets(i, 4));
  for (int k = 0; k < a.cols / 4; ++k) {
    xsum[k] = static_cast<float>(-(corr[k] >> 3));
    off16[k] = corr[k] << 1, off128[k] = corr[k] << 4;
  }
}

const KernelFamily* FindKernelFamily(const char* isa) {
  if (!CpuHas(isa)) return nullptr;
  std::string_view s(isa);
  if (s == "scalar") return &ScalarKernels();
  if (s == "avx2") return &Avx2Kernels();
  if (s == "avx2vnni") return &Avx2VnniKernels();
  if (s == "avx512") return &Avx512Kernels();
  return nullptr;
}

void MatMul(const Runtime& rt, const QMatrix& W, const float* X, int n, float* Y) {
  const MatMulTarget t[] = {{&W, Y}};
  MatMuls(rt, t, X, n);
}

namespace {

constexpr int kMaxTargets = 8;

// The row chunks of every target, numbered consecutively (target j owns
// [first[j], first[j+1])), and the kernel of each.
struct Plan {
  int first[kMaxTargets + 1] = {0};
  RowsKernelFn fn[kMaxTargets] = {};
  bool quantized = false;  // some target takes 32-wide int8 activations
  bool kquant = false;     // some target takes Q8_K activations
  size_t bytes = 0;

  Plan(std::span<const MatMulTarget> targets, const KernelChoice& k) {
    for (size_t j = 0; j < targets.size(); ++j) {
      const QMatrix& W = *targets[j].W;
      fn[j] = KernelFor(*k.per_type[static_cast<int>(W.type)], W);
      first[j + 1] = first[j] + (W.rows + kRowChunk - 1) / kRowChunk;
      quantized |= IsQuantized(W.type) && !IsKQuant(W.type);
      kquant |= IsKQuant(W.type);
      bytes += W.bytes();
    }
  }
};

void Validate(std::span<const MatMulTarget> targets) {
  if (targets.size() > kMaxTargets) Fail("matmul: {} matrices in one call (at most {})", targets.size(), kMaxTargets);
  for (const MatMulTarget& t : targets)
    if (t.W->cols != targets[0].W->cols)
      Fail("matmul: matrices of one call share their input: {} vs {} columns", t.W->cols, targets[0].W->cols);
}

}  // namespace

int MatMulChunks(const KernelChoice& kernels, std::span<const MatMulTarget> targets) {
  Validate(targets);
  return Plan(targets, kernels).first[targets.size()];
}

namespace {

// Zipped (epilogue given): chunk c is rows [16c, 16c + 16) of every target, then
// epilogue(r0, r1) on this thread.
void RunTargets(const KernelChoice& choice, std::span<const MatMulTarget> targets, const float* X, int n,
                ChunkQueue& queue, int thread, const std::function<void(int, int)>* epilogue = nullptr) {
  const KernelFamily& k = *choice.base;
  const Plan plan(targets, choice);
  const int cols = targets[0].W->cols;
  // Per thread, reused across calls: [n][ActsCols] quantized activations, the same for
  // every target (ActsCols rounds the shared column count up to 128). Each thread of a
  // team quantizes for itself: the same time as one thread doing it before a fork, and
  // no barrier.
  static thread_local QuantActs acts;
  const QuantActs* A = nullptr;
  if (plan.quantized) {
    acts.Reserve(n, ActsCols(*targets[0].W));
    for (int i = 0; i < n; ++i) QuantizeActsRow(k, X + static_cast<size_t>(i) * cols, cols, i, acts);
    A = &acts;
  }
  if (plan.kquant) {  // scalar for every family: cheap next to the weights, one definition
    const int cols_k = (cols + 255) / 256 * 256;
    acts.ReserveK(n, cols_k);
    for (int i = 0; i < n; ++i)
      QuantizeActsK(X + static_cast<size_t>(i) * cols, cols, cols_k, const_cast<int8_t*>(acts.KQ(i)),
                    const_cast<float*>(acts.KD(i)), const_cast<int16_t*>(acts.KBSum(i)));
    A = &acts;
  }
  if (epilogue) {
    const int rows = targets[0].W->rows;
    for (int ch; (ch = queue.Next(thread)) >= 0;) {
      const int r0 = ch * kRowChunk, r1 = std::min(rows, r0 + kRowChunk);
      for (size_t j = 0; j < targets.size(); ++j) plan.fn[j](*targets[j].W, r0, r1, X, A, n, targets[j].Y);
      (*epilogue)(r0, r1);
    }
    return;
  }
  for (int ch; (ch = queue.Next(thread)) >= 0;) {
    size_t j = 0;
    while (ch >= plan.first[j + 1]) ++j;
    const QMatrix& W = *targets[j].W;
    const int r0 = (ch - plan.first[j]) * kRowChunk;
    plan.fn[j](W, r0, std::min(W.rows, r0 + kRowChunk), X, A, n, targets[j].Y);
  }
}

}  // namespace

void MatMulsTeam(const KernelChoice& kernels, std::span<const MatMulTarget> targets, const float* X, int n,
                 ChunkQueue& queue, int thread) {
  RunTargets(kernels, targets, X, n, queue, thread);
}

int MatMulZippedChunks(std::span<const MatMulTarget> targets) {
  Validate(targets);
  for (const MatMulTarget& t : targets)
    if (t.W->rows != targets[0].W->rows)
      Fail("matmul: zipped matrices have equal rows: {} vs {}", t.W->rows, targets[0].W->rows);
  return (targets[0].W->rows + kRowChunk - 1) / kRowChunk;
}

void MatMulsZippedTeam(const KernelChoice& kernels, std::span<const MatMulTarget> targets, const float* X, int n,
                       ChunkQueue& queue, int thread, const std::function<void(int, int)>& epilogue) {
  RunTargets(kernels, targets, X, n, queue, thread, &epilogue);
}

void MatMulWith(const KernelFamily& k, const QMatrix& W, const float* X, int n, float* Y, int threads) {
  const MatMulTarget t[] = {{&W, Y}};
  const KernelChoice choice = UniformChoice(k, "forced");
  ChunkQueue queue(Plan(t, choice).first[1], threads);
  if (threads <= 1) return RunTargets(choice, t, X, n, queue, 0);
#pragma omp parallel num_threads(threads)
  RunTargets(choice, t, X, n, queue, omp_get_thread_num());
}

RowsKernelFn KernelFor(const KernelFamily& k, const QMatrix& W) {
  const int t = static_cast<int>(W.type);
  if (W.layout == Layout::kRows) return k.rows[t];
  // A packed matrix under a family without packed kernels (forced after packing) runs
  // on the scalar reference: slow, never wrong.
  return k.packed[t] ? k.packed[t] : ScalarKernels().packed[t];
}

bool WorthSplitting(size_t weight_bytes) { return weight_bytes >= kParallelBytes; }

void MatMuls(const Runtime& rt, std::span<const MatMulTarget> targets, const float* X, int n) {
  if (n <= 0 || targets.empty()) return;
  Validate(targets);
  const Plan plan(targets, rt.kernels);
  const int chunks = plan.first[targets.size()];
  const int threads = WorthSplitting(plan.bytes) ? std::min(rt.threads, chunks) : 1;
  ChunkQueue queue(chunks, threads);
  if (threads <= 1) return MatMulsTeam(rt.kernels, targets, X, n, queue, 0);  // no OpenMP region at all
#pragma omp parallel num_threads(threads)
  MatMulsTeam(rt.kernels, targets, X, n, queue, omp_get_thread_num());
}

QMatrix PackForKernels(const KernelChoice& kernels, const QMatrix& m) {
  return PackFor(*kernels.per_type[static_cast<int>(m.type)], m);
}
QMatrix PackForKernels(const QMatrix& m) { return PackForKernels(LoadLayout(), m); }
void SetLoadLayoutKernels(const KernelChoice& kernels) { LoadLayout() = kernels; }

QMatrix PackFor(const KernelFamily& k, const QMatrix& m) {
  // Every family runs the legacy types packed (the scalar reference included).
  return m.layout == Layout::kRows && k.packed[static_cast<int>(m.type)] ? packed::Pack(m) : m;
}

std::vector<std::string> RunnableKernelIsas() {
  std::vector<std::string> out;
  for (const char* isa : {"scalar", "avx2", "avx2vnni", "avx512"})
    if (FindKernelFamily(isa)) out.push_back(isa);
  return out;
}

}  // namespace specsweep
