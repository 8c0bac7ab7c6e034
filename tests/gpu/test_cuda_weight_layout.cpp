// Constant product weights stored [n, k] on the device (runtime/cuda/weight_layout.h), on the
// GPU (label gpu), against the reference interpreter: MatMul and transB = 0 Gemm products run
// through cuBLASLt and through the skinny GEMM kernel on the transposed copy, in f32 and f16; a
// weight read by two products is one device copy, shared by the programs of other shapes; a
// weight also read by another op keeps its layout. Skips without a GPU.
#ifdef GF_HAVE_CUDA

#include <cstring>
#include <random>

#include "cuda_backend_util.h"
#include "gpu_test_util.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_module.h"
#include "runtime/cuda/cuda_program.h"
#include "runtime/cuda/device_memory.h"
#include "runtime/cuda/session_device_memory.h"
#include "runtime/cuda/weight_layout.h"
#include "runtime/cuda/weight_upload.h"
#include "runtime/session_programs.h"

namespace gf {
namespace {

class CudaWeightLayout : public testing::CudaDeviceTest {};

Tensor uniform(std::mt19937& rng, std::vector<int64_t> dims, float scale) {
  Tensor t(DType::kF32, std::move(dims));
  std::uniform_real_distribution<float> d(-scale, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

// x [b, s, 96] -> MatMul W1 [96, 80] + bias -> Gelu -> rows -> Gemm W2 [80, 72] (transB 0).
Graph two_layers() {
  std::mt19937 rng(5);
  GraphBuilder b("two_layers");
  const ValueId x =
      b.input("x", DType::kF32, Shape{Dim(std::string("b")), Dim(std::string("s")), 96});
  const ValueId h = b.gelu(b.add(b.matmul(x, b.constant("w1", uniform(rng, {96, 80}, 0.1f))),
                                 b.constant("b1", uniform(rng, {80}, 0.5f))),
                           true);
  const ValueId rows = b.reshape(h, {-1, 80});
  b.output(b.op1(Op::kGemm, {rows, b.constant("w2", uniform(rng, {80, 72}, 0.1f))}), "y");
  return b.build();
}

TEST_F(CudaWeightLayout, ProductsOnTransposedWeightsMatchTheReference) {
  const Graph g = two_layers();
  const Session reference(g, SessionOptions{});
  std::mt19937 rng(6);
  for (Precision p : {Precision::kFp32, Precision::kFp16}) {
    for (SkinnyGemm choice : {SkinnyGemm::kOff, SkinnyGemm::kAlways, SkinnyGemm::kAuto}) {
      SCOPED_TRACE(std::string(precision_name(p)) + ", skinny GEMM " +
                   std::string(skinny_gemm_name(choice)));
      SessionOptions o{Device::kCuda};
      o.precision = p;
      o.skinny_gemm = choice;
      const Session s(g, o);
      // 1, 4 and 6 rows: skinny (or not) by the choice; 64 rows: cuBLASLt whatever it is.
      for (std::vector<int64_t> dims :
           {std::vector<int64_t>{1, 1, 96}, {2, 2, 96}, {2, 3, 96}, {4, 16, 96}}) {
        const Tensor x = uniform(rng, dims, 1.0f);
        testing::expect_matches(s.run({x})[0], reference.run({x})[0],
                                p == Precision::kFp32 ? 4 : 50);
      }
      const SessionStats st = s.stats();
      EXPECT_EQ(st.reference_steps, 0);
      if (choice == SkinnyGemm::kOff) {
        EXPECT_EQ(st.skinny_gemm_steps, 0);
      }
      if (choice == SkinnyGemm::kAlways) {
        EXPECT_EQ(st.library_calls, 2);  // 64 rows, the last shape
      }
    }
  }
}

TEST_F(CudaWeightLayout, AWeightReadByTwoProductsIsOneDeviceCopyForEveryProgram) {
  std::mt19937 rng(7);
  const Tensor w = uniform(rng, {64, 48}, 0.1f);
  GraphBuilder b("shared");
  const ValueId x = b.input("x", DType::kF32, Shape{Dim(std::string("n")), 64});
  const ValueId wv = b.constant("w", w);
  b.output(b.matmul(x, wv), "y");
  b.output(b.matmul(b.unary(Op::kRelu, x), wv), "z");
  const Graph g = b.build();
  auto memory = std::make_shared<cuda::SessionDeviceMemory>();
  cuda::CudaProgramOptions o;
  o.device_memory = memory;
  std::vector<std::unique_ptr<cuda::CudaProgram>> programs;
  for (int64_t n : {1, 3, 40}) {
    const Tensor in = uniform(rng, {n, 64}, 1.0f);
    Graph s = specialise(g, {in}, SessionOptions{Device::kCuda});
    for (size_t i = 0; i < s.num_nodes(); ++i) {
      const Node& node = s.node(static_cast<NodeId>(i));
      if (node.op == Op::kMatMul) {
        EXPECT_TRUE(cuda::stores_transposed(s, node.inputs[1]));
      }
    }
    programs.push_back(std::make_unique<cuda::CudaProgram>(std::move(s), o));
    const std::vector<Tensor> got = programs.back()->run(std::vector<Tensor>{in});
    const std::vector<Tensor> want = ref::run_graph(g, std::vector<Tensor>{in});
    testing::expect_matches(got[0], want[0]);
    testing::expect_matches(got[1], want[1]);
    EXPECT_EQ(memory->weight_bytes(), w.nbytes()) << n << " rows";
  }
}

TEST_F(CudaWeightLayout, AWeightAlsoReadByAnotherOpKeepsItsLayout) {
  std::mt19937 rng(8);
  GraphBuilder b("mixed");
  const ValueId x = b.input("x", DType::kF32, Shape{Dim(std::string("n")), 32});
  const ValueId u = b.input("u", DType::kF32, Shape{32, 48});
  const ValueId w = b.constant("w", uniform(rng, {32, 48}, 0.2f));
  b.output(b.matmul(x, w), "y");  // W as B ...
  b.output(b.add(w, u), "z");     // ... and W read as it is by a generated kernel
  const Graph g = b.build();
  ASSERT_FALSE(cuda::stores_transposed(g, w));
  for (SkinnyGemm choice : {SkinnyGemm::kOff, SkinnyGemm::kAlways}) {
    SCOPED_TRACE(std::string(skinny_gemm_name(choice)));
    SessionOptions o{Device::kCuda};
    o.skinny_gemm = choice;
    const Session s(g, o);
    for (int64_t n : {2, 32}) {
      const std::vector<Tensor> in{uniform(rng, {n, 32}, 1.0f), uniform(rng, {32, 48}, 1.0f)};
      const std::vector<Tensor> got = s.run(in), want = ref::run_graph(g, in);
      testing::expect_matches(got[0], want[0]);
      testing::expect_matches(got[1], want[1]);
    }
  }
}

// Weights uploaded in one go (weight_upload.h): as they are and transposed (on the device), f32,
// f16 and bf16 of random bits (NaN payloads included), shapes off any tile, a large upload
// (through pinned chunks, several weights larger than a chunk) and a small one (the driver's own
// copies). Each device copy read back equals the host bytes, or their transpose by index, bit for
// bit.
TEST_F(CudaWeightLayout, UploadsCopyAndTransposeEveryWeightExactly) {
  cuda::CudaContext::get().make_current();
  struct Item {
    DType dtype;
    int64_t k, n;
    bool transposed;
  };
  const std::vector<std::vector<Item>> uploads = {
      {{DType::kF16, 768, 3072, true},
       {DType::kF32, 1000, 3, true},
       {DType::kBF16, 3072, 2305, true},
       {DType::kF32, 4099, 1031, false},
       {DType::kF16, 1, 1, true},
       {DType::kBF16, 37, 4099, false},
       {DType::kF32, 2048, 2049, true},
       {DType::kF16, 5, 7, false}},
      {{DType::kF32, 33, 65, true}, {DType::kF16, 100, 3, true}, {DType::kBF16, 9, 11, false}},
  };
  std::mt19937 rng(11);
  for (size_t u = 0; u < uploads.size(); ++u) {
    std::vector<Tensor> host;
    size_t total = 0;
    for (const Item& it : uploads[u]) {
      Tensor t(it.dtype, {it.k, it.n});
      auto* bytes = static_cast<unsigned char*>(t.raw());
      for (size_t i = 0; i < t.nbytes(); ++i) bytes[i] = static_cast<unsigned char>(rng());
      total += t.nbytes();
      host.push_back(std::move(t));
    }
    std::vector<cuda::DeviceBuffer> device;
    cuda::WeightUpload upload(total, nullptr);
    for (size_t i = 0; i < host.size(); ++i) {
      device.emplace_back(host[i].nbytes(), "test weight");
      upload.copy(device.back().ptr(), host[i], uploads[u][i].transposed,
                  "weight " + std::to_string(i));
    }
    upload.finish();
    std::printf("upload %zu: %.1f MB, %s, %d of %zu weights transposed on the device\n", u,
                static_cast<double>(total) / 1e6, upload.staged() ? "staged" : "pageable copies",
                upload.device_transposes(), host.size());
    EXPECT_EQ(upload.staged(), total >= (size_t{32} << 20));
    int transposed = 0;
    for (const Item& it : uploads[u]) transposed += it.transposed;
    EXPECT_EQ(upload.device_transposes(), transposed);
    for (size_t i = 0; i < host.size(); ++i) {
      const Item& it = uploads[u][i];
      SCOPED_TRACE("upload " + std::to_string(u) + " weight " + std::to_string(i));
      std::vector<unsigned char> got(host[i].nbytes());
      GF_CU(cuda_driver().cuMemcpyDtoH(got.data(), device[i].ptr(), got.size()));
      const size_t es = dtype_size(it.dtype);
      const auto* want = static_cast<const unsigned char*>(host[i].raw());
      size_t mismatches = 0;
      for (int64_t r = 0; r < it.k; ++r)
        for (int64_t c = 0; c < it.n; ++c) {
          // W [k, n] as it is, or W^T [n, k]: element (r, c) of W sits at c * k + r.
          const size_t at = static_cast<size_t>(it.transposed ? c * it.k + r : r * it.n + c);
          mismatches += std::memcmp(got.data() + at * es,
                                    want + static_cast<size_t>(r * it.n + c) * es, es) != 0;
        }
      EXPECT_EQ(mismatches, 0u);
    }
  }
}

}  // namespace
}  // namespace gf

#endif  // GF_HAVE_CUDA
