// Shape inference for the reduction op family.
#include "ir/infer.h"

namespace gf {

void register_reduction_infer(InferTable& table) { (void)table; }

}  // namespace gf
