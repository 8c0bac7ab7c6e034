#!/usr/bin/env python3
"""End-to-end check of `graphfuse run` against ONNX Runtime.

Builds small models with onnx.helper (in a temp dir, nothing downloaded), runs each through
`graphfuse run --input ... --output-dir ...` and through onnxruntime, and compares every output
within 1e-4 relative (plus a tiny absolute floor for values near zero). Also checks --json and
that shape subgraphs fold once --shape binds the inputs.

usage: check_run_vs_onnxruntime.py GRAPHFUSE_BINARY
"""
import json
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:  # a missing oracle must fail the test, not skip it
    sys.exit(f"FAIL: the Python test oracles are missing ({e}); run scripts/setup.sh")

RTOL, ATOL = 1e-4, 1e-6
F = TensorProto.FLOAT


def model(nodes, inputs, outputs, inits=(), opset=17, ir=8):
    g = helper.make_graph(nodes, "m", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=ir)
    return m


def vi(name, dims, t=F):
    return helper.make_tensor_value_info(name, t, dims)


def cases(rng):
    """(name, model, {input: array}, extra graphfuse args)"""
    x23 = rng.standard_normal((2, 3)).astype(np.float32)
    w = numpy_helper.from_array(rng.standard_normal(3).astype(np.float32), "w")
    yield ("add_relu", model([helper.make_node("Add", ["x", "w"], ["s"]), helper.make_node("Relu", ["s"], ["y"])],
                             [vi("x", [2, 3])], [vi("y", [2, 3])], [w]), {"x": x23}, [])
    # IR 10 / opset 18, as PyTorch's dynamo exporter writes; ReduceSum axes as an input.
    axes = numpy_helper.from_array(np.array([1], dtype=np.int64), "axes")
    yield ("ir10_opset18_reducesum",
           model([helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)], [vi("x", ["batch", 3])],
                 [vi("y", ["batch"])], [axes], opset=18, ir=10),
           {"x": rng.standard_normal((4, 3)).astype(np.float32)}, [])
    # Opset 11: axes as an attribute.
    yield ("opset11_reducemean_attr",
           model([helper.make_node("ReduceMean", ["x"], ["y"], axes=[0], keepdims=1)], [vi("x", [3, 5])], [vi("y", [1, 5])],
                 opset=11),
           {"x": rng.standard_normal((3, 5)).astype(np.float32)}, [])
    # Softmax before opset 13 flattens to 2-D at `axis`.
    yield ("opset11_softmax_axis1",
           model([helper.make_node("Softmax", ["x"], ["y"], axis=1)], [vi("x", [2, 3, 4])], [vi("y", [2, 3, 4])], opset=11),
           {"x": rng.standard_normal((2, 3, 4)).astype(np.float32)}, [])
    # A shape subgraph: y = Reshape(x, [Shape(x)[0], -1]) with a dynamic batch.
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "zero"], ["batch"], axis=0),
        helper.make_node("Unsqueeze", ["batch", "zero_axes"], ["batch1"]),
        helper.make_node("Concat", ["batch1", "minus_one"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["flat"]),
        helper.make_node("Relu", ["flat"], ["y"]),
    ]
    inits = [numpy_helper.from_array(np.array(0, dtype=np.int64), "zero"),
             numpy_helper.from_array(np.array([0], dtype=np.int64), "zero_axes"),
             numpy_helper.from_array(np.array([-1], dtype=np.int64), "minus_one")]
    yield ("shape_subgraph_reshape", model(nodes, [vi("x", ["batch", 3, 4])], [vi("y", ["batch", 12])], inits),
           {"x": rng.standard_normal((5, 3, 4)).astype(np.float32)}, ["--shape", "x=5x3x4"])
    # A small MLP with Gemm, MatMul, Cast and an integer path.
    w1 = numpy_helper.from_array(rng.standard_normal((8, 16)).astype(np.float32), "w1")
    b1 = numpy_helper.from_array(rng.standard_normal(16).astype(np.float32), "b1")
    w2 = numpy_helper.from_array(rng.standard_normal((16, 4)).astype(np.float32), "w2")
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"]), helper.make_node("Tanh", ["h"], ["t"]),
             helper.make_node("MatMul", ["t", "w2"], ["logits"]), helper.make_node("Softmax", ["logits"], ["probs"], axis=-1),
             helper.make_node("ArgMax", ["logits"], ["best"], axis=1, keepdims=0),
             helper.make_node("Cast", ["best"], ["best_f"], to=TensorProto.FLOAT)]
    yield ("mlp", model(nodes, [vi("x", [3, 8])], [vi("probs", [3, 4]), vi("best_f", [3])], [w1, b1, w2], opset=13),
           {"x": rng.standard_normal((3, 8)).astype(np.float32)}, [])


def run_case(binary, tmp, name, m, feeds, extra):
    path = os.path.join(tmp, name + ".onnx")
    onnx.save(m, path)
    args = [binary, "run", path, "--iterations", "2", "--output-dir", os.path.join(tmp, name + "_out"),
            "--json", os.path.join(tmp, name + ".json")] + extra
    for k, v in feeds.items():
        p = os.path.join(tmp, f"{name}_{k}.npy")
        np.save(p, v)
        args += ["--input", f"{k}={p}"]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        return f"graphfuse run exited {proc.returncode}: {proc.stderr.strip()}"
    expected = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)
    report = json.load(open(os.path.join(tmp, name + ".json")))
    if set(report["latency_us"]) != {"min", "median", "p90"}:
        return f"--json latency_us has keys {sorted(report['latency_us'])}"
    for out, want in zip(m.graph.output, expected):
        got = np.load(os.path.join(tmp, name + "_out", out.name + ".npy"))
        if got.dtype != want.dtype or got.shape != want.shape:
            return f"output {out.name}: got {got.dtype}{list(got.shape)}, onnxruntime {want.dtype}{list(want.shape)}"
        if report["outputs"].get(out.name) != list(want.shape):
            return f"--json outputs[{out.name}] = {report['outputs'].get(out.name)}, expected {list(want.shape)}"
        if not np.allclose(got, want, rtol=RTOL, atol=ATOL):
            return f"output {out.name}: max abs diff {np.max(np.abs(got - want))}"
    return None


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    binary = sys.argv[1]
    rng = np.random.default_rng(0)
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, m, feeds, extra in cases(rng):
            onnx.checker.check_model(m)
            err = run_case(binary, tmp, name, m, feeds, extra)
            print(f"{'FAIL' if err else 'ok  '} {name}{': ' + err if err else ''}")
            failures += bool(err)
    print(f"{failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
