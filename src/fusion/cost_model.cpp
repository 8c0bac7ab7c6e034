#include "fusion/cost_model.h"

#include <algorithm>

namespace gf::fusion {

CostModel CostModel::h200() {
  return CostModel{"h200", 4300.0, 60000.0, 790000.0, 1.0, 64, 32, 0.25};
}

CostModel CostModel::cpu() { return CostModel{"cpu", 20.0, 50.0, 50.0, 2.0, 64, 32, 0.25}; }

double CostModel::time_us(double bytes, double flops, double matrix_flops) const {
  // Roofline: the slower of moving the bytes and doing the arithmetic (1 GB/s = 1e3 B/us).
  return std::max(bytes / (bandwidth_gb_per_s * 1e3),
                  flops / (gflops * 1e3) + matrix_flops / (matrix_gflops * 1e3));
}

}  // namespace gf::fusion
