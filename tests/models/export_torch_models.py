#!/usr/bin/env python3
"""Exports the test models with torch.onnx (both exporters) on a machine with PyTorch.

Run where torch, transformers and torchvision are installed:
    python3 tests/models/export_torch_models.py OUT_DIR [--only NAME,NAME]

--only exports just the named models and merges their lines into OUT_DIR/export_report.json
(each model's line records the torch and transformers versions that wrote it).

For each model and exporter it writes OUT_DIR/<model>.<exporter>.onnx plus the input and the
PyTorch output of one fixed random input as .npy files, so tests can compare graphfuse against
PyTorch itself and against ONNX Runtime without PyTorch.

ResNet-50 keeps its full architecture, but its weights are stripped from the checked-in file to
keep the repository small: each large initializer is replaced by its statistics (mean, std, min,
max), and tests/models/fill_weights.py regenerates random weights from them before a test runs.
"""
import json
import os
import sys

import numpy as np
import onnx
import torch

STRIP_ABOVE = 4096  # elements; smaller initializers stay as they are


def export(model, args, path, dynamo, input_names, output_names, dynamic_axes=None):
    model.eval()
    with torch.no_grad():
        if dynamo:
            torch.onnx.export(model, args, path, dynamo=True, input_names=input_names,
                              output_names=output_names, external_data=False)
        else:
            torch.onnx.export(model, args, path, dynamo=False, opset_version=17,
                              input_names=input_names, output_names=output_names,
                              dynamic_axes=dynamic_axes)


def strip_weights(path):
    """Replaces large initializers by statistics stored in the model's metadata."""
    m = onnx.load(path)
    stats = {}
    for init in m.graph.initializer:
        arr = onnx.numpy_helper.to_array(init)
        if arr.size <= STRIP_ABOVE or arr.dtype != np.float32:
            continue
        stats[init.name] = {"mean": float(arr.mean()), "std": float(arr.std()),
                            "min": float(arr.min()), "max": float(arr.max())}
        dims = list(init.dims)
        init.ClearField("raw_data")
        init.ClearField("float_data")
        init.dims[:] = dims
    m.metadata_props.add(key="graphfuse.stripped_weights", value=json.dumps(stats))
    onnx.save(m, path)


def save_io(out_dir, stem, inputs, outputs):
    for name, arr in inputs.items():
        np.save(os.path.join(out_dir, f"{stem}.input.{name}.npy"), arr)
    for name, arr in outputs.items():
        np.save(os.path.join(out_dir, f"{stem}.torch.{name}.npy"), arr)


def main():
    out_dir = sys.argv[1]
    only = sys.argv[3].split(",") if len(sys.argv) > 3 and sys.argv[2] == "--only" else None
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(0)
    import transformers
    try:
        import torchvision
    except ImportError:  # only ResNet-50 needs it
        torchvision = None

    report_path = os.path.join(out_dir, "export_report.json")
    report = {"torch": torch.__version__, "transformers": transformers.__version__,
              "torchvision": torchvision.__version__ if torchvision else None,
              "onnx": onnx.__version__, "models": {}}
    if only and os.path.exists(report_path):
        with open(report_path) as f:
            report = json.load(f)

    gpt2_cfg = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=512,
                                       n_positions=64, use_cache=False,
                                       attn_implementation="eager")
    gpt2 = transformers.GPT2Model(gpt2_cfg)
    ids = torch.randint(0, 512, (2, 16))

    bert_cfg = transformers.BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                       intermediate_size=128, vocab_size=512,
                                       max_position_embeddings=64, attn_implementation="eager")
    bert = transformers.BertModel(bert_cfg, add_pooling_layer=False)
    bert_ids = torch.randint(0, 512, (2, 16))
    bert_mask = torch.ones(2, 16, dtype=torch.int64)
    bert_mask[1, 12:] = 0

    resnet = torchvision.models.resnet50(num_classes=10) if torchvision else None
    image = torch.randn(1, 3, 224, 224)

    # Made after the others so that their random weights and inputs stay as they were.
    vit_cfg = transformers.ViTConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=128, image_size=32, patch_size=8,
                                     attn_implementation="eager")
    vit = transformers.ViTModel(vit_cfg, add_pooling_layer=False)
    pixels = torch.randn(2, 3, 32, 32)

    # Llama-style: RMSNorm, rotary embeddings, 4 query heads over 2 key/value heads, SwiGLU.
    llama_cfg = transformers.LlamaConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                         num_key_value_heads=2, intermediate_size=128, vocab_size=512,
                                         max_position_embeddings=64, use_cache=False,
                                         attn_implementation="eager")
    llama = transformers.LlamaModel(llama_cfg)
    llama_ids = torch.randint(0, 512, (2, 16))

    class Gpt2(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids):
            # An explicit all-ones mask keeps transformers off its packed-sequence detection,
            # which uses aten::diff, an op the TorchScript-based exporter cannot write.
            mask = torch.ones_like(input_ids)
            return self.m(input_ids=input_ids, attention_mask=mask).last_hidden_state

    class Vit(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, pixel_values):
            return self.m(pixel_values=pixel_values).last_hidden_state

    class Llama(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids):
            mask = torch.ones_like(input_ids)  # as Gpt2's
            return self.m(input_ids=input_ids, attention_mask=mask).last_hidden_state

    class Bert(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask):
            return self.m(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    cases = [
        ("gpt2_tiny", Gpt2(gpt2), (ids,), ["input_ids"], {"input_ids": ids},
         {"input_ids": {0: "batch", 1: "seq"}}),
        ("bert_tiny", Bert(bert), (bert_ids, bert_mask), ["input_ids", "attention_mask"],
         {"input_ids": bert_ids, "attention_mask": bert_mask},
         {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"}}),
        ("resnet50", resnet, (image,), ["image"], {"image": image}, {"image": {0: "batch"}}),
        ("vit_tiny", Vit(vit), (pixels,), ["pixel_values"], {"pixel_values": pixels},
         {"pixel_values": {0: "batch"}}),
        ("llama_tiny", Llama(llama), (llama_ids,), ["input_ids"], {"input_ids": llama_ids},
         {"input_ids": {0: "batch", 1: "seq"}}),
    ]
    for stem, model, args, in_names, inputs, dyn in cases:
        if only is not None and stem not in only:
            continue
        model.eval()
        with torch.no_grad():
            out = model(*args)
        save_io(out_dir, stem, {k: v.numpy() for k, v in inputs.items()}, {"y": out.numpy()})
        for exporter, dynamo in (("torchscript", False), ("dynamo", True)):
            path = os.path.join(out_dir, f"{stem}.{exporter}.onnx")
            try:
                export(model, args, path, dynamo, in_names, ["y"], dyn)
                if stem == "resnet50":
                    strip_weights(path)
                m = onnx.load(path)
                report["models"][f"{stem}.{exporter}"] = {
                    "torch": torch.__version__, "transformers": transformers.__version__,
                    "ir_version": m.ir_version,
                    "opset": [(o.domain, o.version) for o in m.opset_import],
                    "nodes": len(m.graph.node), "bytes": os.path.getsize(path)}
            except Exception as e:  # report and go on: one exporter failing must not hide the rest
                report["models"][f"{stem}.{exporter}"] = {"error": repr(e)[:2000]}
    with open(report_path, "w") as f:
        json.dump(report, f, indent=1)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
