#!/usr/bin/env bash
# End-to-end checks of the command-line tool: exit codes and the one-line error contract.
# Bad model files are written into a temp dir from the blobs below (small ONNX models made with
# onnx.helper, opset 17, IR 8; base64 so the script needs no Python).
set -u
bin="$1"
passed=0
failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check() {  # check NAME EXPECTED_EXIT PATTERN -- ARGS...
  local name="$1" want="$2" pattern="$3"
  shift 4
  local out rc
  out=$(timeout 60 "$bin" "$@" 2>&1)
  rc=$?
  if [ "$rc" != "$want" ] || ! grep -qE "$pattern" <<<"$out"; then
    echo "FAIL $name: exit $rc (want $want), output:"
    echo "$out" | head -20
    failed=$((failed + 1))
  else
    echo "ok   $name"
    passed=$((passed + 1))
  fi
}

check_one_line_error() {  # check_one_line_error NAME -- ARGS...: stderr is exactly one error: line
  local name="$1"
  shift 2
  local err
  err=$(timeout 60 "$bin" "$@" 2>&1 >/dev/null)
  if [ "$(wc -l <<<"$err")" != 1 ] || ! grep -q '^error: ' <<<"$err"; then
    echo "FAIL $name: stderr was:"
    echo "$err" | head -5
    failed=$((failed + 1))
  else
    echo "ok   $name"
    passed=$((passed + 1))
  fi
}

model() { base64 -d >"$tmp/$1.onnx" <<<"$2"; }
# Relu over x: f32[2,3].
model relu 'CAgSADo7CgwKAXgSAXkiBFJlbHUSAWdaEwoBeBIOCgwIARIICgIIAgoCCANiEwoBeRIOCgwIARIICgIIAgoCCANCBAoAEBE='
# Node 'frob' of op type FrobnicateV2.
model unknown_op 'CAgSADpJChoKAXgSAXkaBGZyb2IiDEZyb2JuaWNhdGVWMhIBZ1oTCgF4Eg4KDAgBEggKAggCCgIIA2ITCgF5Eg4KDAgBEggKAggCCgIIA0IECgAQEQ=='
# Add 'add' reads 'w', which nothing defines.
model missing_init 'CAgSADpCChMKAXgKAXcSAXkaA2FkZCIDQWRkEgFnWhMKAXgSDgoMCAESCAoCCAIKAggDYhMKAXkSDgoMCAESCAoCCAIKAggDQgQKABAR'
# first: a = x + b; second: b = Relu(a).
model cycle 'CAgSADpaChUKAXgKAWISAWEaBWZpcnN0IgNBZGQKFAoBYRIBYhoGc2Vjb25kIgRSZWx1EgFnWhMKAXgSDgoMCAESCAoCCAIKAggDYhMKAWISDgoMCAESCAoCCAIKAggDQgQKABAR'
# x: f32[2,-3].
model neg_dim 'CAgSADpECgwKAXgSAXkiBFJlbHUSAWdaHAoBeBIXChUIARIRCgIIAgoLCP3//////////wFiEwoBeRIOCgwIARIICgIIAgoCCANCBAoAEBE='
# x: f32[2^50].
model absurd_dim 'CAgSADpBCgwKAXgSAXkiBFJlbHUSAWdaFgoBeBIRCg8IARILCgkIgICAgICAgAJiFgoBeRIRCg8IARILCgkIgICAgICAgAJCBAoAEBE='
# Initializer w: f32[2^20, 2^20] with 16 bytes of data.
model absurd_init 'CAgSADpjChMKAXgKAXcSAXkaA2FkZCIDQWRkEgFnKh8IgIBACICAQBABQgF3ShAAAAAAAAAAAAAAAAAAAAAAWhMKAXgSDgoMCAESCAoCCAIKAggDYhMKAXkSDgoMCAESCAoCCAIKAggDQgQKABAR'
head -c 40 "$tmp/relu.onnx" >"$tmp/truncated.onnx"
# Bytes that are not a protobuf message (a deterministic pattern, not /dev/urandom).
for i in $(seq 1 64); do printf '\xff\xfe\x07\x80'; done >"$tmp/random.onnx"

npy() {  # npy FILE DESCR SHAPE NBYTES: a .npy v1.0 file of zeros (header padded to 128 bytes)
  local header="{'descr': '$2', 'fortran_order': False, 'shape': $3, }"
  { printf '\x93NUMPY\x01\x00\x76\x00%-117s\n' "$header"; head -c "$4" /dev/zero; } >"$tmp/$1"
}
npy good.npy '<f4' '(2, 3)' 24
npy rank1.npy '<f4' '(6,)' 24
npy int64.npy '<i8' '(2, 3)' 48
npy short.npy '<f4' '(2, 3)' 10

check help 0 'demo' -- --help
check no_subcommand 1 '^error: ' --
check unknown_subcommand 1 '^error: ' -- frobnicate
check demo_runs 0 'output y: f32\[1,8,64\]' -- demo --layers 2 --d-model 64 --heads 4 --batch 1 --seq 8 --iterations 2
check demo_bad_heads 1 '^error: .*divisible' -- demo --d-model 30 --heads 4
check demo_bad_device 1 "^error: --device must be" -- demo --device tpu
check devices 0 '^cpu: available' -- devices
check plan_builtin 0 'plan for gpt2_stack on h200: 94 nodes -> 29 kernels' -- plan builtin:gpt2
check plan_explain 0 'fused +epilogue' -- plan builtin:gpt2 --explain --target cpu
check plan_explain_passes 0 '  cse +[0-9]+ changes, +[0-9]+ nodes after, +[0-9.]+ ms' -- plan builtin:gpt2 --explain
check plan_json 0 '"kernel_count": 29' -- plan builtin:gpt2 --json /dev/stdout
check plan_dot 0 'wrote .*plan.dot' -- plan builtin:gpt2 --dot "$tmp/plan.dot"
check plan_bad_target 1 "^error: --target must be h200 or cpu" -- plan builtin:gpt2 --target tpu
check plan_missing_file 1 "^error: cannot open" -- plan "$tmp/nope.onnx"
check_one_line_error error_is_one_line -- demo --device tpu

# graphfuse run: a good model, then one bad file per failure class.
check run_relu 0 'output y: f32\[2,3\]' -- run "$tmp/relu.onnx" --iterations 2 --json "$tmp/r.json" --output-dir "$tmp/out"
check run_relu_json 0 '"latency_us": \{"min"' -- run "$tmp/relu.onnx" --iterations 1 --json /dev/stdout
# One warm-up and two timed runs: one program compiled, two cache hits.
check run_relu_json_cache 0 '"programs_compiled": 1, "program_cache_hits": 2, "program_cache_misses": 1, "program_evictions": 0, "cuda_graph_programs": 0, "cached_programs": 1, "cached_program_bytes": [0-9]+, "shared_arena_bytes": 0, "padded_runs": 0\}' -- run "$tmp/relu.onnx" --iterations 2 --json /dev/stdout
check run_relu_json_fallbacks 0 '"fallback_nodes": 0, "fallback_reasons": \[\]' -- run "$tmp/relu.onnx" --iterations 1 --json /dev/stdout
check run_relu_input 0 'latency over 1 runs' -- run "$tmp/relu.onnx" --iterations 1 --input "x=$tmp/good.npy"
check run_missing_file 1 "^error: cannot open '.*nope.onnx'" -- run "$tmp/nope.onnx"
check run_truncated 1 "^error: '.*truncated.onnx': not a valid ONNX model" -- run "$tmp/truncated.onnx"
check run_random_bytes 1 "^error: '.*random.onnx': not a valid ONNX model" -- run "$tmp/random.onnx"
check run_unknown_op 1 "^error: node 'frob' \(FrobnicateV2\) of domain 'ai.onnx'" -- run "$tmp/unknown_op.onnx"
check run_missing_initializer 1 "^error: node 'add' \(Add\) reads 'w'" -- run "$tmp/missing_init.onnx"
check run_cycle 1 '^error: the graph has a cycle' -- run "$tmp/cycle.onnx"
check run_negative_dim 1 "^error: input 'x' has a negative dimension -3" -- run "$tmp/neg_dim.onnx"
check run_absurd_dim 1 "^error: input 'x' has an absurd dimension" -- run "$tmp/absurd_dim.onnx"
check run_absurd_initializer 1 "^error: '.*absurd_init.onnx': initializer 'w' \(f32\[1048576,1048576\]\) holds 16 bytes" -- run "$tmp/absurd_init.onnx"
check run_input_wrong_rank 1 "^error: .*'x'.*f32\[2,3\].*" -- run "$tmp/relu.onnx" --input "x=$tmp/rank1.npy"
check run_input_wrong_dtype 1 "^error: input 'x' \(declared f32\[2,3\]\) got i64\[2,3\]" -- run "$tmp/relu.onnx" --input "x=$tmp/int64.npy"
check run_input_truncated_npy 1 "^error: '.*short.npy': the data holds 10 bytes" -- run "$tmp/relu.onnx" --input "x=$tmp/short.npy"
check run_shape_wrong_rank 1 "^error: .*'x' is declared f32\[2,3\]" -- run "$tmp/relu.onnx" --shape x=6
check run_shape_bad_syntax 1 "^error: --shape 'x=2by3'" -- run "$tmp/relu.onnx" --shape x=2by3
if "$bin" devices | grep -q '^cuda:[0-9]'; then
  check run_cuda 0 'output y: f32\[2,3\]' -- run "$tmp/relu.onnx" --device cuda --iterations 1
else
  check run_cuda 1 '^error: cannot run on cuda' -- run "$tmp/relu.onnx" --device cuda
fi
check run_precision_bad 1 "^error: --precision must be fp32, tf32, fp16 or bf16, got 'fp8'" -- run "$tmp/relu.onnx" --precision fp8
check run_precision_fp16_cpu 1 '^error: --precision fp16 needs --device cuda' -- run "$tmp/relu.onnx" --precision fp16
check run_precision_bf16_cpu 1 '^error: --precision bf16 needs --device cuda' -- run "$tmp/relu.onnx" --precision bf16 --device cpu
check run_precision_tf32_cpu 0 'output y: f32\[2,3\]' -- run "$tmp/relu.onnx" --precision tf32 --iterations 1
check run_mode_bad 1 "^error: --mode must be eager or graph, not 'fast'" -- run "$tmp/relu.onnx" --mode fast
check run_programmatic_launch_bad 1 "^error: --programmatic-launch must be on or off, not 'maybe'" -- run "$tmp/relu.onnx" --programmatic-launch maybe
check run_compile_seconds_json 0 '"compile_seconds": \{"passes": [0-9.]+, "steps": 0.000000, "libraries": 0.000000, ' -- run "$tmp/relu.onnx" --programmatic-launch off --iterations 1 --json /dev/stdout
check run_skinny_gemm_bad 1 "^error: --skinny-gemm must be auto, always or off, not 'on'" -- run "$tmp/relu.onnx" --skinny-gemm on
check run_skinny_prefetch_bad 1 "^error: --skinny-prefetch must be at least 0, not -1" -- run "$tmp/relu.onnx" --skinny-prefetch -1
check run_skinny_prefetch_2 0 'output y: f32\[2,3\]' -- run "$tmp/relu.onnx" --skinny-prefetch 2 --iterations 1
check run_attention_bad 1 "^error: --attention must be auto, generated or cudnn, not 'flash'" -- run "$tmp/relu.onnx" --attention flash
check run_gemm_library_bad 1 "^error: --gemm-library must be auto, cublaslt, cudnn, timed or generated, not 'cublas'" -- run "$tmp/relu.onnx" --gemm-library cublas
check run_intermediates_bad 1 "^error: --intermediates must be rounded or f32, not 'f16'" -- run "$tmp/relu.onnx" --intermediates f16
check run_intermediates_f32 0 'output y: f32\[2,3\]' -- run "$tmp/relu.onnx" --intermediates f32 --iterations 1
check run_skinny_gemm_json 0 '"library_calls": 0, "skinny_gemm_steps": 0, "cudnn_attention_steps": 0, "cudnn_gemm_steps": 0, "tensor_core_gemm_steps": 0, "tuned_gemms": 0, "direct_bindings": 0, ' -- run "$tmp/relu.onnx" --skinny-gemm off --iterations 1 --json /dev/stdout
for choice in auto always; do
  check "run_skinny_gemm_$choice" 0 'output y: f32\[2,3\]' -- run "$tmp/relu.onnx" --skinny-gemm "$choice" --iterations 1
done
check run_builtin 0 'output y: f32\[1,8,256\]' -- run builtin:gpt2 --shape x=1x8x256 --cpu-backend reference --iterations 1
check run_builtin_unbound 1 "^error: input 'x' has dynamic shape" -- run builtin:gpt2
check run_builtin_unknown 1 "^error: unknown built-in model 'builtin:nope'" -- run builtin:nope
check_one_line_error run_precision_one_line -- run "$tmp/relu.onnx" --precision fp16
for bad in truncated random unknown_op missing_init cycle neg_dim absurd_dim absurd_init; do
  check_one_line_error "run_${bad}_one_line" -- run "$tmp/$bad.onnx"
done

# graphfuse conformance on a case folder made from the Relu model.
mkdir -p "$tmp/cases/test_relu/test_data_set_0"
cp "$tmp/relu.onnx" "$tmp/cases/test_relu/model.onnx"
check conformance_no_data 1 'conformance: 0 passed, 1 failed, 0 unsupported' -- conformance "$tmp/cases"
check conformance_filter_empty 1 '^error: no test cases' -- conformance "$tmp/cases" --filter nomatch
check conformance_bad_dir 1 "^error: .* is not a folder" -- conformance "$tmp/nope"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
