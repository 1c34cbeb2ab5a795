"""Makes the demo model: torchvision resnet18 with seeded random weights, traced and saved
as TorchScript (no download: the weights are random, the classes meaningless)."""
import sys

import torch
import torchvision

torch.manual_seed(0)
model = torchvision.models.resnet18().eval()
traced = torch.jit.trace(model, torch.randn(1, 3, 224, 224))
torch.jit.save(traced, sys.argv[1] if len(sys.argv) > 1 else "resnet18.pt")
print(f"wrote {sys.argv[1] if len(sys.argv) > 1 else 'resnet18.pt'}")
