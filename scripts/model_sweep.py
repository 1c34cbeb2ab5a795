#!/usr/bin/env python3
"""Compiles models that the test suite does not hold and compares each with torch: a sweep
for coverage, not a test (several take a minute). torchvision's other classifiers,
segmentation, video and optical-flow models, and, when the `transformers` package is
installed (it is not part of the setup), small randomly initialised Hugging Face models
traced as users trace them. Parameters that a model initialises to all zeros (vit's
classifier head) are randomised, so that an output of zeros cannot pass.

    .venv/bin/python scripts/model_sweep.py                 # everything
    .venv/bin/python scripts/model_sweep.py maxvit_t gpt2   # some
Prints one line per model (OK with the relative L2 error, or FAIL with aotc's first error
line) and ends with "N passed, M failed"."""
import os
import sys
import tempfile
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import bench_cpu  # noqa: E402
from common import TOLERANCE  # noqa: E402  (bench_cpu put tests/e2e on the path)



def torchvision_cases():
    import torchvision.models as M
    seg = M.segmentation
    video = (1, 3, 16, 112, 112)
    return {
        "swin_t": (M.swin_t, [(1, 3, 224, 224)]),
        "swin_v2_t": (M.swin_v2_t, [(1, 3, 256, 256)]),
        "maxvit_t": (M.maxvit_t, [(1, 3, 224, 224)]),
        "inception_v3": (lambda: M.inception_v3(aux_logits=False, init_weights=True), [(1, 3, 160, 160)]),
        "mnasnet0_5": (M.mnasnet0_5, [(1, 3, 96, 96)]),
        "regnet_y_400mf": (M.regnet_y_400mf, [(1, 3, 96, 96)]),
        "resnext50_32x4d": (M.resnext50_32x4d, [(1, 3, 96, 96)]),
        "wide_resnet50_2": (M.wide_resnet50_2, [(1, 3, 64, 64)]),
        "efficientnet_v2_s": (M.efficientnet_v2_s, [(1, 3, 96, 96)]),
        "mobilenet_v3_large": (M.mobilenet_v3_large, [(1, 3, 96, 96)]),
        "shufflenet_v2_x2_0": (M.shufflenet_v2_x2_0, [(1, 3, 96, 96)]),
        "alexnet": (M.alexnet, [(1, 3, 96, 96)]),
        "vit_b_32": (M.vit_b_32, [(1, 3, 224, 224)]),
        "fcn_resnet50": (lambda: seg.fcn_resnet50(weights=None, weights_backbone=None, aux_loss=False),
                         [(1, 3, 96, 96)]),
        "deeplabv3_resnet50": (lambda: seg.deeplabv3_resnet50(weights=None, weights_backbone=None, aux_loss=False),
                               [(1, 3, 96, 96)]),
        "lraspp_mobilenet_v3": (lambda: seg.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None),
                                [(1, 3, 96, 96)]),
        "r3d_18": (M.video.r3d_18, [video]),
        "swin3d_t": (M.video.swin3d_t, [(1, 3, 16, 224, 224)]),
        "mvit_v2_s": (M.video.mvit_v2_s, [(1, 3, 16, 224, 224)]),
        "raft_small": (M.optical_flow.raft_small, [(1, 3, 128, 128), (1, 3, 128, 128)]),
    }


def huggingface_cases():
    try:
        import transformers as T
    except ImportError:
        return {}

    class FirstOutput(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, x):
            return self.model(x, return_dict=False)[0]

    def make(config_cls, model_cls, **kw):
        def build():
            config = config_cls(**kw)
            config._attn_implementation = "eager"
            return FirstOutput(model_cls(config))
        return build

    small = dict(hidden_size=128, num_attention_heads=4, intermediate_size=256)
    ids = [("ids", (1, 24))]
    return {
        "hf_gpt2": (make(T.GPT2Config, T.GPT2Model, n_layer=2, n_embd=128, n_head=4, vocab_size=1000,
                         use_cache=False), ids),
        "hf_bert": (make(T.BertConfig, T.BertModel, num_hidden_layers=2, vocab_size=1000, **small), ids),
        "hf_roberta": (make(T.RobertaConfig, T.RobertaModel, num_hidden_layers=2, vocab_size=1000, **small), ids),
        "hf_distilbert": (make(T.DistilBertConfig, T.DistilBertModel, n_layers=2, dim=128, n_heads=4,
                               hidden_dim=256, vocab_size=1000), ids),
        "hf_t5_encoder": (make(T.T5Config, T.T5EncoderModel, num_layers=2, d_model=128, num_heads=4, d_ff=256,
                               d_kv=32, vocab_size=1000), ids),
        "hf_llama": (make(T.LlamaConfig, T.LlamaModel, num_hidden_layers=2, num_key_value_heads=2,
                          vocab_size=1000, use_cache=False, **small), ids),
        "hf_vit": (make(T.ViTConfig, T.ViTModel, num_hidden_layers=2, image_size=64, patch_size=16, **small),
                   [(1, 3, 64, 64)]),
    }


def randomize(model):
    """Random batch-norm statistics, and random values for all-zero parameters."""
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (torch.nn.BatchNorm2d, torch.nn.BatchNorm3d)):
                m.running_mean.uniform_(-0.1, 0.1, generator=g)
                m.running_var.uniform_(0.5, 1.5, generator=g)
        for p in model.parameters():
            if p.numel() > 1 and not p.any():
                p.normal_(0, 0.02, generator=g)


def first_tensor(out):
    while not isinstance(out, torch.Tensor):
        out = out["out"] if isinstance(out, dict) else out[-1]
    return out


def check(name, build, shapes, workdir, aotc):
    torch.manual_seed(0)
    model = build().eval()
    randomize(model)
    inputs = []
    for spec in shapes:
        if isinstance(spec[0], str):  # token ids
            inputs.append(torch.randint(0, 1000, spec[1]))
        else:
            inputs.append(torch.randn(*spec))
    with torch.no_grad():
        want = first_tensor(model(*inputs))
        traced = torch.jit.trace(model, tuple(inputs), strict=False, check_trace=False)
    pt, so = os.path.join(workdir, name + ".pt"), os.path.join(workdir, name + ".so")
    traced.save(pt)
    names = [n for n in traced.forward.schema.arguments][1:]
    bench_cpu.compile_with_aotc(aotc, pt, so, [(a.name, t) for a, t in zip(names, inputs)])
    runner = bench_cpu.AotcModel(so, inputs, 2)
    try:
        outputs = runner.run()
    finally:
        runner.close()
    got = outputs[-1] if len(outputs) > 1 and tuple(outputs[-1].shape) == tuple(want.shape) else outputs[0]
    return bench_cpu.rel_l2(got, want)


def main():
    aotc = os.path.join(ROOT, "build/compiler/aotc")
    cases = {**torchvision_cases(), **huggingface_cases()}
    names = sys.argv[1:] or list(cases)
    unknown = [n for n in names if n not in cases]
    if unknown:
        sys.exit(f"model_sweep.py: unknown {unknown}; known: {', '.join(cases)}")
    workdir = tempfile.mkdtemp(prefix="aotc-sweep-")
    passed = failed = 0
    for name in names:
        start = time.time()
        try:
            err = check(name, *cases[name], workdir, aotc)
            ok = err <= TOLERANCE
            line = f"relative L2 {err:.2e}"
        except Exception as e:  # a failed compile: aotc's first error line
            ok, line = False, (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
        passed += ok
        failed += not ok
        print(f"{'OK  ' if ok else 'FAIL'} {name:22s} {line}  ({time.time() - start:.0f} s)", flush=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
