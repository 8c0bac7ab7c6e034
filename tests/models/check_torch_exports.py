#!/usr/bin/env python3
"""Runs the torch.onnx exports in data/ through `graphfuse run` and compares the outputs with
ONNX Runtime (every model) and with PyTorch's own output (models whose weights are checked in).

    python3 tests/models/check_torch_exports.py path/to/graphfuse [--device cpu]

Relative error is max|got - want| / max|want|; the bound is 1e-4 (f32).
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
BOUND = 1e-4


def rel_error(got, want):
    scale = float(np.max(np.abs(want))) or 1.0
    return float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))) / scale


def main():
    p = argparse.ArgumentParser()
    p.add_argument("graphfuse")
    p.add_argument("--device", default="cpu")
    a = p.parse_args()
    passed = failed = 0
    for path in sorted(glob.glob(os.path.join(DATA, "*.onnx"))):
        name = os.path.basename(path)[: -len(".onnx")]
        stem = name.split(".")[0]
        with tempfile.TemporaryDirectory() as tmp:
            model = onnx.load(path)
            meta = {m.key: m.value for m in model.metadata_props}
            stripped = bool(json.loads(meta.get("graphfuse.stripped_weights", "{}")))
            if stripped:
                filled = os.path.join(tmp, "model.onnx")
                subprocess.run([sys.executable, os.path.join(HERE, "fill_weights.py"), path,
                                filled], check=True)
                path = filled
            inputs = {}
            for f in glob.glob(os.path.join(DATA, f"{stem}.input.*.npy")):
                inputs[os.path.basename(f).split(".")[2]] = f
            sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            feeds = {i.name: np.load(inputs[i.name]) for i in sess.get_inputs()}
            want = sess.run(None, feeds)[0]
            out_dir = os.path.join(tmp, "out")
            cmd = [a.graphfuse, "run", path, "--device", a.device, "--output-dir", out_dir,
                   "--iterations", "1"]
            for k, f in inputs.items():
                cmd += ["--input", f"{k}={f}"]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                print(f"FAIL {name}: graphfuse exited {r.returncode}: {r.stderr.strip()}")
                failed += 1
                continue
            got = np.load(os.path.join(out_dir, "y.npy"))
            errors = {"onnxruntime": rel_error(got, want)} if got.shape == want.shape else None
            if errors is not None and not stripped:
                errors["pytorch"] = rel_error(got, np.load(os.path.join(DATA, f"{stem}.torch.y.npy")))
            if errors is None or any(e > BOUND for e in errors.values()):
                print(f"FAIL {name}: shape {got.shape} vs {want.shape}, errors {errors}")
                failed += 1
            else:
                print(f"ok   {name}: " + ", ".join(f"vs {k} {v:.2e}" for k, v in errors.items()))
                passed += 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
