#!/usr/bin/env python3
"""graphfuse's attention kernels side by side with PyTorch's SDPA backends on the same GPU.

Runs `bench_attention --json` (bench/attention.cpp), then PyTorch's scaled_dot_product_attention
on the same shapes with each backend forced in turn (FlashAttention-2, cuDNN, memory-efficient),
timed with CUDA events after a warm-up (median of --iters), and prints one table in TFLOP/s
(4 * B * H * Sq * Skv * D, halved when causal) with our ratio to each backend (> 1: we are
faster); "ours via cuDNN" is graphfuse's own call of cuDNN's fused attention through the backend
API (runtime/cuda/cudnn_sdpa.h), set against PyTorch's cuDNN backend. Inputs are [B, H, S, D] bf16 tensors of random values. Then the decode rows (one query
token against a 4k-32k key/value cache, 32 query heads over 8 key/value heads): time, the
bandwidth of reading K and V once, and its share of the copy bandwidth measured by the bench;
then each side queued, launches back to back over copies of the inputs larger than L2 (so no
launch finds its cache there) with the host's cost hidden: ours as the bench times it, PyTorch's
calls captured into one CUDA graph and replayed, and beside ours a kernel that only reads the
same K and V bytes, timed the same way ("% read": its time over ours).

    bench/attention_vs_torch.py [--bench build/bin/bench_attention] [--iters 20] [--quick]
                                [--decode-only] [--out DIR]

Writes DIR/attention.json (ours) and DIR/attention_vs_torch.json (the table). Exits with 2 and
a one-line reason where there is no GPU or no PyTorch.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys


def fail(reason):
    print(f"attention_vs_torch: {reason}", file=sys.stderr)
    sys.exit(2)


def time_us(torch, fn, iters):
    for _ in range(3):
        fn()
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(iters):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1e3)
    return statistics.median(times)


def sdpa_us(torch, s, iters):
    """PyTorch's SDPA time per backend for shape row `s` (None where a backend refuses it)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import torch.nn.functional as F

    backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
                "efficient": SDPBackend.EFFICIENT_ATTENTION}
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16}[s["dtype"]]
    q = torch.rand(s["batch"], s["heads"], s["q_len"], s["head_dim"], device="cuda", dtype=dtype) * 2 - 1
    k = torch.rand(s["batch"], s["kv_heads"], s["kv_len"], s["head_dim"], device="cuda", dtype=dtype) * 2 - 1
    v = torch.rand_like(k) * 2 - 1
    out = {}
    for name, backend in backends.items():
        try:
            with sdpa_kernel(backend):
                out[name] = time_us(torch, lambda: F.scaled_dot_product_attention(
                    q, k, v, is_causal=s.get("causal", False), enable_gqa=s["heads"] != s["kv_heads"]), iters)
        except RuntimeError:  # a backend that does not take the shape
            out[name] = None
    del q, k, v
    torch.cuda.empty_cache()
    return out


COLD_BYTES = 160e6  # more than the H200's L2 (50 MB), as bench_attention's queued timing


def queued_us(torch, s, iters):
    """PyTorch's SDPA per call for decode row `s`, per backend, with launches queued over copies
    of Q, K and V larger than L2: the calls captured into one CUDA graph, replays timed."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import torch.nn.functional as F

    dtype = {"bf16": torch.bfloat16, "f16": torch.float16}[s["dtype"]]
    per_copy = 2 * s["batch"] * s["head_dim"] * (2 * s["kv_heads"] * s["kv_len"] + 2 * s["heads"] * s["q_len"])
    copies = max(2, min(64, -(-int(COLD_BYTES) // per_copy)))
    inputs = []
    for _ in range(copies):
        q = torch.rand(s["batch"], s["heads"], s["q_len"], s["head_dim"], device="cuda", dtype=dtype) * 2 - 1
        k = torch.rand(s["batch"], s["kv_heads"], s["kv_len"], s["head_dim"], device="cuda", dtype=dtype) * 2 - 1
        inputs.append((q, k, torch.rand_like(k) * 2 - 1))
    out = {}
    for name, backend in {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}.items():
        try:
            with sdpa_kernel(backend):
                call = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=s["heads"] != s["kv_heads"])
                stream = torch.cuda.Stream()
                stream.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(stream):
                    for q, k, v in inputs[:3]:
                        call(q, k, v)  # warm-up outside the capture
                torch.cuda.current_stream().wait_stream(stream)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    for q, k, v in inputs:
                        call(q, k, v)
                out[name] = time_us(torch, graph.replay, iters) / copies
                del graph
        except RuntimeError:  # a backend that does not take the shape (or cannot be captured)
            out[name] = None
    del inputs
    torch.cuda.empty_cache()
    return out


def decode_table(torch, ours, copy_gbps, iters):
    print("\nDecode: one query token, bf16; µs (KV GB/s: K and V bytes over the time; % of the copy "
          f"bandwidth, {copy_gbps:.0f} GB/s)\n")
    print("| B | Hq / Hkv | KV length | ours µs | ours KV GB/s | % copy | FA2 µs | cuDNN µs | mem-efficient µs |")
    print("|---|---|---|---|---|---|---|---|---|")
    rows = []
    for o in ours:
        t = sdpa_us(torch, o, iters)
        fmt = lambda x: "-" if x is None else f"{x:.1f}"
        print(f"| {o['batch']} | {o['heads']} / {o['kv_heads']} | {o['kv_len']} | {o['us']:.1f} | "
              f"{o['kv_gbps']:.0f} | {o['pct_copy']:.0f}% | {fmt(t['flash'])} | {fmt(t['cudnn'])} | "
              f"{fmt(t['efficient'])} |")
        rows.append({"ours": o, "torch_us": t})
    if any(o.get("queued_us", 0) > 0 for o in ours):
        print("\nQueued over copies larger than L2, host cost hidden; µs per call\n")
        print("| B | KV length | ours µs | % copy | read-only µs | % read | FA2 µs | cuDNN µs |")
        print("|---|---|---|---|---|---|---|---|")
        for o, row in zip(ours, rows):
            q = queued_us(torch, o, iters)
            fmt = lambda x: "-" if x is None else f"{x:.1f}"
            read = o.get("read_us", 0)
            print(f"| {o['batch']} | {o['kv_len']} | {o['queued_us']:.1f} | {o['queued_pct_copy']:.0f}% | "
                  f"{fmt(read or None)} | {o.get('queued_pct_read', 0):.0f}% | "
                  f"{fmt(q['flash'])} | {fmt(q['cudnn'])} |")
            row["torch_queued_us"] = q
    return rows


def torch_rows(torch, shapes, iters):
    """TFLOP/s of each SDPA backend per shape (None where a backend refuses it)."""
    out = []
    for s in shapes:
        flops = 4.0 * s["batch"] * s["heads"] * s["q_len"] * s["kv_len"] * s["head_dim"]
        if s["causal"]:
            flops /= 2
        out.append({name: None if us is None else flops / (us * 1e-6) * 1e-12
                    for name, us in sdpa_us(torch, s, iters).items()})
    return out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bench", default=os.path.join(here, "..", "build", "bin", "bench_attention"))
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--quick", action="store_true", help="S = 1024 only (a smoke run)")
    p.add_argument("--decode-only", action="store_true", help="the decode rows only")
    p.add_argument("--out", default=os.environ.get("OUT") or "/tmp")
    args = p.parse_args()
    try:
        import torch
    except ImportError:
        fail("PyTorch is not installed")
    if not torch.cuda.is_available():
        fail("no CUDA device for PyTorch")

    ours_path = os.path.join(args.out, "attention.json")
    cmd = [args.bench, "--iters", str(args.iters), "--json", ours_path, "--mma-sync"] + \
        (["--quick"] if args.quick else []) + (["--decode-only"] if args.decode_only else [])
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        fail(f"{' '.join(cmd)} exited with {run.returncode}: {run.stderr.strip()}")
    ours_json = json.load(open(ours_path))
    key = lambda r: (r["dtype"], r["batch"], r["heads"], r["kv_heads"], r["q_len"], r["kv_len"], r["head_dim"],
                     r["causal"])
    # Per shape, the default kernel's row comes first (wgmma on sm_90, else mma); with --mma-sync
    # the mma.sync kernel's row follows where the wgmma kernel took the shape.
    ours, mma_sync = [], {}
    for r in ours_json.get("results", []):
        if r["kernel"] in ("wgmma", "mma") and (not ours or key(ours[-1]) != key(r)):
            ours.append(r)
        elif r["kernel"] == "mma" and ours and key(ours[-1]) == key(r):
            mma_sync[key(r)] = r
    cudnn_path = {key(r): r for r in ours_json.get("results", []) if r["kernel"] == "cudnn"}
    peers = torch_rows(torch, ours, args.iters)

    print(f"# graphfuse attention against PyTorch {torch.__version__} SDPA, {torch.cuda.get_device_name()}\n")
    print("TFLOP/s (4·B·H·Sq·Skv·D, halved when causal), median of %d runs; x: ours over the backend.\n" % args.iters)
    if ours:
        print("| dtype | B | H | S | D | causal | kernel | ours | FA2 (flash) | cuDNN | mem-efficient | x FA2 | "
              "x cuDNN | ours mma.sync | x FA2 | ours via cuDNN | x cuDNN |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    table = []
    for o, t in zip(ours, peers):
        def fmt(x):
            return "-" if x is None else f"{x:.1f}"

        def ratio(x, mine=o):
            return "-" if not x or not mine else f"{mine['tflops'] / x:.2f}"

        c = cudnn_path.get(key(o))
        m = mma_sync.get(key(o))
        print(f"| {o['dtype']} | {o['batch']} | {o['heads']} | {o['q_len']} | {o['head_dim']} | "
              f"{'yes' if o['causal'] else 'no'} | {o['kernel']} | {o['tflops']:.1f} | {fmt(t.get('flash'))} | "
              f"{fmt(t.get('cudnn'))} | {fmt(t.get('efficient'))} | {ratio(t.get('flash'))} | "
              f"{ratio(t.get('cudnn'))} | {fmt(m and m['tflops'])} | {ratio(t.get('flash'), m)} | "
              f"{fmt(c and c['tflops'])} | {ratio(t.get('cudnn'), c)} |")
        table.append({"ours": o, "ours_mma_sync": m, "ours_cudnn": c, "torch": t})
    decode = decode_table(torch, [r for r in ours_json.get("decode", []) if r["kernel"] == "split"],
                          ours_json.get("copy_gbps", 0.0), args.iters)
    with open(os.path.join(args.out, "attention_vs_torch.json"), "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": table,
                   "decode": decode}, f, indent=2)


if __name__ == "__main__":
    main()
