#!/usr/bin/env python3
"""graphfuse's generated CUDA kernels side by side with PyTorch eager and torch.compile.

Runs the shapes of bench_cuda_kernels (bench/cuda_kernels.cpp) in PyTorch on the same GPU,
timed with CUDA events after a warm-up (median of --iters), runs `bench_cuda_kernels --json`,
and prints one table: our time, our share of the copy bandwidth measured in the same run, and
our speed-up over eager and over torch.compile (> 1: we are faster); then the GEMM + bias + GELU
programs against torch.matmul alone. The GEMMs are short enough for the host's cost per call to
show, so both sides there give device time per call with it hidden: ours 20 runs queued back to
back, PyTorch's 20 calls in one CUDA graph.

    bench/cuda_vs_torch.py [--bench build/bin/bench_cuda_kernels] [--iters 20] [--quick]
                           [--out DIR] [--no-compile]

Writes DIR/cuda_kernels.json (ours) and DIR/cuda_vs_torch.json (the table). Exits with 2 and a
one-line reason where there is no GPU or no PyTorch.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

MIB = 1 << 20


def fail(reason):
    print(f"cuda_vs_torch: {reason}", file=sys.stderr)
    sys.exit(2)


def chain_fn(torch, ops):
    # The same ops, in the same order, as chain_graph in bench/cuda_kernels.cpp.
    def f(x):
        for i in range(ops):
            k = i % 8
            if k == 0:
                x = x * 0.5
            elif k == 1:
                x = x + 1.0
            elif k == 2:
                x = torch.relu(x)
            elif k == 3:
                x = x * 1.5
            elif k == 4:
                x = x + -0.25
            elif k == 5:
                x = torch.abs(x)
            elif k == 6:
                x = -x
            else:
                x = torch.sigmoid(x)
        return x
    return f


def norm_fn(torch, name, row):
    F = torch.nn.functional
    if name == "softmax":
        return lambda x, g, b: torch.softmax(x, dim=-1)
    if name == "layernorm":
        return lambda x, g, b: F.layer_norm(x, (row,), g, b, 1e-5)
    return lambda x, g, b: F.rms_norm(x, (row,), g, 1e-6)


def event_median_us(torch, run, iters, calls=1):
    """The median over `iters` of CUDA-event time around `run`, per call when it makes `calls`."""
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(iters):
        start.record()
        run()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1e3 / calls)
    return statistics.median(times)


def time_us(torch, fn, args, iters):
    for _ in range(3):
        fn(*args)
    torch.cuda.synchronize()
    return event_median_us(torch, lambda: fn(*args), iters)


def graph_time_us(torch, fn, args, iters, batch=20):
    """Device time per call with the host's cost hidden, as ours is timed (runs queued back to
    back): `batch` calls captured in one torch.cuda.CUDAGraph, replayed between two events."""
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn(*args)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(batch):
            fn(*args)
    graph.replay()
    torch.cuda.synchronize()
    return event_median_us(torch, graph.replay, iters, batch)


def library_label(r):
    """What ran the product, and the kernels of ours beside it."""
    if r.get("tensor_core_gemms"):
        return "our tensor-core GEMM (epilogue in it)"
    label = "cuDNN" if r.get("cudnn_gemms") else "cuBLASLt"
    if r.get("generated_kernels"):
        label += " + %d kernel(s)" % r["generated_kernels"]
    return label


def gemm_table(torch, gemms, args):
    """Our GEMM + bias + GELU programs against torch.matmul alone (the target: no slower), and
    against the same epilogue in eager PyTorch and torch.compile."""
    F = torch.nn.functional
    rows = []
    for r in gemms:
        m, k, n = r["m"], r["k"], r["n"]
        x = torch.randn(m, k, device="cuda", dtype=torch.float16) * 0.06
        w = torch.randn(k, n, device="cuda", dtype=torch.float16) * 0.01
        b = torch.randn(n, device="cuda", dtype=torch.float16) * 0.01
        approx = "tanh" if "tanh" in r["name"] else "none"

        def fused(x, w, b):
            return F.gelu(torch.addmm(b, x, w), approximate=approx)
        matmul = graph_time_us(torch, torch.matmul, (x, w), args.iters)
        eager = graph_time_us(torch, fused, (x, w, b), args.iters)
        compiled = None
        if not args.no_compile:
            try:
                compiled = graph_time_us(torch, torch.compile(fused), (x, w, b), args.iters)
            except Exception as e:  # a compile failure is reported, not fatal
                print(f"torch.compile failed for {r['name']}: {e}", file=sys.stderr)
        graph_us = r.get("graph_us") or r["us"]
        rows.append({**r, "matmul_us": matmul, "eager_us": eager, "compile_us": compiled,
                     "vs_matmul": matmul / r["us"], "graph_vs_matmul": matmul / graph_us})
    if rows:
        print(f"\nGEMM + bias + GELU, fp16, device time per call. Ours: 'runs' = DeviceProgram runs "
              f"queued back to back (a graph launch each), 'in graph' = the program populated 20 times "
              f"into one CUDA graph, 'no bind' = that graph without each program's two binding "
              f"nodes (what they cost); PyTorch: 20 calls captured in one CUDA graph. x matmul: "
              f"torch.matmul alone over ours (>= 1: ours, with its epilogue, is no slower)")
        head = f"{'case':<20} {'m x k x n':<16} {'runs us':>9} {'in graph':>9} {'no bind':>8} {'matmul us':>10} " \
               f"{'eager us':>9} {'compile us':>10} {'x matmul':>9} {'in graph':>9}  library"
        print(head)
        print("-" * len(head))
        for r in rows:
            comp = f"{r['compile_us']:10.1f}" if r["compile_us"] else f"{'-':>10}"
            print(f"{r['name']:<20} {str(r['m']) + 'x' + str(r['k']) + 'x' + str(r['n']):<16} "
                  f"{r['us']:9.1f} {r.get('graph_us', 0):9.1f} {r.get('unbound_graph_us', 0):8.1f} "
                  f"{r['matmul_us']:10.1f} "
                  f"{r['eager_us']:9.1f} {comp} {r['vs_matmul']:9.2f} {r['graph_vs_matmul']:9.2f}  "
                  f"{library_label(r)}")
    return rows


def parse_shape(s):
    return [int(d) for d in s.split("x")]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bench", default=os.path.join(here, "..", "build", "bin", "bench_cuda_kernels"))
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--quick", action="store_true", help="16 MiB tensors (a smoke run)")
    p.add_argument("--out", default=os.environ.get("OUT") or "/tmp")
    p.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    args = p.parse_args()

    try:
        import torch
    except ImportError as e:
        fail(f"no PyTorch ({e}); run with the Python that has it")
    if not torch.cuda.is_available():
        fail("no GPU: torch.cuda.is_available() is False")
    if not os.path.exists(args.bench):
        fail(f"no {args.bench}: build the target bench_cuda_kernels first")

    os.makedirs(args.out, exist_ok=True)
    ours_path = os.path.join(args.out, "cuda_kernels.json")
    cmd = [args.bench, "--iters", str(args.iters), "--json", ours_path] + (["--quick"] if args.quick else [])
    print("$", " ".join(cmd), flush=True)
    run = subprocess.run(cmd)
    if run.returncode != 0:
        fail(f"bench_cuda_kernels exited with {run.returncode}")
    with open(ours_path) as f:
        ours = json.load(f)

    dtypes = {"f32": torch.float32, "bf16": torch.bfloat16}
    rows = []
    for r in ours["results"]:
        shape = parse_shape(r["shape"])
        dt = dtypes[r["dtype"]]
        x = torch.randn(shape, device="cuda", dtype=dt)
        if r["name"].startswith("chain"):
            fn = chain_fn(torch, int(r["name"][len("chain"):]))
            fargs = (x,)
        else:
            row = shape[-1]
            fn = norm_fn(torch, r["name"], row)
            fargs = (x, torch.ones(row, device="cuda", dtype=dt), torch.zeros(row, device="cuda", dtype=dt))
        eager = time_us(torch, fn, fargs, args.iters)
        compiled = None
        if not args.no_compile:
            try:
                compiled = time_us(torch, torch.compile(fn), fargs, args.iters)
            except Exception as e:  # a compile failure is reported, not fatal
                print(f"torch.compile failed for {r['name']} {r['shape']}: {e}", file=sys.stderr)
        del x, fargs
        torch.cuda.empty_cache()
        rows.append({**r, "eager_us": eager, "compile_us": compiled,
                     "vs_eager": eager / r["us"], "vs_compile": compiled / r["us"] if compiled else None})

    print(f"\n{ours['device']}: memcpy D2D {ours['memcpy_gbps_256MiB']:.0f} GB/s (256 MiB); "
          f"median of {args.iters}; speed-up > 1 means graphfuse is faster")
    head = f"{'case':<10} {'dtype':<5} {'shape':<14} {'ours us':>9} {'%memcpy':>8} {'eager us':>9} " \
           f"{'compile us':>10} {'x eager':>8} {'x compile':>9}"
    print(head)
    print("-" * len(head))
    for r in rows:
        comp = f"{r['compile_us']:10.1f}" if r["compile_us"] else f"{'-':>10}"
        vs_comp = f"{r['vs_compile']:9.2f}" if r["vs_compile"] else f"{'-':>9}"
        shown = r["name"] + ("-f32" if r.get("intermediates") == "f32" else "")
        print(f"{shown:<10} {r['dtype']:<5} {r['shape']:<14} {r['us']:9.1f} {r['pct_memcpy']:7.1f}% "
              f"{r['eager_us']:9.1f} {comp} {r['vs_eager']:8.2f} {vs_comp}")
    gemm_rows = gemm_table(torch, ours.get("gemm_results", []), args)
    table_path = os.path.join(args.out, "cuda_vs_torch.json")
    with open(table_path, "w") as f:
        json.dump({"device": ours["device"], "torch": torch.__version__,
                   "memcpy_gbps_256MiB": ours["memcpy_gbps_256MiB"], "rows": rows,
                   "gemm_rows": gemm_rows}, f, indent=2)
    print(f"\nwrote {ours_path} and {table_path}")


if __name__ == "__main__":
    main()
