"""Makes the model of the CMake sample: a small scripted MLP (7 -> 16 -> 3) saved with
torch.jit.save, and a reference: a 2x7 float32 input and torch's 2x3 output, written as raw
little-endian float32 files (MODEL.input.f32, MODEL.expected.f32) and printed.

  python make_model.py --out build/tiny_mlp.pt [--seed 0]

Another --seed gives other weights (tests/install/test_cmake_app.py uses it to show that
the build recompiles the model when the .pt changes)."""
import argparse

import torch


class TinyMLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(7, 16)
        self.fc2 = torch.nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="the .pt to write")
    ap.add_argument("--seed", type=int, default=0, help="seed of the weights and the input")
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    model = TinyMLP().eval()
    torch.jit.save(torch.jit.script(model), args.out)
    x = torch.randn(2, 7)
    with torch.no_grad():
        y = model(x)
    stem = args.out[:-3] if args.out.endswith(".pt") else args.out
    x.numpy().astype("<f4").tofile(stem + ".input.f32")
    y.numpy().astype("<f4").tofile(stem + ".expected.f32")
    print(f"wrote {args.out}, {stem}.input.f32, {stem}.expected.f32")
    print("expected output0:", " ".join(f"{v:.9g}" for v in y.flatten().tolist()))


if __name__ == "__main__":
    main()
