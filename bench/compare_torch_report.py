"""The numbers and tables of bench/compare_torch.py, with numpy only (its tests need no PyTorch):
summaries of times, the output check against PyTorch, the physical floor of a row, and the
Markdown report."""
import math

import numpy as np

REL_TOL = 2e-2
TOLERANCE_RULE = (
    f"an output passes when max|ours - torch_fp16| <= {REL_TOL:g} * max|torch_fp16| (max-norm "
    f"relative error against PyTorch eager in fp16) or, failing that, when max|ours - torch_fp32| "
    f"<= max({REL_TOL:g} * max|torch_fp32|, 2 * max|torch_fp16 - torch_fp32|) (as close to "
    f"PyTorch's fp32 result as that, or as PyTorch's own fp16 result is, with a factor of 2); "
    f"shapes must match, ours must be finite wherever the reference is, and integer outputs must "
    f"match exactly")


# ---- numbers ----------------------------------------------------------------------------------

def summarize_us(times):
    """Median, p90 (nearest rank, as bench_model_latency reports them), min and mean."""
    if not times:
        return None
    s = sorted(times)
    at = lambda q: s[int(q * (len(s) - 1) + 0.5)]
    return {"median": at(0.5), "p90": at(0.9), "min": s[0], "mean": sum(s) / len(s), "iters": len(s)}


def _max_abs(a):
    return float(np.max(np.abs(a))) if a.size else 0.0


def check_output(ours, ref16, ref32=None, rel_tol=REL_TOL):
    """Checks one output against PyTorch (see TOLERANCE_RULE). Returns a dict with "ok", "reason"
    and the relative errors measured."""
    ours = np.asarray(ours)
    ref16 = np.asarray(ref16)
    out = {"ok": False, "reason": ""}
    if ours.shape != ref16.shape:
        out["reason"] = f"shape {list(ours.shape)}, PyTorch gives {list(ref16.shape)}"
        return out
    if not np.issubdtype(ref16.dtype, np.floating):
        same = bool(np.array_equal(ours, ref16))
        out.update(ok=same, reason="" if same else "integer output differs")
        return out
    a = ours.astype(np.float64)
    r = ref16.astype(np.float64)
    finite16 = np.isfinite(r)
    bad = int(np.sum(~np.isfinite(a[finite16])))
    if bad:
        out["reason"] = f"{bad} non-finite values where PyTorch's are finite"
        return out
    scale = _max_abs(r[finite16])
    err = _max_abs(a[finite16] - r[finite16])
    out["rel_err"] = err / scale if scale > 0 else (0.0 if err == 0 else math.inf)
    ok = bool(np.all(finite16)) and out["rel_err"] <= rel_tol
    if ref32 is not None:
        r32 = np.asarray(ref32, dtype=np.float64)
        if r32.shape == a.shape and np.all(np.isfinite(r32)) and np.all(np.isfinite(a)):
            scale32 = _max_abs(r32)
            ours32 = _max_abs(a - r32)
            out["rel_err_vs_fp32"] = ours32 / scale32 if scale32 > 0 else 0.0
            bound = rel_tol * scale32
            if np.all(finite16):
                torch32 = _max_abs(r - r32)
                out["torch_fp16_rel_err_vs_fp32"] = torch32 / scale32 if scale32 > 0 else 0.0
                bound = max(bound, 2 * torch32)
            if not ok and ours32 <= bound:
                ok = True
                out["passed_by"] = "the fp32 rule"
    out["ok"] = ok
    if not ok:
        out["reason"] = (f"PyTorch fp16 gives {int(np.sum(~finite16))} non-finite values" if not np.all(finite16)
                         else f"relative error {out['rel_err']:.3g} > {rel_tol:g}")
    return out


def check_outputs(ours_list, ref16_list, ref32_list=None):
    """All outputs of one run; the worst one decides. None inputs mean the output is missing."""
    if len(ours_list) != len(ref16_list):
        return {"ok": False, "reason": f"{len(ours_list)} outputs, PyTorch gives {len(ref16_list)}"}
    worst = {"ok": True, "reason": "", "rel_err": 0.0}
    for i, (o, r) in enumerate(zip(ours_list, ref16_list)):
        if o is None:
            return {"ok": False, "reason": f"output {i} was not written"}
        c = check_output(o, r, None if ref32_list is None else ref32_list[i])
        if not c["ok"]:
            c["reason"] = f"output {i}: {c['reason']}"
            return c
        if c.get("rel_err", 0.0) >= worst.get("rel_err", 0.0):
            worst = c
    return worst


def weight_bytes(tensors, lookups):
    """Bytes of weights a forward must read at least once. `tensors`: (numel, itemsize,
    row_size) per distinct weight, row_size set for a table read only by lookups (an embedding)
    and None otherwise; `lookups`: rows looked up in each such table per forward."""
    total = 0
    for numel, itemsize, row_size in tensors:
        read = numel if row_size is None else min(numel, lookups * row_size)
        total += read * itemsize
    return total


def floor_us(nbytes, flops, copy_gbps, matmul_tflops):
    """The physical floor of one forward: the slower of moving `nbytes` at the copy bandwidth
    and computing `flops` at the matmul rate."""
    memory = nbytes / (copy_gbps * 1e9) * 1e6 if copy_gbps else None
    compute = flops / (matmul_tflops * 1e12) * 1e6 if (matmul_tflops and flops is not None) else None
    parts = [(v, name) for v, name in ((memory, "memory"), (compute, "compute")) if v is not None]
    if not parts:
        return None
    us, bound = max(parts)
    return {"us": us, "bound": bound, "memory_us": memory, "compute_us": compute,
            "bytes": nbytes, "flops": flops}


# ---- the tables -------------------------------------------------------------------------------

def short_error(text, limit=70):
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[:limit - 3] + "..."


def latency_cell(part, floor):
    """'median / p90 (k.k× floor)' for a checked time; the error or failed check otherwise."""
    if part is None:
        return "-"
    if part.get("error"):
        return "error: " + short_error(part["error"])
    check = part.get("check")
    if check is not None and not check.get("ok"):
        return "wrong: " + short_error(check.get("reason", ""))
    us = part.get("us")
    if not us:
        return "-"
    text = f"{us['median']:.1f} / {us['p90']:.1f}"
    if floor and floor.get("us"):
        text += f" ({us['median'] / floor['us']:.1f}x)"
    return text


def reported_median(part):
    """The median of a part whose check passed, else None."""
    if not part or part.get("error") or not part.get("us"):
        return None
    if part.get("check") is not None and not part["check"].get("ok"):
        return None
    return part["us"]["median"]


def ratio_cell(peer, ours):
    """Peer time over ours (> 1: graphfuse is faster)."""
    p, o = reported_median(peer), reported_median(ours)
    if p is None or o is None or o <= 0:
        return "-"
    return f"{p / o:.2f}"


def seconds_cell(v):
    return "-" if v is None else f"{v:.2f}"


def markdown(report):
    """The report as Markdown: a header, the latency table, the compile/correctness table and
    the full text of every error."""
    lines = []
    env = report.get("environment", {})
    peaks = report.get("peaks") or {}
    lines.append("# graphfuse against PyTorch")
    lines.append("")
    lines.append(f"{env.get('device', '?')}; torch {env.get('torch', '?')}, transformers "
                 f"{env.get('transformers', '?')}, torchvision {env.get('torchvision', '?')}; "
                 f"copy {peaks.get('copy_gbps', 0):.0f} GB/s (read + write), fp16 matmul "
                 f"{peaks.get('matmul_tflops', 0):.0f} TFLOP/s (measured in this run).")
    lines.append("")
    lines.append(f"Latency in µs: median / p90 of {report.get('iters')} calls after "
                 f"{report.get('warmup')} warm-ups (CUDA events, waited each call), and in "
                 f"brackets the median over the row's floor. x peer: the peer's median over "
                 f"graphfuse's device run (> 1: graphfuse is faster). A time is shown only when "
                 f"its outputs passed the check. GPT-2 step: one token, no KV cache.")
    lines.append("")
    head = ["model", "input", "floor µs", "graphfuse", "graphfuse in caller graph", "eager",
            "CUDA graph", "torch.compile", "x eager", "x CUDA graph", "x compile"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "|".join("---" for _ in head) + "|")
    notes = []
    for row in report.get("rows", []):
        floor = row.get("floor")
        gf = row.get("graphfuse") or {}
        tr = row.get("torch") or {}
        if row.get("error"):
            notes.append(f"{row['label']} {row['shape']}: {row['error']}")
        floor_text = "-" if not floor else f"{floor['us']:.1f} ({floor['bound']})"
        run = gf.get("run")
        # Without a run, the graphfuse cell says why: its error, else the row's.
        failure = gf.get("error") or row.get("error")
        cells = [row["label"], row["shape"], floor_text,
                 latency_cell(run, floor) if run else ("error: " + short_error(failure) if failure else "-"),
                 latency_cell(gf.get("caller_graph"), floor),
                 latency_cell(tr.get("eager"), floor), latency_cell(tr.get("cuda_graph"), floor),
                 latency_cell(tr.get("compile"), floor),
                 ratio_cell(tr.get("eager"), run), ratio_cell(tr.get("cuda_graph"), run),
                 ratio_cell(tr.get("compile"), run)]
        lines.append("| " + " | ".join(cells) + " |")
        for name, part in (("graphfuse", gf), ("graphfuse run", run), ("graphfuse caller graph", gf.get("caller_graph")),
                           ("eager", tr.get("eager")), ("CUDA graph", tr.get("cuda_graph")),
                           ("torch.compile", tr.get("compile"))):
            if part and part.get("error"):
                notes.append(f"{row['label']} {row['shape']} {name}: {part['error']}")
            elif part and part.get("check") and not part["check"].get("ok"):
                notes.append(f"{row['label']} {row['shape']} {name}: outputs disagree with PyTorch: "
                             f"{part['check'].get('reason')}")
        for a in (row.get("export") or {}).get("attempts", []):  # candidates left behind, and why
            what = f"{row['label']} {row['shape']} {a.get('dtype')} {a.get('exporter')} export"
            if a.get("export_error"):
                notes.append(f"{what} failed: {a['export_error']}")
            elif a.get("graphfuse_error") and a["graphfuse_error"] != short_error(gf.get("error"), 500):
                notes.append(f"{what}, graphfuse: {a['graphfuse_error']}")
        if gf.get("warm_error"):
            notes.append(f"{row['label']} {row['shape']} graphfuse warm compile: {gf['warm_error']}")
    lines.append("")
    head = ["model", "input", "export", "graphfuse compile s (cold / warm / warm, library set-up inside)",
            "caller graph build s",
            "CUDA graph capture s", "torch.compile first call s", "graphfuse program",
            "rel. error (graphfuse; PyTorch fp16 vs fp32)"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "|".join("---" for _ in head) + "|")
    for row in report.get("rows", []):
        gf = row.get("graphfuse") or {}
        tr = row.get("torch") or {}
        ex = row.get("export") or {}
        export = f"{ex.get('exporter', '?')} {ex.get('dtype', '?')}" if ex.get("exporter") else "-"
        if gf.get("precision"):
            export += f", --precision {gf['precision']}"
        st = gf.get("stats") or {}
        program = "-"
        if st:
            program = (f"{'graph' if st.get('graph_mode') else 'eager'}, {st.get('graph_nodes', 0)} nodes, "
                       f"{st.get('fused_kernels', 0)} kernels, {st.get('library_calls', 0)} library calls, "
                       f"{st.get('host_steps', 0)} host steps")
        check = (gf.get("run") or {}).get("check") or {}
        err = "-"
        if "rel_err" in check:
            err = f"{check['rel_err']:.2g}"
            if "torch_fp16_rel_err_vs_fp32" in check:
                err += f"; {check['torch_fp16_rel_err_vs_fp32']:.2g}"
        cells = [row["label"], row["shape"], export,
                 f"{seconds_cell(gf.get('compile_s_cold'))} / {seconds_cell(gf.get('compile_s_warm'))} / "
                 f"{seconds_cell(gf.get('compile_s_warm_late_setup'))}",
                 seconds_cell((gf.get("caller_graph") or {}).get("build_s")),
                 seconds_cell((tr.get("cuda_graph") or {}).get("capture_s")),
                 seconds_cell((tr.get("compile") or {}).get("compile_s")), program, err]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("Tolerance: " + TOLERANCE_RULE + ".")
    lines.append("")
    lines.append("Floor: max(bytes / copy bandwidth, flops / fp16 matmul rate); bytes: each weight read "
                 "once (embedding tables: the rows looked up) plus inputs and outputs; flops: "
                 "PyTorch's FlopCounterMode over one eager forward.")
    if notes:
        lines.append("")
        lines.append("Errors:")
        lines.append("")
        for n in notes:
            lines.append("- " + " ".join(str(n).split()))
    return "\n".join(lines) + "\n"
