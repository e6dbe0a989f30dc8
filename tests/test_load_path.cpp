// The load path: weight buffers (uninitialized, viewed, shared), packing straight into
// uninitialized memory, and GGUF loading that points into the file where the kernels'
// layout is the file's (copying a streamed matrix that huge pages can hold) and shares a
// tied classifier with the embedding.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "models/forward.h"
#include "models/gguf.h"
#include "models/loader.h"
#include "models/synthetic.h"
#include "quant/blocks.h"
#include "quant/huge_pages.h"
#include "quant/matmul.h"
#include "quant/packed.h"
#include "tests/test_util.h"

namespace specsweep {
namespace {

using testing::TempDir;

const uint8_t* Bytes(const QMatrix& m) { return std::as_const(m.data).data(); }

TEST(AlignedBuffer, ViewIsSharedByCopiesAndCopiedOnWrite) {
  auto source = std::make_shared<std::vector<uint8_t>>(std::vector<uint8_t>{1, 2, 3, 4, 5});
  AlignedBuffer v = AlignedBuffer::View(source->data(), source->size(), source);
  EXPECT_TRUE(v.immutable());
  AlignedBuffer c = v;  // shares
  EXPECT_EQ(std::as_const(c).data(), source->data());
  c.data()[0] = 9;  // a private copy first
  EXPECT_FALSE(c.immutable());
  EXPECT_NE(std::as_const(c).data(), source->data());
  EXPECT_EQ((*source)[0], 1);
  EXPECT_EQ(std::as_const(c).data()[0], 9);
  EXPECT_EQ(std::as_const(c).data()[4], 5);
  EXPECT_EQ(std::as_const(v).data(), source->data());  // the view is untouched
}

TEST(AlignedBuffer, FrozenBuffersAreSharedWritableOnesCopied) {
  AlignedBuffer a(100);
  a.data()[3] = 7;
  AlignedBuffer copy = a;
  EXPECT_NE(std::as_const(copy).data(), std::as_const(a).data());
  a.Freeze();
  AlignedBuffer shared = a;
  EXPECT_EQ(std::as_const(shared).data(), std::as_const(a).data());
  EXPECT_EQ(std::as_const(shared).data()[3], 7);
}

TEST(AlignedBuffer, UninitializedLargeBufferIsAlignedAndHoldsWhatIsWritten) {
  const size_t n = (size_t{5} << 20) + 13;  // huge-page path, not a whole number of pages
  AlignedBuffer b = AlignedBuffer::Uninitialized(n);
  ASSERT_EQ(b.size(), n);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 64, 0u);
  for (size_t i = 0; i < n; ++i) b.data()[i] = static_cast<uint8_t>(i * 7);
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) bad += std::as_const(b).data()[i] != static_cast<uint8_t>(i * 7);
  EXPECT_EQ(bad, 0u);
  AlignedBuffer moved = std::move(b);
  EXPECT_EQ(moved.size(), n);
  EXPECT_EQ(std::as_const(moved).data()[n - 1], static_cast<uint8_t>((n - 1) * 7));
}

// The packed layout as packed.h defines it, built by or-ing into a zeroed buffer: Pack
// writes into uninitialized memory, so every byte it leaves out would differ.
QMatrix ReferencePack(const QMatrix& m) {
  QMatrix p = m;
  const int nb = m.cols_padded / 32;
  p.layout = Layout::kPacked16;
  p.group_bytes = (size_t(nb) * (packed::QuantBytes(m.type) + 32) + 63) / 64 * 64;
  p.data = AlignedBuffer(size_t(packed::Groups(m)) * p.group_bytes);
  for (int r = 0; r < m.rows; ++r)
    for (int b = 0; b < nb; ++b) {
      uint8_t* q = p.data.data() + packed::QuantsOffset(p, r, b);
      uint16_t d;
      if (m.type == QType::Q4_0) {
        const BlockQ4_0& blk = reinterpret_cast<const BlockQ4_0*>(m.Row(r))[b];
        d = blk.d;
        for (int j = 0; j < 32; ++j) {
          const int nib = j < 16 ? blk.qs[j] & 0x0F : blk.qs[j - 16] >> 4;
          q[packed::QuantByte(m.type, j)] |= static_cast<uint8_t>(nib << packed::NibbleShift(j));
        }
      } else {
        const BlockQ8_0& blk = reinterpret_cast<const BlockQ8_0*>(m.Row(r))[b];
        d = blk.d;
        for (int j = 0; j < 32; ++j) q[packed::QuantByte(m.type, j)] = static_cast<uint8_t>(blk.qs[j] + 128);
      }
      std::memcpy(p.data.data() + packed::ScaleOffset(p, r, b), &d, sizeof d);
    }
  return p;
}

TEST(Pack, WritesEveryByteOfTheLayout) {
  for (QType t : {QType::Q4_0, QType::Q8_0})
    for (int rows : {16, 37, 3000}) {  // whole groups, a partial last group, a parallel pack
      SCOPED_TRACE(std::string(QTypeName(t)) + " rows " + std::to_string(rows));
      std::vector<float> w(size_t(rows) * 96);
      for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>((i * 2654435761u) % 1000) / 500.0f - 1.0f;
      const QMatrix m = Quantize(w.data(), rows, 96, t);
      const QMatrix p = packed::Pack(m), ref = ReferencePack(m);
      ASSERT_EQ(p.data.size(), ref.data.size());
      EXPECT_EQ(0, std::memcmp(Bytes(p), Bytes(ref), p.data.size()));
      const QMatrix back = packed::Unpack(p);
      EXPECT_EQ(0, std::memcmp(Bytes(back), Bytes(m), m.bytes()));
    }
}

std::vector<float> Logits(const Model& m, const std::vector<int>& tokens, const Runtime& rt = testing::Serial()) {
  KVCache cache(m.config);
  auto out = Forward(rt, m, tokens, 0, cache, true);
  return std::vector<float>(out.begin(), out.end());
}

// Every kernel family the CPU has, every layout the loader makes (dim 1024 > kColChunk:
// float matrices are column-chunked where the family wants it; Q8_0/Q4_0 packed; Q4_K
// kept in rows), tied and untied: logits are bit-identical to the model written, a tied
// classifier and its embedding are one buffer, and a matrix already in the kernels'
// layout points into the file.
TEST(GgufLoadPath, LayoutsViewsAndTiedClassifierUnderEveryKernelFamily) {
  testing::KernelIsaGuard guard;
  const ModelConfig c = SyntheticShape("dim=1024,layers=1,heads=8,kv_heads=4,ffn=512,vocab=300,ctx=32");
  auto tok = MakeScoreBpeTokenizer(SyntheticVocab(c.vocab_size));
  const std::vector<int> tokens = {1, 17, 42, 299, 5};
  const std::string path = TempDir() + "/load_path.gguf";
  int families = 0;
  for (QType t : {QType::F16, QType::Q8_0, QType::Q4_0, QType::Q4_K})
    for (bool tied : {false, true}) {
      Model written = MakeSyntheticModel(c, 5, t == QType::F16 ? t : QType::F32);
      if (t != QType::F16) written = QuantizeModel(written, t);
      if (tied) {  // the embedding in the matrices' type, as a tied file holds it
        written.tok_embeddings = Convert(packed::Unpack(written.tok_embeddings), t);
        written.output = written.tok_embeddings;
        written.tied_embeddings = true;
      }
      WriteGguf(written, *tok, path);
      for (const char* isa : {"scalar", "avx2", "avx2vnni", "avx512"}) {
        Runtime rt;
        if (!testing::ForceIsa(rt, isa)) continue;
        families += t == QType::F16 && !tied;
        SCOPED_TRACE(std::string(isa) + " " + std::string(QTypeName(t)) + (tied ? " tied" : " untied"));
        Model m = written;
        PackForKernels(m);  // the layouts the loader makes
        LoadedModel lm = LoadGguf(path);
        const Model& l = *lm.model;
        EXPECT_EQ(l.tied_embeddings, tied);
        EXPECT_EQ(l.output.layout, m.output.layout);
        EXPECT_EQ(l.layers[0].w1.layout, m.layers[0].w1.layout);
        const std::vector<float> a = Logits(m, tokens, rt), b = Logits(l, tokens, rt);
        ASSERT_EQ(a.size(), b.size());
        EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
        if (tied) {
          EXPECT_EQ(Bytes(l.tok_embeddings), Bytes(l.output));
        } else
          EXPECT_NE(Bytes(l.tok_embeddings), Bytes(l.output));
        // Row layout as in the file, under 2 MiB: a view, shared by copies, never copied.
        EXPECT_EQ(l.layers[0].w1.data.immutable(), l.layers[0].w1.layout == Layout::kRows);
        if (!tied) {
          EXPECT_TRUE(l.tok_embeddings.data.immutable());
        }
        if (t == QType::Q4_K) {
          EXPECT_TRUE(l.layers[0].w2.data.immutable());
        }
        const Model copy = l;  // shares the views, which keep the file mapped
        lm = LoadedModel();
        const std::vector<float> again = Logits(copy, tokens, rt);
        EXPECT_EQ(0, std::memcmp(a.data(), again.data(), a.size() * sizeof(float)));
      }
    }
  EXPECT_GE(families, 1);
}

// A multiplied matrix in the file's layout is copied when the copy lands on huge pages
// (2 MiB or more, transparent huge pages on), else viewed; the embedding, only gathered
// from, stays a view either way. Logits are the written model's.
TEST(GgufLoadPath, StreamedMatrixOnHugePagesIsCopiedGatheredOneViewed) {
  const ModelConfig c = SyntheticShape("dim=1024,layers=1,heads=8,kv_heads=4,ffn=512,vocab=4096,ctx=32");
  auto tok = MakeScoreBpeTokenizer(SyntheticVocab(c.vocab_size));
  const Model written = QuantizeModel(MakeSyntheticModel(c, 6, QType::F32), QType::Q4_K);
  const std::string path = TempDir() + "/load_huge.gguf";
  WriteGguf(written, *tok, path);
  LoadedModel lm = LoadGguf(path);
  const Model& l = *lm.model;
  ASSERT_EQ(l.output.type, QType::Q4_K);
  ASSERT_GE(l.output.bytes(), size_t{2} << 20);  // 4096 rows x 576 bytes
  EXPECT_EQ(l.output.data.immutable(), !UninitializedOnHugePages(l.output.bytes())) << TransparentHugePageMode();
  EXPECT_TRUE(l.layers[0].w1.data.immutable());  // 512 rows: under 2 MiB, a view
  EXPECT_TRUE(l.tok_embeddings.data.immutable());
  Model m = written;
  PackForKernels(m);
  const std::vector<int> tokens = {1, 17, 4095, 5};
  const std::vector<float> a = Logits(m, tokens), b = Logits(l, tokens);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
}

}  // namespace
}  // namespace specsweep
