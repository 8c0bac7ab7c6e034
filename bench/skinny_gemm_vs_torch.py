#!/usr/bin/env python3
"""Decode-shaped GEMMs: graphfuse's skinny GEMM kernels beside PyTorch's, in one run.

    python3 bench/skinny_gemm_vs_torch.py build/bin/bench_skinny_gemm [--json FILE]

Runs bench_skinny_gemm (ours, cuBLASLt, the copy bandwidth) and times the same rows in PyTorch:
every product of a row captured into one torch.cuda.CUDAGraph (x @ W for GPT-2's [k, n] weights,
F.linear for the Llama-style [n, k] ones, a gated product as silu(x Wg^T) * (x Wu^T)), f16,
median of replays timed with CUDA events. Prints one Markdown table.
"""
import argparse
import json
import subprocess
import sys
import tempfile


def torch_rows():
    gpt2 = [(2304, 768, False), (768, 768, False), (3072, 768, False), (768, 3072, False)] * 12
    llama = [(4096, 4096, False), (1024, 4096, False), (1024, 4096, False), (4096, 4096, False),
             (11008, 4096, True), (4096, 11008, False)] * 4
    rows = []
    for transposed in (False, True):
        for m in (1, 2, 4, 8, 16):
            layout = "W[n,k]" if transposed else "W[k,n]"
            rows.append((f"gpt2-small step, 48 products, {layout}", m, transposed, gpt2))
    return rows + [("llama-style layer x4 (GQA, SwiGLU)", 1, True, llama)]


def time_torch(torch, m, transposed, products, reps):
    import torch.nn.functional as F
    dev = "cuda"
    max_k = max(k for _, k, _ in products)
    x = torch.randn(m, max_k, device=dev, dtype=torch.float16)
    weights = []
    for n, k, gated in products:
        shape = (n, k) if transposed else (k, n)
        w = torch.randn(*shape, device=dev, dtype=torch.float16) / k ** 0.5
        wu = torch.randn(*shape, device=dev, dtype=torch.float16) / k ** 0.5 if gated else None
        weights.append((w, wu, k))

    def step():
        outs = []
        for w, wu, k in weights:
            xi = x[:, :k]
            if transposed:
                y = F.linear(xi, w)
                if wu is not None:
                    y = F.silu(y) * F.linear(xi, wu)
            else:
                y = xi @ w
            outs.append(y)
        return outs

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        step()
    for _ in range(3):
        g.replay()
    times = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e3)
    times.sort()
    return times[len(times) // 2]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("bench_binary")
    p.add_argument("--json")
    p.add_argument("--reps", type=int, default=50)
    a = p.parse_args()
    try:
        import torch
    except ImportError:
        print("PyTorch is not installed: nothing to compare against")
        return 0
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to measure")
        return 0
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        subprocess.run([a.bench_binary, "--json", f.name, "--reps", str(a.reps)], check=True)
        ours = json.load(open(f.name))
    print(f"\n{ours['device']}; copy {ours['copy_tb_per_s']:.2f} TB/s; PyTorch {torch.__version__}, "
          f"each row one CUDA graph, f16")
    print("| row | m | graphfuse us | TB/s | PyTorch us | TB/s | graphfuse / PyTorch |")
    print("|---|---|---|---|---|---|---|")
    result = []
    for (name, m, transposed, products), row in zip(torch_rows(), ours["rows"]):
        assert row["name"] == name and row["m"] == m, (row["name"], name)
        t_us = time_torch(torch, m, transposed, products, a.reps)
        bytes_ = row["weight_bytes"]
        print(f"| {name} | {m} | {row['ours_us']:.1f} | {bytes_ / row['ours_us'] / 1e6:.2f} | "
              f"{t_us:.1f} | {bytes_ / t_us / 1e6:.2f} | {row['ours_us'] / t_us:.2f} |")
        result.append(dict(row, torch_us=t_us))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(ours, rows=result, torch=torch.__version__), f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
