#!/usr/bin/env python3
"""The fused CPU backend against the reference interpreter and ONNX Runtime's CPU provider, on
the same machine and thread count, over the torch.onnx exports in tests/models/data.

    python3 bench/cpu_vs_onnxruntime.py build/bin/graphfuse [--iterations N]

Prints one row per model: median latency of each, and graphfuse's ratio to ONNX Runtime
(below 1.0 means graphfuse is faster).
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "tests", "models", "data")
FILL = os.path.join(HERE, "..", "tests", "models", "fill_weights.py")


def graphfuse_median_us(binary, model, inputs, backend, iterations):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        cmd = [binary, "run", model, "--cpu-backend", backend, "--iterations", str(iterations),
               "--json", out]
        for name, path in inputs.items():
            cmd += ["--input", f"{name}={path}"]
        subprocess.run(cmd, check=True, capture_output=True)
        with open(out) as f:
            return json.load(f)["latency_us"]["median"]


def ort_median_us(model, feeds, threads, iterations):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    s.run(None, feeds)
    times = []
    for _ in range(iterations):
        t0 = time.perf_counter()
        s.run(None, feeds)
        times.append((time.perf_counter() - t0) * 1e6)
    return float(np.median(times))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("graphfuse")
    p.add_argument("--iterations", type=int, default=10)
    a = p.parse_args()
    threads = os.cpu_count()
    print(f"CPU: {threads} threads; ONNX Runtime {ort.__version__} with intra_op_num_threads={threads}")
    print(f"| model | reference us | fused us | onnxruntime us | fused / onnxruntime |")
    print(f"|---|---|---|---|---|")
    for path in sorted(glob.glob(os.path.join(DATA, "*.onnx"))):
        name = os.path.basename(path)[: -len(".onnx")]
        stem = name.split(".")[0]
        with tempfile.TemporaryDirectory() as tmp:
            model = os.path.join(tmp, "model.onnx")
            subprocess.run([sys.executable, FILL, path, model], check=True)
            inputs = {os.path.basename(f).split(".")[2]: f
                      for f in glob.glob(os.path.join(DATA, f"{stem}.input.*.npy"))}
            feeds = {k: np.load(v) for k, v in inputs.items()}
            try:
                ref = graphfuse_median_us(a.graphfuse, model, inputs, "reference", max(1, a.iterations // 5))
                fused = graphfuse_median_us(a.graphfuse, model, inputs, "fused", a.iterations)
            except subprocess.CalledProcessError as e:
                print(f"| {name} | failed: {e.stderr.decode().strip()[:120]} | | | |")
                continue
            theirs = ort_median_us(model, feeds, threads, a.iterations)
            print(f"| {name} | {ref:.0f} | {fused:.0f} | {theirs:.0f} | {fused / theirs:.2f} |")


if __name__ == "__main__":
    main()
