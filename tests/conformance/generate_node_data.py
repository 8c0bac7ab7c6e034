#!/usr/bin/env python3
"""Writes the ONNX package's node test cases as backend test folders.

The onnx wheel ships pytorch-converted/pytorch-operator test data but not the `node` folder; its
cases live as Python code (onnx/backend/test/case/node). This script runs that code and writes
each case as model.onnx + test_data_set_*/{input,output}_*.pb, the layout `graphfuse
conformance` reads. Nothing is downloaded.

usage: generate_node_data.py OUTPUT_DIR   (writes OUTPUT_DIR/node/<case>/...)
"""
import os
import shutil
import sys

import numpy as np
from onnx import TensorProto, numpy_helper
from onnx.backend.test.case import node as node_cases


def write_tensor(path, value, name):
    if isinstance(value, TensorProto):
        data = value.SerializeToString()
    elif isinstance(value, (np.ndarray, np.generic)):
        data = numpy_helper.from_array(np.asarray(value), name).SerializeToString()
    else:
        return False  # sequences, maps, optionals: graphfuse has no such types
    with open(path, "wb") as f:
        f.write(data)
    return True


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = os.path.join(sys.argv[1], "node")
    os.makedirs(root, exist_ok=True)
    written = 0
    for case in node_cases.collect_testcases():
        case_dir = os.path.join(root, case.name)
        if os.path.exists(case_dir):
            shutil.rmtree(case_dir)
        os.makedirs(case_dir)
        with open(os.path.join(case_dir, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        for i, (inputs, outputs) in enumerate(case.data_sets):
            ds = os.path.join(case_dir, f"test_data_set_{i}")
            os.makedirs(ds)
            for j, value in enumerate(inputs):
                write_tensor(os.path.join(ds, f"input_{j}.pb"), value,
                             case.model.graph.input[j].name)
            for j, value in enumerate(outputs):
                write_tensor(os.path.join(ds, f"output_{j}.pb"), value,
                             case.model.graph.output[j].name)
        written += 1
    print(f"wrote {written} node cases to {root}")


if __name__ == "__main__":
    main()
