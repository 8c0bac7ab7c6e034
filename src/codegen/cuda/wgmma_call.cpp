#include "codegen/cuda/wgmma_call.h"

#include <sstream>

namespace gf::codegen {

namespace {

const char* type_name(DType dtype) {
  return dtype == DType::kBF16 ? "bf16" : "f16";
}

// "{%first, ..., %(first + count - 1)}"
std::string operand_list(int first, int count) {
  std::ostringstream s;
  s << "{";
  for (int i = 0; i < count; ++i) s << (i ? ", " : "") << "%" << first + i;
  s << "}";
  return s.str();
}

std::string accumulator_constraints(int regs) {
  std::ostringstream s;
  for (int i = 0; i < regs; ++i) s << (i ? ", " : "") << "\"+f\"(d[" << i << "])";
  return s.str();
}

}  // namespace

std::string wgmma_shared_operands_function(const std::string& name, DType dtype, int n) {
  const int regs = n / 2;
  const char* type = type_name(dtype);
  std::ostringstream f;
  f << "static __device__ __forceinline__ void " << name
    << "(float* d, uint64_t a, uint64_t b, int "
       "accumulate) {\n"
    << "  asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %" << regs + 2 << ", 0;\\n\"\n"
    << "      \"wgmma.mma_async.sync.aligned.m64n" << n << "k16.f32." << type << "." << type << " "
    << operand_list(0, regs) << ", %" << regs << ", %" << regs + 1
    << ", p, 1, 1, 0, 0;\\n}\\n\"\n      : " << accumulator_constraints(regs)
    << "\n      : \"l\"(a), \"l\"(b), \"r\"(accumulate));\n}\n";
  return f.str();
}

std::string wgmma_register_a_function(const std::string& name, DType dtype, int n,
                                      bool b_mn_major) {
  const int regs = n / 2;
  const char* type = type_name(dtype);
  std::ostringstream f;
  f << "static __device__ __forceinline__ void " << name
    << "(float* d, const uint32_t* a, uint64_t b) {\n"
    << "  asm volatile(\"wgmma.mma_async.sync.aligned.m64n" << n << "k16.f32." << type << "."
    << type << " " << operand_list(0, regs) << ", " << operand_list(regs, 4) << ", %" << regs + 4
    << ", 1, 1, 1, " << (b_mn_major ? 1 : 0) << ";\"\n      : " << accumulator_constraints(regs)
    << "\n      : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"l\"(b));\n}\n";
  return f.str();
}

}  // namespace gf::codegen
