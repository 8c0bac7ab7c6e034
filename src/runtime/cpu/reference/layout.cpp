// Reference kernels for the layout op family.
#include "runtime/cpu/reference/kernels.h"

namespace gf::ref {

void register_layout_kernels(KernelTable& table) { (void)table; }

}  // namespace gf::ref
