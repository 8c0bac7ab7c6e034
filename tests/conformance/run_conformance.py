#!/usr/bin/env python3
"""CI conformance test: ONNX's backend test cases (node, pytorch-converted, pytorch-operator)
from two sources, run through `graphfuse conformance` on the CPU:

  onnx/...    the onnx Python package: its node cases written out by generate_node_data.py
              (the wheel ships them as code), and its pytorch-* folders as shipped
  debian/...  Debian's libonnx-testdata (/usr/share/libonnx-testdata/data, opsets up to 17)

Fails when a case fails that expected_failures.txt does not list; lists entries that now pass
(remove them). Prints per-source counts and the pass rate among supported cases.

usage: run_conformance.py GRAPHFUSE_BINARY EXPECTED_FAILURES_FILE WORK_DIR [--jobs N]
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEBIAN_DATA = "/usr/share/libonnx-testdata/data"
KINDS = ["node", "pytorch-converted", "pytorch-operator"]


def load_expected(path):
    expected = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            name, _, reason = line.partition(" ")
            if not reason.strip():
                sys.exit(f"FAIL: {path}: entry '{name}' has no reason")
            expected[name] = reason.strip()
    return expected


def sources(work_dir):
    try:
        import onnx
    except ImportError as e:
        sys.exit(f"FAIL: the onnx Python package is missing ({e}); run scripts/setup.sh")
    onnx_data = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
    generated = os.path.join(work_dir, "onnx_node_data")
    subprocess.run([sys.executable, os.path.join(HERE, "generate_node_data.py"), generated], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out = {"onnx": {"node": os.path.join(generated, "node")}}
    for kind in KINDS[1:]:
        out["onnx"][kind] = os.path.join(onnx_data, kind)
    if not os.path.isdir(DEBIAN_DATA):
        sys.exit(f"FAIL: {DEBIAN_DATA} is missing; install libonnx-testdata (scripts/setup.sh does)")
    out["debian"] = {kind: os.path.join(DEBIAN_DATA, kind) for kind in KINDS}
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("expected")
    ap.add_argument("work_dir")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    expected = load_expected(args.expected)
    results = {}
    for source, kinds in sources(args.work_dir).items():
        counts = {"passed": 0, "failed": 0, "unsupported": 0}
        for kind, path in kinds.items():
            if not os.path.isdir(path):
                sys.exit(f"FAIL: {path} is missing")
            report = os.path.join(args.work_dir, f"{source}_{kind}.json")
            proc = subprocess.run([args.binary, "conformance", path, "--json", report, "--jobs", str(args.jobs),
                                   "--timeout", "60"], capture_output=True, text=True)
            if not os.path.exists(report):
                sys.exit(f"FAIL: graphfuse conformance {path} wrote no report: {proc.stderr.strip()}")
            for case in json.load(open(report))["cases"]:
                name = f"{source}/{kind}/{case['name']}"
                results[name] = case
                counts[case["status"]] += 1
        supported = counts["passed"] + counts["failed"]
        rate = 100.0 * counts["passed"] / supported if supported else 0.0
        print(f"{source}: {counts['passed']} passed, {counts['failed']} failed, {counts['unsupported']} unsupported; "
              f"{rate:.1f}% of supported cases pass")

    unexpected = [n for n, c in sorted(results.items()) if c["status"] == "failed" and n not in expected]
    fixed = [n for n in sorted(expected) if n in results and results[n]["status"] != "failed"]
    stale = [n for n in sorted(expected) if n not in results]
    for n in unexpected:
        print(f"FAIL (not in expected_failures.txt) {n}: {results[n]['reason']}")
    for n in fixed:
        print(f"now {results[n]['status']} (remove from expected_failures.txt): {n}")
    for n in stale:
        print(f"no such case (remove from expected_failures.txt): {n}")
    print(f"conformance check: {len(unexpected)} unexpected failures, {len(fixed)} fixed, {len(stale)} stale entries")
    sys.exit(1 if unexpected else 0)


if __name__ == "__main__":
    main()
