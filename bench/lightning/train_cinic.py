"""The PyTorch Lightning peer of examples/cinic10, written as a Lightning
user would: torchvision ImageFolder + DataLoader, a LightningModule around
torchvision's resnet18 (or the MLP of the digits demo), Trainer.fit then
Trainer.test. Same preprocessing as fulgur's CINIC10 DataModule (RGB, [0, 1],
CINIC-10 mean/std, no augmentation) and the same SGD settings.

  python bench/lightning/train_cinic.py --root data/digits-cinic --arch resnet18 \
      --epochs 3 --batch-size 32 --lr 0.05 --workers 2 [--weights init.pt | --init-out init.pt] [--order-seed 7]

Prints `fit_seconds=<s>` (Trainer.fit only), `test_acc=<a>` and `test_loss=<l>`.
"""
import argparse
import os
import time

import pytorch_lightning as pl
import torch
import torch.nn.functional as F
import torchvision
from torch.utils.data import DataLoader, DistributedSampler
from torchvision import transforms
from torchvision.datasets import ImageFolder

MEAN = (0.47889522, 0.47227842, 0.43047404)
STD = (0.24205776, 0.23828046, 0.25874835)


def build(arch: str, num_classes: int) -> torch.nn.Module:
    if arch == "mlp":  # fulgur's MLP: 8x8 pooled view, two hidden layers of 256
        return torch.nn.Sequential(
            torch.nn.AdaptiveAvgPool2d(8), torch.nn.Flatten(), torch.nn.Linear(3 * 64, 256), torch.nn.ReLU(),
            torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, num_classes))
    model = torchvision.models.resnet18(weights=None, num_classes=num_classes)
    if arch == "resnet18_cifar":  # the usual CIFAR stem: 3x3 conv, no max-pool
        model.conv1 = torch.nn.Conv2d(3, 64, kernel_size=3, stride=1, padding=1, bias=False)
        model.maxpool = torch.nn.Identity()
    return model


class LitClassifier(pl.LightningModule):
    def __init__(self, arch, num_classes, lr, momentum, weight_decay, weights=None, channels_last=False):
        super().__init__()
        self.save_hyperparameters()
        self.net = build(arch, num_classes)
        if weights:
            self.net.load_state_dict(torch.load(weights, weights_only=True))
        if channels_last:  # as fulgur's --model.channels_last: NHWC weights and inputs
            self.net = self.net.to(memory_format=torch.channels_last)

    def forward(self, x):
        if self.hparams.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        self.log("val_loss", F.cross_entropy(logits, y), prog_bar=True)
        self.log("val_acc", (logits.argmax(1) == y).float().mean(), prog_bar=True)

    def test_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        self.log("test_loss", F.cross_entropy(logits, y))
        self.log("test_acc", (logits.argmax(1) == y).float().mean())

    def configure_optimizers(self):
        hp = self.hparams
        return torch.optim.SGD(self.parameters(), lr=hp.lr, momentum=hp.momentum, weight_decay=hp.weight_decay)


def loader(root, split, batch_size, workers, shuffle, order_seed=None):
    transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize(MEAN, STD)])
    dataset = ImageFolder(f"{root}/{split}", transform=transform)
    # With a seed, epoch e visits torch.randperm(n) drawn from seed + e (a
    # one-replica DistributedSampler, whose epoch Lightning sets), which is
    # the order fulgur's loader takes with --data.seed: both sides then see
    # the same batches.
    sampler = None
    if shuffle and order_seed is not None:
        sampler = DistributedSampler(dataset, num_replicas=1, rank=0, shuffle=True, seed=order_seed)
        shuffle = False
    return DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, sampler=sampler,
                      num_workers=workers, pin_memory=torch.cuda.is_available(),
                      persistent_workers=workers > 0)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--root", required=True)
    p.add_argument("--arch", default="resnet18")
    p.add_argument("--num-classes", type=int, default=10)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--weight-decay", type=float, default=5e-4)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--weights", default=None)
    p.add_argument("--init-out", default=None,
                   help="start from torch.manual_seed(0)'s weights and write them here (a file another "
                        "framework's run can start from) before training")
    p.add_argument("--order-seed", type=int, default=None,
                   help="shuffle as fulgur does with --data.seed (default: the DataLoader's own shuffling)")
    p.add_argument("--out", default="lightning_logs_bench")
    p.add_argument("--skip-test", action="store_true")
    p.add_argument("--limit-train-batches", type=int, default=None)
    p.add_argument("--limit-val-batches", type=int, default=None)
    p.add_argument("--channels-last", action="store_true")
    args = p.parse_args()

    torch.set_num_threads(args.threads)
    if args.init_out:
        torch.manual_seed(0)
    model = LitClassifier(args.arch, args.num_classes, args.lr, args.momentum, args.weight_decay, args.weights,
                          args.channels_last)
    if args.init_out:  # whole or not at all: the other run starts once the name appears
        torch.save(dict(model.net.state_dict()), args.init_out + ".tmp")
        os.replace(args.init_out + ".tmp", args.init_out)
    trainer = pl.Trainer(max_epochs=args.epochs, accelerator="cpu", devices=1, default_root_dir=args.out,
                         enable_progress_bar=False, enable_model_summary=False,
                         limit_train_batches=args.limit_train_batches, limit_val_batches=args.limit_val_batches)
    train = loader(args.root, "train", args.batch_size, args.workers, shuffle=True, order_seed=args.order_seed)
    valid = loader(args.root, "valid", args.batch_size, args.workers, shuffle=False)
    start = time.perf_counter()
    trainer.fit(model, train, valid)
    print(f"fit_seconds={time.perf_counter() - start:.3f}", flush=True)
    if not args.skip_test:
        result = trainer.test(model, loader(args.root, "test", args.batch_size, args.workers, shuffle=False),
                              verbose=False)
        print(f"test_acc={result[0]['test_acc']:.6f}", flush=True)
        print(f"test_loss={result[0]['test_loss']:.6f}", flush=True)


if __name__ == "__main__":
    main()
