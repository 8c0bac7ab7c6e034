// The cost model the fusion planner decides by: bytes moved, flops and launches, turned into
// time on a target. Every number is a named constant so a decision can be printed and argued.
#pragma once

#include <cstdint>
#include <string>

namespace gf::fusion {

struct CostModel {
  std::string target;
  double bandwidth_gb_per_s;   // sustained device-memory copy rate (bytes read + written)
  double gflops;               // sustained vector arithmetic rate (f32)
  double matrix_gflops;        // sustained matrix-unit rate (GEMM, convolution, attention)
  double launch_us;            // fixed cost per kernel
  int max_ops_per_kernel;      // size budget: more ops per kernel bloats registers/code
  int max_buffers_per_kernel;  // distinct inputs + outputs of one kernel
  double max_recompute_ratio;  // a duplicated producer may add at most this fraction of flops

  // H200: 4.3 TB/s measured copy, ~60 TFLOP/s plain f32 arithmetic, ~790 TFLOP/s bf16 on the
  // tensor cores (measured on random data), 1 us per launch inside a CUDA graph (3.5 us eager).
  static CostModel h200();
  // A 2-core x86 machine: ~20 GB/s, ~50 GFLOP/s of vectorised f32, ~2 us per parallel region.
  static CostModel cpu();

  double time_us(double bytes, double flops, double matrix_flops = 0) const;
};

// Symbolic dims are costed as this many elements until shapes are bound.
inline constexpr int64_t kAssumedSymbolicDim = 128;

}  // namespace gf::fusion
