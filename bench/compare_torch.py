#!/usr/bin/env python3
"""graphfuse against PyTorch on real model architectures, one row per model and shape.

For each row (GPT-2 small one-token step at batch 1 and 8 and 128-token prefill at batch 1;
BERT-base at batch 8 x 128 tokens; ResNet-50 at batch 1 and 32, 224 x 224; all fp16 on one GPU)
it builds the model with random weights (fixed seed), exports it with torch.onnx, and times in
this one run: PyTorch eager, PyTorch in a torch.cuda.CUDAGraph, torch.compile(mode=
"reduce-overhead"), and graphfuse through bench_model_latency (bench/model_latency.cpp: the
program on device buffers, and the same program populated into a CUDA graph of the caller's).
Every output is checked against PyTorch before its time is reported; a part that fails or
disagrees is reported with its error, never dropped.

    bench/compare_torch.py --bench-tool build/bin/bench_model_latency
        [--models gpt2,bert,resnet50] [--cases ID,...] [--iters 100] [--warmup 10]
        [--out DIR] [--name NAME] [--work DIR] [--quick] [--no-compile] [--export-dtype auto|fp16|fp32]
        [--exporter auto|dynamo|torchscript]

Definitions (printed with the table too):
- GPT-2 "one-token step": one forward of GPT2LMHeadModel on a sequence of length 1 with no KV
  cache (use_cache=False): every weight is read once for one token per batch row.
- Times are CUDA events around one call, waited for each call (median and p90 of --iters after
  --warmup calls); neither side's times include host<->device copies of inputs or outputs.
- Tolerance: TOLERANCE_RULE in bench/compare_torch_report.py (2% of the output's largest
  magnitude against PyTorch fp16, or PyTorch's own fp16 error against fp32, with a factor 2).
- Floor: the larger of bytes / copy bandwidth and flops / fp16 matmul rate, both measured in
  this run with PyTorch. Bytes: every weight read once (an embedding table only read by lookups
  counts the rows looked up) plus the inputs and outputs; flops: PyTorch's FlopCounterMode over
  one eager forward (matmuls, convolutions, attention).

Writes DIR/NAME.md (the tables) and DIR/NAME.json (everything); DIR defaults to $OUT, else
/tmp, and NAME to compare_torch. Exported models, inputs and outputs go to --work (default a folder under
/tmp), which can be large. Exits with 2 and a one-line reason without PyTorch, a GPU or the
bench tool.

PyTorch, transformers and torchvision are imported only once main() runs; the numbers and
tables live in compare_torch_report.py (numpy only), which the tests import.
"""
import argparse
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

import numpy as np

from compare_torch_report import (TOLERANCE_RULE, check_outputs, floor_us, markdown, short_error,
                                  summarize_us, weight_bytes)

# Row id -> (model family, label, input dims). --quick replaces the shapes with small ones.
CASES = [
    ("gpt2_step_b1", "gpt2", "GPT-2 step", {"batch": 1, "seq": 1}),
    ("gpt2_step_b8", "gpt2", "GPT-2 step", {"batch": 8, "seq": 1}),
    ("gpt2_prefill_b1", "gpt2", "GPT-2 prefill", {"batch": 1, "seq": 128}),
    ("bert_b8", "bert", "BERT-base", {"batch": 8, "seq": 128}),
    ("resnet50_b1", "resnet50", "ResNet-50", {"batch": 1}),
    ("resnet50_b32", "resnet50", "ResNet-50", {"batch": 32}),
]
QUICK_SHAPES = {
    "gpt2_prefill_b1": {"batch": 1, "seq": 16},
    "bert_b8": {"batch": 2, "seq": 16},
    "resnet50_b32": {"batch": 2},
}


def case_shape_text(family, dims):
    if family == "resnet50":
        return f"{dims['batch']}x3x224x224"
    return f"{dims['batch']}x{dims['seq']}"


def fail(reason):
    print(f"compare_torch: {reason}", file=sys.stderr)
    sys.exit(2)


def parse_args(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bench-tool", default=os.path.join(here, "..", "build", "bin", "bench_model_latency"),
                   help="the bench_model_latency executable")
    p.add_argument("--models", default="gpt2,bert,resnet50", help="comma-separated: gpt2, bert, resnet50")
    p.add_argument("--cases", default="", help="comma-separated row ids (" + ", ".join(c[0] for c in CASES) + ")")
    p.add_argument("--iters", type=int, default=100)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--out", default=os.environ.get("OUT") or "/tmp", help="where the table and JSON go")
    p.add_argument("--name", default="compare_torch", help="their file names: DIR/NAME.md and DIR/NAME.json")
    p.add_argument("--work", default="", help="exports, inputs, outputs, kernel caches (default: a new /tmp folder)")
    p.add_argument("--quick", action="store_true", help="small shapes (prefill 16 tokens, BERT 2x16, ResNet batch 2)")
    p.add_argument("--no-compile", action="store_true", help="leave torch.compile out")
    p.add_argument("--export-dtype", choices=["auto", "fp16", "fp32"], default="auto",
                   help="auto: the fp16 model, else the fp32 one run with --precision fp16")
    p.add_argument("--exporter", choices=["auto", "dynamo", "torchscript"], default="auto",
                   help="auto: dynamo=True, else dynamo=False")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=int, default=1200, help="seconds for one bench tool run")
    args = p.parse_args(argv)
    args.models = [m for m in args.models.split(",") if m]
    unknown = [m for m in args.models if m not in {c[1] for c in CASES}]
    if unknown:
        p.error(f"unknown model(s) {unknown}; there are gpt2, bert, resnet50")
    args.cases = [c for c in args.cases.split(",") if c]
    unknown = [c for c in args.cases if c not in {c[0] for c in CASES}]
    if unknown:
        p.error(f"unknown case(s) {unknown}")
    if args.iters < 1 or args.warmup < 0:
        p.error("--iters must be >= 1 and --warmup >= 0")
    return args


def selected_cases(args):
    out = []
    for case_id, family, label, dims in CASES:
        if family not in args.models or (args.cases and case_id not in args.cases):
            continue
        if args.quick and case_id in QUICK_SHAPES:
            dims = QUICK_SHAPES[case_id]
        out.append((case_id, family, label, dict(dims)))
    return out


# ---- the bench tool (a subprocess; no PyTorch needed) --------------------------------------------

def run_bench_tool(tool, onnx_path, inputs, precision, iters, warmup, out_dir, cache_dir, timeout, extra=()):
    """Runs bench_model_latency; returns its JSON (with "error" when it failed) and the command."""
    os.makedirs(out_dir, exist_ok=True)
    json_path = os.path.join(out_dir, "figures.json")
    if os.path.exists(json_path):
        os.remove(json_path)
    cmd = [tool, onnx_path, "--precision", precision, "--iters", str(iters), "--warmup", str(warmup),
           "--output-dir", out_dir, "--json", json_path, *extra]
    for name, path in inputs:
        cmd += ["--input", f"{name}={path}"]
    env = dict(os.environ, XDG_CACHE_HOME=cache_dir)
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"bench_model_latency ran past {timeout} s"}, cmd
    figures = {}
    if os.path.exists(json_path):
        with open(json_path) as f:
            figures = json.load(f)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-3:]
        figures.setdefault("error", " ".join(tail) or f"exit status {proc.returncode}")
        figures["exit_status"] = proc.returncode
    return figures, cmd


def load_outputs(figures, key):
    files = [o.get(key) for o in figures.get("outputs", [])]
    return [np.load(f) if f else None for f in files]


# ---- PyTorch from here on (imported lazily) ------------------------------------------------------

def time_us(torch, fn, warmup, iters):
    """CUDA-event times of `fn` on the current stream, one call at a time."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(iters):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1e3)
    return times


def measure_peaks(torch, iters):
    """Copy bandwidth (1 GiB device-to-device, read + write counted) and the fp16 matmul rate
    (8192^3)."""
    reps = max(10, iters // 5)
    n = 1 << 30
    src = torch.empty(n, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    copy = summarize_us(time_us(torch, lambda: dst.copy_(src), 3, reps))
    m = 8192
    x, y, z = (torch.randn(m, m, dtype=torch.float16, device="cuda") for _ in range(3))
    mm = summarize_us(time_us(torch, lambda: torch.mm(x, y, out=z), 3, reps))
    return {"copy_gbps": 2 * n / (copy["median"] * 1e-6) / 1e9,
            "matmul_tflops": 2 * m ** 3 / (mm["median"] * 1e-6) / 1e12,
            "copy_bytes": n, "matmul_n": m}


def wrappers(torch):
    """Modules that return one tensor, as the export, the timings and the check all see it."""

    class Gpt2(torch.nn.Module):
        def __init__(self, m, explicit_mask):
            super().__init__()
            self.m = m
            self.explicit_mask = explicit_mask

        def forward(self, input_ids):
            # The export passes an all-ones mask: without one, transformers looks for packed
            # sequences with aten::diff, which the TorchScript-based exporter cannot write.
            mask = torch.ones_like(input_ids) if self.explicit_mask else None
            return self.m(input_ids=input_ids, attention_mask=mask, use_cache=False).logits

    class Bert(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask):
            return self.m(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    return Gpt2, Bert


def build_family(torch, family, seed):
    """(fp32 module on the CPU for the timings, its input names, a function making the export
    module from a state dict). Random weights from `seed`; the timed model uses transformers'
    default attention (SDPA), the exported one the eager attention (plain MatMul/Softmax ops in
    the ONNX file), with the same weights."""
    Gpt2, Bert = wrappers(torch)
    torch.manual_seed(seed)
    if family == "gpt2":
        import transformers
        model = Gpt2(transformers.GPT2LMHeadModel(transformers.GPT2Config(use_cache=False)), False)

        def export_module(state):
            m = Gpt2(transformers.GPT2LMHeadModel(
                transformers.GPT2Config(use_cache=False, attn_implementation="eager")), True)
            m.load_state_dict(state)
            return m
        return model, ["input_ids"], export_module
    if family == "bert":
        import transformers
        model = Bert(transformers.BertModel(transformers.BertConfig(), add_pooling_layer=False))

        def export_module(state):
            m = Bert(transformers.BertModel(transformers.BertConfig(attn_implementation="eager"),
                                            add_pooling_layer=False))
            m.load_state_dict(state)
            return m
        return model, ["input_ids", "attention_mask"], export_module
    import torchvision
    model = torchvision.models.resnet50(weights=None)

    def export_module(state):
        m = torchvision.models.resnet50(weights=None)
        m.load_state_dict(state)
        return m
    return model, ["image"], export_module


def make_inputs(torch, family, dims, seed):
    g = torch.Generator().manual_seed(seed + 1)
    if family == "resnet50":
        return [torch.randn(dims["batch"], 3, 224, 224, generator=g)]
    vocab = 50257 if family == "gpt2" else 30522
    ids = torch.randint(0, vocab, (dims["batch"], dims["seq"]), generator=g)
    if family == "gpt2":
        return [ids]
    return [ids, torch.ones_like(ids)]  # BERT: full sequences, no padding


def on_device(torch, inputs, dtype):
    """Inputs on the GPU; float ones in `dtype`."""
    return [t.to("cuda", dtype=dtype) if t.is_floating_point() else t.to("cuda") for t in inputs]


def as_list(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def floor_for(torch, model16, inputs16, outputs16, lookups, peaks):
    """The row's floor (see floor_us): bytes of the weights, inputs and outputs; flops counted
    by PyTorch over one forward."""
    embedding_ids = set()
    other_ids = set()
    for mod in model16.modules():
        for p in mod.parameters(recurse=False):
            (embedding_ids if isinstance(mod, torch.nn.Embedding) else other_ids).add(id(p))
    tensors = []
    seen = set()
    for mod in model16.modules():
        for p in list(mod.parameters(recurse=False)) + [b for b in mod.buffers(recurse=False)
                                                        if b.is_floating_point()]:
            if id(p) in seen:
                continue
            seen.add(id(p))
            only_lookups = id(p) in embedding_ids and id(p) not in other_ids
            tensors.append((p.numel(), p.element_size(), p.shape[-1] if only_lookups else None))
    nbytes = weight_bytes(tensors, lookups)
    nbytes += sum(t.numel() * t.element_size() for t in list(inputs16) + list(outputs16))
    flops = None
    try:
        from torch.utils.flop_counter import FlopCounterMode
        with torch.inference_mode(), FlopCounterMode(display=False) as counter:
            model16(*inputs16)
        flops = counter.get_total_flops()
    except Exception as e:  # the floor then counts bytes only
        print(f"  FlopCounterMode failed: {short_error(e, 200)}", file=sys.stderr)
    return floor_us(nbytes, flops, peaks["copy_gbps"], peaks["matmul_tflops"])


def torch_eager(torch, model, inputs, args):
    with torch.inference_mode():
        times = time_us(torch, lambda: model(*inputs), args.warmup, args.iters)
    return {"us": summarize_us(times), "check": {"ok": True, "reason": "the reference"}}


def torch_cuda_graph(torch, model, inputs, ref16, ref32, args):
    with torch.inference_mode():
        t0 = time.perf_counter()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                model(*inputs)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_out = as_list(model(*inputs))
        torch.cuda.synchronize()
        capture_s = time.perf_counter() - t0
        graph.replay()
        torch.cuda.synchronize()
        check = check_outputs([o.float().cpu().numpy() for o in static_out], ref16, ref32)
        times = time_us(torch, graph.replay, args.warmup, args.iters)
    del graph
    return {"us": summarize_us(times), "capture_s": capture_s, "check": check}


def torch_compiled(torch, model, inputs, ref16, ref32, args):
    torch._dynamo.reset()
    compiled = torch.compile(model, mode="reduce-overhead", dynamic=False)
    with torch.no_grad():
        t0 = time.perf_counter()
        compiled(*inputs)
        torch.cuda.synchronize()
        compile_s = time.perf_counter() - t0
        for _ in range(3):  # reduce-overhead records its CUDA graph in these calls
            out = compiled(*inputs)
        torch.cuda.synchronize()
        check = check_outputs([o.float().cpu().numpy() for o in as_list(out)], ref16, ref32)
        times = time_us(torch, lambda: compiled(*inputs), args.warmup, args.iters)
    torch._dynamo.reset()
    return {"us": summarize_us(times), "compile_s": compile_s, "check": check}


def export_onnx(torch, module, inputs, names, path, exporter):
    """Exports with dynamo=True (exporter "dynamo") or dynamo=False ("torchscript")."""
    module.eval()
    with torch.no_grad():
        if exporter == "dynamo":
            torch.onnx.export(module, tuple(inputs), path, dynamo=True, input_names=names,
                              output_names=["y"], external_data=False)
        else:
            torch.onnx.export(module, tuple(inputs), path, dynamo=False, opset_version=17,
                              input_names=names, output_names=["y"])


def onnx_input_names(path, names):
    """The model's graph inputs (an exporter may drop an unused one); `names` without onnx."""
    try:
        import onnx
        m = onnx.load(path, load_external_data=False)
        inits = {i.name for i in m.graph.initializer}
        return [i.name for i in m.graph.input if i.name not in inits]
    except Exception:
        return names


def save_inputs(path, names, inputs, work, tag):
    """Writes the inputs the exported model takes as .npy files; returns (name, file) pairs."""
    model_inputs = onnx_input_names(path, names)
    saved = []
    for name, t in zip(names, inputs):
        if name in model_inputs:
            file = os.path.join(work, f"input.{tag}.{name}.npy")
            np.save(file, t.cpu().numpy())
            saved.append((name, file))
    return saved


def run_graphfuse(torch, args, row, work, state, export_module, inputs_cpu, names, ref16, ref32):
    """Exports the model and runs the bench tool on it with a cold kernel cache (the timed run),
    then again warm (compile time only), and checks its outputs. Candidates in order: the fp16
    model, then the fp32 one run with graphfuse's own fp16 conversion; each with dynamo=True, then
    dynamo=False. The next is tried when the export fails or graphfuse cannot compile or run it.
    Fills row["export"] (with every attempt) and row["graphfuse"]."""
    dtypes = ["fp16", "fp32"] if args.export_dtype == "auto" else [args.export_dtype]
    exporters = ["dynamo", "torchscript"] if args.exporter == "auto" else [args.exporter]
    candidates = [(d, e) for d in dtypes for e in exporters]
    attempts = []
    row["export"] = {"attempts": attempts}
    gf = None
    cache = os.path.join(work, "kernel_cache")
    for dtype, exporter in candidates:
        torch_dtype = torch.float16 if dtype == "fp16" else torch.float32
        module = export_module(state).to("cuda", dtype=torch_dtype).eval()
        inputs = on_device(torch, inputs_cpu, torch_dtype)
        path = os.path.join(work, f"model.{dtype}.{exporter}.onnx")
        attempt = {"dtype": dtype, "exporter": exporter}
        attempts.append(attempt)
        t0 = time.perf_counter()
        try:
            export_onnx(torch, module, inputs, names, path, exporter)
            attempt["export_s"] = time.perf_counter() - t0
        except Exception as e:
            attempt["export_error"] = short_error(e, 500)
            continue
        finally:
            del module
            torch.cuda.empty_cache()
        np_inputs = save_inputs(path, names, inputs, work, f"{dtype}.{exporter}")
        # An fp16 export runs as its types say; an fp32 one with graphfuse's fp16 conversion.
        precision = "fp32" if dtype == "fp16" else "fp16"
        shutil.rmtree(cache, ignore_errors=True)
        os.makedirs(cache)
        figures, cmd = run_bench_tool(args.bench_tool, path, np_inputs, precision, args.iters, args.warmup,
                                      os.path.join(work, f"gf.{dtype}.{exporter}"), cache, args.timeout)
        row["export"].update(dtype=dtype, exporter=exporter, path=path)
        gf = {"precision": precision, "command": " ".join(cmd), "inputs": np_inputs, "figures": figures,
              "error": figures.get("error")}
        if figures.get("exit_status") == 2:
            gf["error"] = "bench_model_latency: no CUDA device"
        if not gf["error"] or figures.get("run_us"):
            break
        attempt["graphfuse_error"] = short_error(gf["error"], 500)
    if gf is None:
        row["graphfuse"] = {"error": "no export worked: " + "; ".join(
            f"{a['dtype']} {a['exporter']}: {a['export_error']}" for a in attempts)}
        return
    row["graphfuse"] = gf
    cold = gf["figures"]
    gf["stats"] = cold.get("stats")
    gf["compile_s_cold"] = cold.get("compile_s")
    gf["import_s"] = cold.get("import_s")
    gf["kernel_cache"] = cold.get("kernel_cache")
    if not cold.get("run_us"):
        return
    gf["run"] = {"us": cold["run_us"], "check": check_outputs(load_outputs(cold, "run_file"), ref16, ref32)}
    if cold.get("caller_graph_error"):
        gf["caller_graph"] = {"error": cold["caller_graph_error"]}
    elif cold.get("caller_graph_us"):
        gf["caller_graph"] = {"us": cold["caller_graph_us"], "build_s": cold.get("caller_graph_build_s"),
                              "check": check_outputs(load_outputs(cold, "caller_graph_file"), ref16, ref32)}
    warm, _ = run_bench_tool(args.bench_tool, row["export"]["path"], gf["inputs"], gf["precision"], 0, 0,
                             os.path.join(work, "gf.warm"), cache, args.timeout)
    gf["compile_s_warm"] = warm.get("compile_s")
    gf["kernel_cache_warm"] = warm.get("kernel_cache")
    gf["compile_seconds_warm"] = (warm.get("stats") or {}).get("compile_seconds")
    if warm.get("error"):
        gf["warm_error"] = warm["error"]
    # Warm again with cuBLASLt's one-time set-up in the process left to the compile (not started
    # beside the import): the compile as a process that loaded its model beforehand would see it.
    late, _ = run_bench_tool(args.bench_tool, row["export"]["path"], gf["inputs"], gf["precision"], 0, 0,
                             os.path.join(work, "gf.warm_late_setup"), cache, args.timeout,
                             ("--early-setup", "off"))
    gf["compile_s_warm_late_setup"] = late.get("compile_s")
    gf["compile_seconds_warm_late_setup"] = (late.get("stats") or {}).get("compile_seconds")


def run_row(torch, args, case, family_cache, peaks, work_root):
    case_id, family, label, dims = case
    row = {"id": case_id, "model": family, "label": label, "shape": case_shape_text(family, dims), "dims": dims}
    try:
        if family not in family_cache:
            family_cache.clear()  # one family's weights on the GPU at a time
            torch.cuda.empty_cache()
            model32, names, export_module = build_family(torch, family, args.seed)
            model32.eval()
            state = {k: v.clone() for k, v in model32.state_dict().items()}
            model16 = copy.deepcopy(model32).to("cuda", dtype=torch.float16).eval()
            family_cache[family] = (model32.to("cuda").eval(), model16, names, export_module, state)
        model32, model16, names, export_module, state = family_cache[family]
        inputs_cpu = make_inputs(torch, family, dims, args.seed)
        inputs16 = on_device(torch, inputs_cpu, torch.float16)
        inputs32 = on_device(torch, inputs_cpu, torch.float32)
        with torch.inference_mode():
            out16 = as_list(model16(*inputs16))
            tf32 = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
            torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
            try:
                out32 = as_list(model32(*inputs32))
            finally:
                torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = tf32
        ref16 = [o.float().cpu().numpy() for o in out16]
        ref32 = [o.float().cpu().numpy() for o in out32]
        lookups = dims["batch"] * dims.get("seq", 0)
        row["floor"] = floor_for(torch, model16, inputs16, out16, lookups, peaks)
        row["torch"] = {}
        for name, fn in (("eager", lambda: torch_eager(torch, model16, inputs16, args)),
                         ("cuda_graph", lambda: torch_cuda_graph(torch, model16, inputs16, ref16, ref32, args)),
                         ("compile", None if args.no_compile else
                          lambda: torch_compiled(torch, model16, inputs16, ref16, ref32, args))):
            if fn is None:
                continue
            print(f"  torch {name}", flush=True)
            try:
                row["torch"][name] = fn()
            except Exception as e:
                row["torch"][name] = {"error": short_error(e, 1000)}
        print("  graphfuse", flush=True)
        torch.cuda.empty_cache()  # leave the GPU's memory to the bench tool's process
        work = os.path.join(work_root, case_id)
        os.makedirs(work, exist_ok=True)
        run_graphfuse(torch, args, row, work, state, export_module, inputs_cpu, names, ref16, ref32)
    except Exception as e:  # the row is reported with its error; the others still run
        row["error"] = short_error(f"{type(e).__name__}: {e}", 1000)
        row["traceback"] = traceback.format_exc()
    return row


def main(argv=None):
    args = parse_args(argv)
    try:
        import torch
    except ImportError as e:
        fail(f"no PyTorch ({e}); run with the Python that has it")
    if not torch.cuda.is_available():
        fail("no GPU: torch.cuda.is_available() is False")
    if not os.path.isfile(args.bench_tool) or not os.access(args.bench_tool, os.X_OK):
        fail(f"no bench tool at {args.bench_tool}: build the target bench_model_latency (CUDA and libonnx)")
    args.bench_tool = os.path.abspath(args.bench_tool)
    os.makedirs(args.out, exist_ok=True)
    work_root = args.work or tempfile.mkdtemp(prefix="compare_torch_")
    os.makedirs(work_root, exist_ok=True)

    import transformers
    import torchvision
    report = {"environment": {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
                              "transformers": transformers.__version__, "torchvision": torchvision.__version__,
                              "cuda": torch.version.cuda},
              "iters": args.iters, "warmup": args.warmup, "quick": args.quick, "seed": args.seed,
              "tolerance": TOLERANCE_RULE, "work": work_root, "rows": []}
    print("measuring copy bandwidth and matmul rate", flush=True)
    report["peaks"] = measure_peaks(torch, args.iters)
    torch.cuda.empty_cache()
    print(f"  copy {report['peaks']['copy_gbps']:.0f} GB/s, fp16 matmul {report['peaks']['matmul_tflops']:.0f} TFLOP/s")
    family_cache = {}
    md_path = os.path.join(args.out, args.name + ".md")
    json_path = os.path.join(args.out, args.name + ".json")
    for case in selected_cases(args):
        print(f"{case[0]}: {case[2]} {case_shape_text(case[1], case[3])}", flush=True)
        report["rows"].append(run_row(torch, args, case, family_cache, report["peaks"], work_root))
        with open(json_path, "w") as f:  # after every row, so a later crash keeps the earlier ones
            json.dump(report, f, indent=1, default=str)
    text = markdown(report)
    with open(md_path, "w") as f:
        f.write(text)
    print()
    print(text)
    print(f"wrote {md_path} and {json_path}; exports and outputs in {work_root}")


if __name__ == "__main__":
    main()
