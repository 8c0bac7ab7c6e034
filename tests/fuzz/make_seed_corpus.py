#!/usr/bin/env python3
"""Writes the fuzzers' seed corpora under tests/fuzz/corpus/<target>/ (checked in; rerun after
changing a seed). Seeds are tiny valid inputs that reach deep into each parser: models built
with onnx.helper, arrays saved by numpy, and typical command-line bindings.

usage: make_seed_corpus.py   (with the venv's Python: numpy and onnx)
"""
import io
import os

import numpy as np
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
F, I64 = TensorProto.FLOAT, TensorProto.INT64


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def model(nodes, inputs, outputs, inits=(), opset=17, ir=8):
    g = helper.make_graph(nodes, "seed", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=ir)
    return m.SerializeToString()


def vi(name, dims, t=F):
    return helper.make_tensor_value_info(name, t, dims)


def onnx_seeds():
    w = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w")
    yield "add_relu.onnx", model(
        [helper.make_node("Add", ["x", "y"], ["s"]), helper.make_node("Relu", ["s"], ["z"])],
        [vi("x", ["n", 3]), vi("y", [1, 3])], [vi("z", ["n", 3])])
    yield "matmul_init.onnx", model(
        [helper.make_node("MatMul", ["x", "w"], ["z"])], [vi("x", [4, 2])], [vi("z", [4, 3])], [w])
    # A shape subgraph: Shape -> Gather -> Concat -> Reshape, folded while importing.
    idx = numpy_helper.from_array(np.array(0, dtype=np.int64), "idx")
    minus1 = numpy_helper.from_array(np.array([-1], dtype=np.int64), "minus1")
    yield "shape_subgraph.onnx", model(
        [helper.make_node("Shape", ["x"], ["sh"]),
         helper.make_node("Gather", ["sh", "idx"], ["n"], axis=0),
         helper.make_node("Unsqueeze", ["n", "zero"], ["n1"]),
         helper.make_node("Concat", ["n1", "minus1"], ["target"], axis=0),
         helper.make_node("Reshape", ["x", "target"], ["z"])],
        [vi("x", [2, 3, 4])], [vi("z", [2, 12])],
        [idx, minus1, numpy_helper.from_array(np.array([0], dtype=np.int64), "zero")])
    # Constant nodes of several kinds, and a Cast (its dtype code is mapped).
    yield "constants_cast.onnx", model(
        [helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.ones((2, 2), np.float32))),
         helper.make_node("Constant", [], ["k"], value_ints=[1, 2]),
         helper.make_node("Cast", ["x"], ["xc"], to=TensorProto.FLOAT),
         helper.make_node("Mul", ["xc", "c"], ["z"])],
        [vi("x", [2, 2], I64)], [vi("z", [2, 2])])
    # An old opset: Squeeze's axes is an attribute there (the legacy conversion path).
    yield "squeeze_opset11.onnx", model(
        [helper.make_node("Squeeze", ["x"], ["z"], axes=[0])], [vi("x", [1, 3])], [vi("z", [3])],
        opset=11, ir=6)
    yield "softmax_reduce.onnx", model(
        [helper.make_node("Softmax", ["x"], ["s"], axis=-1),
         helper.make_node("ReduceSum", ["s", "ax"], ["z"], keepdims=0)],
        [vi("x", [2, 5])], [vi("z", [2])],
        [numpy_helper.from_array(np.array([1], dtype=np.int64), "ax")])
    yield "conv.onnx", model(
        [helper.make_node("Conv", ["x", "k"], ["z"], pads=[1, 1, 1, 1])],
        [vi("x", [1, 1, 3, 3])], [vi("z", [1, 1, 3, 3])],
        [numpy_helper.from_array(np.ones((1, 1, 3, 3), np.float32), "k")])


def npy_bytes(a, version=None):
    f = io.BytesIO()
    if version is None:
        np.save(f, a)
    else:
        np.lib.format.write_array(f, a, version=version)
    return f.getvalue()


def npy_seeds():
    yield "f32_2x3.npy", npy_bytes(np.arange(6, dtype=np.float32).reshape(2, 3))
    yield "i64_scalar.npy", npy_bytes(np.array(7, dtype=np.int64))
    yield "bool_4.npy", npy_bytes(np.array([True, False, True, True]))
    yield "f16_empty.npy", npy_bytes(np.zeros((0, 3), dtype=np.float16))
    yield "u1_v2.npy", npy_bytes(np.arange(5, dtype=np.uint8), version=(2, 0))
    yield "f8_fortran.npy", npy_bytes(np.asfortranarray(np.ones((2, 2))))
    yield "i4_big_endian.npy", npy_bytes(np.arange(3, dtype=">i4"))


def cli_seeds():
    for i, s in enumerate(["x=1x128", "input_ids=1x7", "x=", "x=0x5x2", "a=b.npy",
                           "past.key=2x12x0x64", "x=999999999999999x1"]):
        yield f"arg{i}.txt", s.encode()


def main():
    for name, data in onnx_seeds():
        write("fuzz_onnx_import", name, data)
    for name, data in npy_seeds():
        write("fuzz_npy", name, data)
    for name, data in cli_seeds():
        write("fuzz_cli_parsers", name, data)


if __name__ == "__main__":
    main()
