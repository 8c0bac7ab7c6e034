// Shape inference for the layout op family.
#include "ir/infer.h"

namespace gf {

void register_layout_infer(InferTable& table) { (void)table; }

}  // namespace gf
