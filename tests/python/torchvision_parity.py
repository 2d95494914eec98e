"""The torchvision side of the ResNet parity tests (tests/modules/resnet_test.cpp).

  make <dir> <arch>...      for each arch writes <dir>/<arch>.weights.pt
                            (torch.save of a random torchvision model's
                            state_dict) and <dir>/<arch>.expected.pt: the
                            input, targets, eval-mode logits, train-mode
                            logits, gradients after a cross-entropy backward,
                            and the batch-norm buffers after that forward.
  check <dir> <arch>...     for each arch loads <dir>/<arch>.weights.pt,
                            written by fulgur, into torchvision's model
                            (strict) and checks its eval-mode logits on
                            io["input"] equal io["output"] (<dir>/<arch>.io.pt).

Several archs per call: Python imports torch and torchvision once.

arch: resnet18, resnet50 (ImageNet stem) or resnet18_cifar (3x3 stem, no
max-pool, as fulgur's "_cifar" models).
"""
import sys

import torch
import torchvision


def build(arch: str, num_classes: int = 10) -> torch.nn.Module:
    depth = arch.removesuffix("_cifar")
    model = getattr(torchvision.models, depth)(weights=None, num_classes=num_classes)
    if arch.endswith("_cifar"):
        model.conv1 = torch.nn.Conv2d(3, 64, kernel_size=3, stride=1, padding=1, bias=False)
        model.maxpool = torch.nn.Identity()
    return model


def randomize_batch_norms(model: torch.nn.Module) -> None:
    """Non-trivial scales and running statistics, so eval mode tests them."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
                m.num_batches_tracked.fill_(7)


def make(arch: str, out: str) -> None:
    torch.manual_seed(0)
    model = build(arch)
    randomize_batch_norms(model)
    torch.save(dict(model.state_dict()), f"{out}/{arch}.weights.pt")
    side = 16 if arch.endswith("_cifar") else 64
    x = torch.randn(4, 3, side, side)
    target = torch.tensor([1, 3, 5, 7])
    expected = {"input": x, "target": target}
    model.eval()
    with torch.no_grad():
        expected["eval_output"] = model(x)
    model.train()
    logits = model(x)
    torch.nn.functional.cross_entropy(logits, target).backward()
    expected["train_output"] = logits.detach()
    for name, p in model.named_parameters():
        expected["grad." + name] = p.grad
    for name, b in model.named_buffers():
        expected["after." + name] = b
    torch.save(expected, f"{out}/{arch}.expected.pt")


def check(arch: str, out: str) -> bool:
    model = build(arch)
    model.load_state_dict(torch.load(f"{out}/{arch}.weights.pt", weights_only=True), strict=True)
    model.eval()
    data = torch.load(f"{out}/{arch}.io.pt", weights_only=True)
    with torch.no_grad():
        logits = model(data["input"])
    diff = (logits - data["output"]).abs().max().item()
    print(f"{arch}: max |torchvision - fulgur| = {diff:.3g}")
    return torch.allclose(logits, data["output"], rtol=1e-4, atol=1e-4)


if __name__ == "__main__":
    command, out, archs = sys.argv[1], sys.argv[2], sys.argv[3:]
    if command == "make":
        for arch in archs:
            make(arch, out)
    else:
        sys.exit(0 if all([check(arch, out) for arch in archs]) else 1)
