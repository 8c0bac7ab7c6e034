#!/usr/bin/env python3
"""bench/compare_torch.py without PyTorch: its output check, floor, tables and the way it runs
the bench tool, against hand-computed values. The module must import without torch.

    python3 tests/bench/test_compare_torch.py
"""
import os
import stat
import sys
import tempfile
import unittest

import numpy as np

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench")
sys.path.insert(0, BENCH)

import compare_torch  # noqa: E402  (after the path)
import compare_torch_report as rep  # noqa: E402


class ImportTest(unittest.TestCase):
    def test_imports_without_torch(self):
        for name in ("torch", "transformers", "torchvision"):
            self.assertNotIn(name, sys.modules, f"importing compare_torch imported {name}")


class SummaryTest(unittest.TestCase):
    def test_median_p90_min_mean_by_nearest_rank(self):
        s = rep.summarize_us([5.0, 1.0, 4.0, 2.0, 3.0])
        # 5 values: median at rank round(0.5 * 4) = 2, p90 at round(0.9 * 4) = 4 (0-based).
        self.assertEqual(s, {"median": 3.0, "p90": 5.0, "min": 1.0, "mean": 3.0, "iters": 5})
        self.assertIsNone(rep.summarize_us([]))


class CheckTest(unittest.TestCase):
    ref = np.array([[1.0, -2.0], [0.5, 0.25]], dtype=np.float32)  # max |ref| = 2

    def test_error_below_two_percent_of_the_largest_value_passes(self):
        ours = self.ref + np.array([[0.0, 0.039], [0.0, 0.0]], dtype=np.float32)  # 1.95% of 2
        c = rep.check_output(ours, self.ref)
        self.assertTrue(c["ok"], c)
        self.assertAlmostEqual(c["rel_err"], 0.0195, places=6)

    def test_error_above_two_percent_fails_and_says_by_how_much(self):
        ours = self.ref.copy()
        ours[1, 1] += 0.041  # 2.05% of 2
        c = rep.check_output(ours, self.ref)
        self.assertFalse(c["ok"])
        self.assertIn("relative error 0.0205 > 0.02", c["reason"])

    def test_nan_where_pytorch_is_finite_fails(self):
        ours = self.ref.copy()
        ours[0, 0] = np.nan
        c = rep.check_output(ours, self.ref)
        self.assertFalse(c["ok"])
        self.assertIn("1 non-finite", c["reason"])

    def test_shape_mismatch_fails(self):
        c = rep.check_output(self.ref.reshape(4), self.ref)
        self.assertFalse(c["ok"])
        self.assertIn("shape [4], PyTorch gives [2, 2]", c["reason"])

    def test_integer_outputs_must_match_exactly(self):
        a = np.array([1, 2, 3], dtype=np.int64)
        self.assertTrue(rep.check_output(a, a.copy())["ok"])
        self.assertFalse(rep.check_output(a + np.array([0, 0, 1]), a)["ok"])

    def test_fp32_rule_accepts_what_is_as_close_to_fp32_as_pytorch_fp16(self):
        ref32 = np.array([10.0, 0.0, -5.0])
        ref16 = ref32 + np.array([0.5, 0.0, 0.0])  # PyTorch's own fp16 error: 0.5 (5% of 10)
        ours = ref32 + np.array([-0.9, 0.0, 0.0])  # 14% from ref16, 0.9 <= 2 * 0.5 from ref32
        c = rep.check_output(ours, ref16, ref32)
        self.assertTrue(c["ok"], c)
        self.assertEqual(c["passed_by"], "the fp32 rule")
        self.assertAlmostEqual(c["torch_fp16_rel_err_vs_fp32"], 0.05)
        far = ref32 + np.array([-1.1, 0.0, 0.0])  # 1.1 > 2 * 0.5 and > 2% of 10
        self.assertFalse(rep.check_output(far, ref16, ref32)["ok"])

    def test_overflowed_pytorch_fp16_leaves_the_two_percent_rule_against_fp32(self):
        ref32 = np.array([70000.0, 1.0])
        ref16 = np.array([np.inf, 1.0])
        self.assertTrue(rep.check_output(np.array([70500.0, 1.0]), ref16, ref32)["ok"])  # 0.7%
        c = rep.check_output(np.array([75000.0, 1.0]), ref16, ref32)  # 7%
        self.assertFalse(c["ok"])
        self.assertIn("PyTorch fp16 gives 1 non-finite", c["reason"])

    def test_every_output_is_checked_and_a_missing_one_fails(self):
        good, bad = self.ref, self.ref * 1.5
        self.assertTrue(rep.check_outputs([good, good], [good, good])["ok"])
        c = rep.check_outputs([good, bad], [good, good])
        self.assertFalse(c["ok"])
        self.assertTrue(c["reason"].startswith("output 1:"), c["reason"])
        self.assertIn("not written", rep.check_outputs([None], [good])["reason"])
        self.assertIn("1 outputs, PyTorch gives 2", rep.check_outputs([good], [good, good])["reason"])


class FloorTest(unittest.TestCase):
    def test_embedding_tables_count_the_rows_looked_up(self):
        # A 100-element f16 matrix, and a 100-row f16 table of 10-element rows read by lookups.
        tensors = [(100, 2, None), (1000, 2, 10)]
        self.assertEqual(rep.weight_bytes(tensors, lookups=3), 100 * 2 + 3 * 10 * 2)
        self.assertEqual(rep.weight_bytes(tensors, lookups=500), 100 * 2 + 1000 * 2)  # at most the table

    def test_floor_is_the_slower_of_memory_and_compute(self):
        f = rep.floor_us(4.3e9, 1.58e12, copy_gbps=4300, matmul_tflops=790)
        self.assertAlmostEqual(f["memory_us"], 1000.0)
        self.assertAlmostEqual(f["compute_us"], 2000.0)
        self.assertEqual((f["bound"], round(f["us"], 6)), ("compute", 2000.0))
        g = rep.floor_us(4.3e9, None, copy_gbps=4300, matmul_tflops=790)
        self.assertEqual((g["bound"], round(g["us"], 6)), ("memory", 1000.0))


def lat(median, p90):
    return {"median": median, "p90": p90, "min": median, "mean": median, "iters": 10}


OK = {"ok": True, "reason": ""}


class TableTest(unittest.TestCase):
    def report(self):
        good = {"id": "a", "label": "GPT-2 step", "shape": "1x1",
                "floor": {"us": 50.0, "bound": "memory"},
                "export": {"exporter": "dynamo", "dtype": "fp16",
                           "attempts": [{"dtype": "fp16", "exporter": "dynamo", "graphfuse_error": "no kernel for X"},
                                        {"dtype": "fp16", "exporter": "torchscript", "export_error": "aten::foo"}]},
                "graphfuse": {"precision": "fp32", "compile_s_cold": 3.25, "compile_s_warm": 0.5,
                              "compile_s_warm_late_setup": 0.625,
                              "stats": {"graph_mode": True, "graph_nodes": 40, "fused_kernels": 30,
                                        "library_calls": 9, "host_steps": 0},
                              "run": {"us": lat(100.0, 110.0), "check": dict(OK, rel_err=0.004)},
                              "caller_graph": {"us": lat(104.0, 120.0), "build_s": 0.01, "check": OK}},
                "torch": {"eager": {"us": lat(200.0, 230.0), "check": OK},
                          "cuda_graph": {"us": lat(150.0, 160.0), "capture_s": 0.2, "check": OK},
                          "compile": {"error": "compile broke\nwith two lines"}}}
        failing = {"id": "b", "label": "BERT-base", "shape": "8x128", "floor": None,
                   "graphfuse": {"error": "bench_model_latency: error: node 'Foo' (op Bar): unsupported attribute 'mode'"},
                   "torch": {"eager": {"us": lat(300.0, 310.0), "check": OK}}}
        wrong = {"id": "c", "label": "ResNet-50", "shape": "1x3x224x224", "floor": {"us": 10.0, "bound": "compute"},
                 "graphfuse": {"run": {"us": lat(90.0, 95.0), "check": {"ok": False, "reason": "relative error 0.5 > 0.02"}}},
                 "torch": {"eager": {"us": lat(300.0, 310.0), "check": OK}}}
        crashed = {"id": "d", "label": "ResNet-50", "shape": "32x3x224x224", "error": "RuntimeError: out of memory"}
        return {"environment": {"device": "H200"}, "peaks": {"copy_gbps": 4300, "matmul_tflops": 790},
                "iters": 10, "warmup": 2, "rows": [good, failing, wrong, crashed]}

    def test_the_table_shows_checked_times_ratios_and_errors(self):
        text = rep.markdown(self.report())
        lines = text.splitlines()
        good = next(l for l in lines if l.startswith("| GPT-2 step | 1x1 | 50.0 (memory)"))
        cells = [c.strip() for c in good.strip("|").split("|")]
        # graphfuse, caller graph, eager, CUDA graph, torch.compile, then the three ratios.
        self.assertEqual(cells[3:11], ["100.0 / 110.0 (2.0x)", "104.0 / 120.0 (2.1x)", "200.0 / 230.0 (4.0x)",
                                       "150.0 / 160.0 (3.0x)", "error: compile broke with two lines",
                                       "2.00", "1.50", "-"])
        failing = next(l for l in lines if l.startswith("| BERT-base | 8x128 |"))
        # Cut to 70 characters in the table.
        self.assertIn("| error: bench_model_latency: error: node 'Foo' (op Bar): unsupported attrib... |", failing)
        wrong = next(l for l in lines if l.startswith("| ResNet-50 | 1x3x224x224 |"))
        self.assertIn("wrong: relative error 0.5 > 0.02", wrong)
        self.assertNotIn("90.0", wrong)  # an unchecked time is never shown
        self.assertTrue(wrong.rstrip().endswith("| - | - | - |"))  # nor compared
        # The second table: compile times and the program's shape.
        self.assertIn("| GPT-2 step | 1x1 | dynamo fp16, --precision fp32 | 3.25 / 0.50 / 0.62 | 0.01 | 0.20 | - | "
                      "graph, 40 nodes, 30 kernels, 9 library calls, 0 host steps | 0.004 |", text)
        # Every error in full below the tables, the crashed row too.
        self.assertIn("- BERT-base 8x128 graphfuse: bench_model_latency: error: node 'Foo' (op Bar): unsupported "
                      "attribute 'mode'\n", text)
        self.assertIn("- ResNet-50 32x3x224x224: RuntimeError: out of memory", text)
        self.assertIn("| ResNet-50 | 32x3x224x224 | - | error: RuntimeError: out of memory |", text)
        self.assertIn("- ResNet-50 1x3x224x224 graphfuse run: outputs disagree with PyTorch: relative error 0.5", text)
        self.assertIn("- GPT-2 step 1x1 fp16 dynamo export, graphfuse: no kernel for X", text)
        self.assertIn("- GPT-2 step 1x1 fp16 torchscript export failed: aten::foo", text)
        self.assertIn("Tolerance: " + rep.TOLERANCE_RULE, text)


class ArgsTest(unittest.TestCase):
    def test_quick_keeps_the_models_and_shrinks_the_large_shapes(self):
        args = compare_torch.parse_args(["--quick", "--models", "gpt2,resnet50"])
        cases = {c[0]: c[3] for c in compare_torch.selected_cases(args)}
        self.assertEqual(cases, {"gpt2_step_b1": {"batch": 1, "seq": 1}, "gpt2_step_b8": {"batch": 8, "seq": 1},
                                 "gpt2_prefill_b1": {"batch": 1, "seq": 16}, "resnet50_b1": {"batch": 1},
                                 "resnet50_b32": {"batch": 2}})

    def test_unknown_names_are_refused(self):
        with open(os.devnull, "w") as null:
            stderr, sys.stderr = sys.stderr, null
            try:
                with self.assertRaises(SystemExit):
                    compare_torch.parse_args(["--models", "llama"])
                with self.assertRaises(SystemExit):
                    compare_torch.parse_args(["--cases", "gpt2_step_b2"])
            finally:
                sys.stderr = stderr


class BenchToolTest(unittest.TestCase):
    """run_bench_tool against a stand-in script: the arguments and cache folder it passes, and
    how a failure comes back."""

    def tool(self, folder, body):
        path = os.path.join(folder, "tool.sh")
        with open(path, "w") as f:
            f.write("#!/bin/sh\n" + body)
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
        return path

    def test_passes_inputs_and_the_cache_folder_and_reads_the_json(self):
        with tempfile.TemporaryDirectory() as d:
            # Writes its arguments and XDG_CACHE_HOME into the --json file (the last argument
            # pair but the inputs: find it by name).
            tool = self.tool(d, 'while [ "$1" != "--json" ]; do shift; done\n'
                                'printf \'{"cache": "%s", "run_us": {"median": 1}}\' "$XDG_CACHE_HOME" > "$2"\n')
            figures, cmd = compare_torch.run_bench_tool(tool, "m.onnx", [("x", "x.npy")], "fp16", 7, 3,
                                                        os.path.join(d, "out"), "/some/cache", 60)
        self.assertEqual(figures, {"cache": "/some/cache", "run_us": {"median": 1}})
        self.assertEqual(cmd[1:8], ["m.onnx", "--precision", "fp16", "--iters", "7", "--warmup", "3"])
        self.assertEqual(cmd[-2:], ["--input", "x=x.npy"])

    def test_extra_arguments_go_before_the_inputs(self):
        with tempfile.TemporaryDirectory() as d:
            tool = self.tool(d, 'while [ "$1" != "--json" ]; do shift; done\n'
                                'echo \'{}\' > "$2"\n')
            _, cmd = compare_torch.run_bench_tool(tool, "m.onnx", [("x", "x.npy")], "fp16", 0, 0, d, d, 60,
                                                  ("--early-setup", "off"))
        self.assertEqual(cmd[-4:], ["--early-setup", "off", "--input", "x=x.npy"])

    def test_a_failure_comes_back_with_its_message_and_stage(self):
        with tempfile.TemporaryDirectory() as d:
            tool = self.tool(d, 'while [ "$1" != "--json" ]; do shift; done\n'
                                'echo \'{"error": "bad node", "stage": "import"}\' > "$2"\n'
                                'echo "bench_model_latency: error: bad node" >&2; exit 1\n')
            figures, _ = compare_torch.run_bench_tool(tool, "m.onnx", [], "fp32", 1, 0, d, d, 60)
            self.assertEqual((figures["error"], figures["stage"], figures["exit_status"]), ("bad node", "import", 1))
            silent = self.tool(d, 'echo "bench_model_latency: no CUDA device: none" >&2; exit 2\n')
            figures, _ = compare_torch.run_bench_tool(silent, "m.onnx", [], "fp32", 1, 0, d, d, 60)
            self.assertEqual(figures, {"error": "bench_model_latency: no CUDA device: none", "exit_status": 2})


if __name__ == "__main__":
    unittest.main()
