#!/usr/bin/env python3
"""bench_model_latency end to end on a small ONNX model built here with onnx.helper.

    python3 tests/bench/check_model_latency.py build/bin/bench_model_latency

With a GPU: both passes' outputs (DeviceProgram::run and the caller's CUDA graph) against
numpy, the figures in its JSON, and its errors for a missing input and an unreadable model.
Without one: exit status 2 and a message that says so. Exits non-zero on the first failure.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def small_model(path, w, b):
    """y = Relu(x @ w + b), z = Tanh(x): a GEMM (a library call) and generated kernels."""
    nodes = [helper.make_node("MatMul", ["x", "w"], ["xw"]), helper.make_node("Add", ["xw", "b"], ["xwb"]),
             helper.make_node("Relu", ["xwb"], ["y"]), helper.make_node("Tanh", ["x"], ["z"])]
    graph = helper.make_graph(
        nodes, "small", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 16]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [4, 8])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def expect(cond, what):
    if not cond:
        print(f"FAILED: {what}")
        sys.exit(1)


def main():
    tool = sys.argv[1]
    rng = np.random.default_rng(0)
    w = rng.standard_normal((8, 16)).astype(np.float32)
    b = rng.standard_normal(16).astype(np.float32)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    with tempfile.TemporaryDirectory() as d:
        model = os.path.join(d, "small.onnx")
        small_model(model, w, b)
        np.save(os.path.join(d, "x.npy"), x)
        out_dir, json_path = os.path.join(d, "out"), os.path.join(d, "figures.json")
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(d, "cache"))
        cmd = [tool, model, "--input", f"x={d}/x.npy", "--iters", "5", "--warmup", "1",
               "--output-dir", out_dir, "--json", json_path]
        run = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if run.returncode == 2:
            expect("no CUDA device" in run.stderr, f"exit 2 without saying why: {run.stderr!r}")
            print("no CUDA device: bench_model_latency exits with 2 and says so")
            return
        expect(run.returncode == 0, f"exit {run.returncode}: {run.stderr}")
        with open(json_path) as f:
            j = json.load(f)
        want = {"y": np.maximum(x @ w + b, 0), "z": np.tanh(x)}
        expect([o["name"] for o in j["outputs"]] == ["y", "z"], f"outputs {j['outputs']}")
        for i, o in enumerate(j["outputs"]):
            for key in ("run_file", "caller_graph_file"):
                got = np.load(o[key])
                expect(got.shape == want[o["name"]].shape, f"{key} {o['name']} shape {got.shape}")
                err = float(np.max(np.abs(got - want[o["name"]])))
                expect(err < 1e-4, f"{key} {o['name']}: max error {err}")
        for key in ("run_us", "caller_graph_us"):
            expect(j[key]["iters"] == 5 and 0 < j[key]["median"] <= j[key]["p90"], f"{key}: {j[key]}")
        expect(j["compile_s"] > 0 and j["stats"]["graph_mode"] and j["stats"]["host_steps"] == 0, f"{j}")
        expect(j["kernel_cache"]["cubins_before"] == 0 < j["kernel_cache"]["cubins_after"],
               f"a cold cache should fill: {j['kernel_cache']}")

        # A missing input and an unreadable model: exit 1, the message names them, the JSON
        # says at which stage.
        missing = subprocess.run([tool, model, "--json", json_path], capture_output=True, text=True, env=env)
        expect(missing.returncode == 1 and "has no --input x=FILE.npy" in missing.stderr, missing.stderr)
        with open(json_path) as f:
            expect(json.load(f)["stage"] == "import", "the stage of a missing input")
        bad = subprocess.run([tool, os.path.join(d, "nothing.onnx"), "--input", f"x={d}/x.npy"],
                             capture_output=True, text=True, env=env)
        expect(bad.returncode == 1 and "nothing.onnx" in bad.stderr, bad.stderr)
    print("bench_model_latency: outputs, figures and errors as expected")


if __name__ == "__main__":
    main()
