// The float tanh and erf that generated CPU kernels call (src/codegen/cpu/cpu_math.cpp),
// compiled by the JIT exactly as kernels get them, against libm in double rounded to float
// (the correctly rounded result but for double rounding, which is far rarer than 1 ulp here):
// a dense sweep over every float bit pattern with a stride, and the special values.
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "codegen/cpu/cpu_math.h"
#include "codegen/cpu/jit_compiler.h"
#include "test_util.h"

namespace gf {
namespace {

namespace fs = std::filesystem;

// Distance in representable floats (0 for two NaNs; huge for NaN against a number).
int64_t ulp_distance(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : int64_t{1} << 40;
  auto ordered = [](float f) {
    int32_t i;
    std::memcpy(&i, &f, sizeof i);
    return i < 0 ? int64_t{INT32_MIN} - i : int64_t{i};
  };
  return std::llabs(ordered(a) - ordered(b));
}

class CpuMath : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("gf_test_cpu_math_" + std::to_string(getpid()));
    codegen::JitOptions o;
    o.cache_dir = dir_;
    codegen::JitCompiler jit(o);
    // buffers: x, y, n, which function (0 tanh, 1 erf); the loop is the shape of a kernel's.
    lib_ = jit.compile("#include <cmath>\n#include <cstdint>\n#include <cstring>\nnamespace {\n" +
                       codegen::cpu_math_prelude() +
                       "}\nextern \"C\" void eval(void* const* b) {\n"
                       "  const float* x = static_cast<const float*>(b[0]);\n"
                       "  float* y = static_cast<float*>(b[1]);\n"
                       "  const int64_t n = *static_cast<const int64_t*>(b[2]);\n"
                       "  if (*static_cast<const int*>(b[3]) == 0) { for (int64_t i = 0; i < n; "
                       "++i) y[i] = gf_tanhf(x[i]); }\n"
                       "  else { for (int64_t i = 0; i < n; ++i) y[i] = gf_erff(x[i]); }\n"
                       "}\n");
  }
  static void TearDownTestSuite() {
    lib_.reset();
    fs::remove_all(dir_);
  }

  static std::vector<float> eval(int fn, std::vector<float> x) {
    std::vector<float> y(x.size());
    int64_t n = static_cast<int64_t>(x.size());
    void* buffers[] = {x.data(), y.data(), &n, &fn};
    lib_->kernel("eval")(buffers);
    return y;
  }

  // Every `stride`-th float bit pattern (both signs, subnormals, inf, NaN): at most 1 ulp off.
  static void sweep(int fn, double (*exact)(double), uint64_t stride) {
    constexpr size_t kChunk = 1 << 16;
    std::vector<float> x;
    int64_t worst = 0;
    float worst_x = 0;
    uint64_t checked = 0;
    for (uint64_t bits = 0; bits < (uint64_t{1} << 32);) {
      x.clear();
      for (; x.size() < kChunk && bits < (uint64_t{1} << 32); bits += stride) {
        const auto u = static_cast<uint32_t>(bits);
        float f;
        std::memcpy(&f, &u, sizeof f);
        x.push_back(f);
      }
      const std::vector<float> y = eval(fn, x);
      for (size_t i = 0; i < x.size(); ++i) {
        const int64_t d = ulp_distance(y[i], static_cast<float>(exact(static_cast<double>(x[i]))));
        if (d > worst) {
          worst = d;
          worst_x = x[i];
        }
      }
      checked += x.size();
    }
    EXPECT_GT(checked, uint64_t{10'000'000});
    EXPECT_LE(worst, 1) << "at x = " << std::hexfloat << worst_x;
  }

  static inline fs::path dir_;
  static inline codegen::JitLibraryPtr lib_;
};

double exact_tanh(double x) {
  return std::tanh(x);
}
double exact_erf(double x) {
  return std::erf(x);
}

TEST_F(CpuMath, TanhWithinOneUlpOverTheFloatRange) {
  sweep(0, exact_tanh, 257);
}

TEST_F(CpuMath, ErfWithinOneUlpOverTheFloatRange) {
  sweep(1, exact_erf, 257);
}

TEST_F(CpuMath, SpecialValuesAndSigns) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {0.0f, -0.0f,  inf,     -inf,    nan,  1e-40f, -1e-40f,
                                9.5f, -20.0f, 0.0624f, 0.0626f, 1.0f, 3.99f,  4.5f};
  for (int fn : {0, 1}) {
    const std::vector<float> y = eval(fn, x);
    for (size_t i = 0; i < x.size(); ++i) {
      const double want =
          fn == 0 ? std::tanh(static_cast<double>(x[i])) : std::erf(static_cast<double>(x[i]));
      EXPECT_LE(ulp_distance(y[i], static_cast<float>(want)), 1) << "fn " << fn << " x " << x[i];
      if (x[i] == 0.0f) {  // tanh(-0) = erf(-0) = -0
        EXPECT_EQ(std::signbit(y[i]), std::signbit(x[i])) << "fn " << fn;
      }
    }
    EXPECT_TRUE(std::isnan(y[4]));
    EXPECT_EQ(y[2], 1.0f);
    EXPECT_EQ(y[3], -1.0f);
  }
}

TEST(CpuKernelTarget, RoutesTanhAndErfOfFloatsOnly) {
  const codegen::Target t = codegen::cpu_kernel_target();
  EXPECT_EQ(codegen::math_fn(t, "tanh", DType::kF32), "gf_tanhf");
  EXPECT_EQ(codegen::math_fn(t, "erf", DType::kF32), "gf_erff");
  EXPECT_EQ(codegen::math_fn(t, "tanh", DType::kF64), "std::tanh");  // double keeps libm's
  EXPECT_EQ(codegen::math_fn(t, "exp", DType::kF32), "std::exp");
}

}  // namespace
}  // namespace gf
