// Shape inference for the linear op family.
#include "ir/infer.h"

namespace gf {

void register_linear_infer(InferTable& table) { (void)table; }

}  // namespace gf
