#!/usr/bin/env python3
"""Regenerates the weights that export_torch_models.py stripped from a model.

    python3 tests/models/fill_weights.py IN.onnx OUT.onnx [--seed N]

Each stripped initializer gets values drawn from N(mean, std) clipped to [min, max] of the
original weights (stored in the model's metadata), so BatchNorm variances stay positive and
activations keep their scale. Models with nothing stripped are copied unchanged.
"""
import argparse
import json

import numpy as np
import onnx
from onnx import numpy_helper


def main():
    p = argparse.ArgumentParser()
    p.add_argument("src")
    p.add_argument("dst")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    m = onnx.load(a.src)
    meta = {x.key: x.value for x in m.metadata_props}
    stats = json.loads(meta.get("graphfuse.stripped_weights", "{}"))
    rng = np.random.default_rng(a.seed)
    for i, init in enumerate(m.graph.initializer):
        s = stats.get(init.name)
        if s is None:
            continue
        shape = tuple(init.dims)
        arr = rng.normal(s["mean"], s["std"], size=shape).clip(s["min"], s["max"])
        m.graph.initializer[i].CopyFrom(numpy_helper.from_array(arr.astype(np.float32), init.name))
    onnx.save(m, a.dst)


if __name__ == "__main__":
    main()
