// One ONNX backend test case: a folder with model.onnx and test_data_set_*/{input,output}_*.pb.
#pragma once

#include <string>

#include "graphfuse/device.h"

namespace gf::cli {

enum class CaseStatus { kPassed, kFailed, kUnsupported };

struct CaseResult {
  CaseStatus status = CaseStatus::kFailed;
  std::string reason;  // empty when passed
};

// Runs every data set of the case on `device` and compares with the expected outputs using
// ONNX's backend-runner tolerances: rtol 1e-3 and atol 1e-7 unless the case's data.json says
// otherwise, rtol at least 2^-6 for bf16, exact for integer and bool outputs; NaN matches NaN;
// shapes and dtypes must match exactly. Ops, dtypes or opsets outside graphfuse's supported set
// make the case unsupported; any other error fails it.
CaseResult run_conformance_case(const std::string& case_dir, Device device);

}  // namespace gf::cli
