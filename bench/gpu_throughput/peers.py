"""The Python sides of bench/gpu_throughput: ResNet-50 training images/s on
one GPU, batch 256, channels_last, the same precision as fulgur's side.

  peers.py torch      --precision bf16-mixed   (c) a plain PyTorch loop, in-memory batches
  peers.py lightning  --precision bf16-mixed   (d) PyTorch Lightning, the same batches
  peers.py lightning  --compile                (d') Lightning with torch.compile(model): the
                                                   one line a Lightning user adds; prints the
                                                   compile time (first steps) too
  peers.py dataloader --data DIR --workers N   (f) the plain loop fed by torchvision's
                                                   ImageFolder + DataLoader from JPEGs
  peers.py gpu-decode --data DIR --workers N   (g) the plain loop fed by torchvision's batched
                                                   decode_jpeg(device="cuda") + transforms.v2 on
                                                   the GPU (the workers only read file bytes)
  --arch resnet18                              ResNet-18 instead of ResNet-50
  peers.py make-jpegs DIR --count N            generated ImageNet-sized JPEGs (500x375, or
                                               --width x --height), --classes class folders,
                                               written by as many processes as there are cores

Each prints "gpu_throughput[<case>, <precision>]: <img/s> img/s". Without a GPU
it prints that it skipped and exits 0. make-jpegs needs numpy and pillow only.
"""
import argparse
import os
import sys
import time

torch = None  # imported in main(): make-jpegs does without it


def autocast_dtype(precision):
    return {"bf16-mixed": torch.bfloat16, "16-mixed": torch.float16}[precision]


def make_batches(count, batch_size):
    gen = torch.Generator().manual_seed(0)
    return [(torch.randn(batch_size, 3, 224, 224, generator=gen).pin_memory(),
             torch.randint(0, 1000, (batch_size,), generator=gen).pin_memory()) for _ in range(count)]


ARCH = "resnet50"


def resnet():
    import torchvision
    return getattr(torchvision.models, ARCH)(num_classes=1000).cuda().to(memory_format=torch.channels_last)


def plain_loop(batches, precision, steps, warmup):
    """(c), (f) and (g): copy, autocast forward, backward, SGD step; GradScaler for 16-mixed."""
    model = resnet()
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scaler = torch.amp.GradScaler("cuda", enabled=precision == "16-mixed")
    dtype = autocast_dtype(precision)
    images, start = 0, None
    for step, (x, y) in enumerate(batches):
        if step == warmup:
            torch.cuda.synchronize()
            start = time.perf_counter()
        if step == warmup + steps:
            break
        x = x.cuda(non_blocking=True).contiguous(memory_format=torch.channels_last)
        y = y.cuda(non_blocking=True)
        with torch.autocast("cuda", dtype=dtype):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        if step >= warmup:
            images += x.shape[0]
    torch.cuda.synchronize()
    return images / (time.perf_counter() - start)


def cycle(batches, total):
    for i in range(total):
        yield batches[i % len(batches)]


def run_lightning(batches, precision, steps, warmup, compile_model=False):
    """(d): the same model and batches through Lightning's Trainer; (d') with torch.compile."""
    import pytorch_lightning as pl

    class Module(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.model = torch.compile(resnet()) if compile_model else resnet()

        def training_step(self, batch, _):
            x, y = batch
            loss = torch.nn.functional.cross_entropy(self.model(x.contiguous(memory_format=torch.channels_last)), y)
            self.log("train_loss", loss, prog_bar=True)
            return loss

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1, momentum=0.9)

    class Clock(pl.Callback):
        images, start, seconds = 0, None, 0.0

        def on_train_start(self, trainer, module):
            self.began = time.perf_counter()

        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
            if trainer.global_step == 1:
                torch.cuda.synchronize()
                self.first_step = time.perf_counter() - self.began  # compilation happens here
            if trainer.global_step == warmup:
                torch.cuda.synchronize()
                self.start = time.perf_counter()
            elif trainer.global_step > warmup:
                self.images += batch[0].shape[0]

        def on_train_end(self, trainer, module):
            torch.cuda.synchronize()
            self.seconds = time.perf_counter() - self.start

    clock = Clock()
    loader = torch.utils.data.DataLoader(list(cycle(batches, warmup + steps)), batch_size=None, pin_memory=False)
    trainer = pl.Trainer(accelerator="gpu", devices=1, precision=precision, max_steps=warmup + steps,
                         logger=False, enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False, callbacks=[clock])
    trainer.fit(Module(), loader)
    if compile_model:
        print(f"gpu_throughput[lightning, compile]: first step (compilation) {clock.first_step:.1f} s")
    return clock.images / clock.seconds


def jpeg_batches(root, batch_size, workers, total):
    import torchvision
    from torchvision import transforms
    pipeline = transforms.Compose([
        transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip(), transforms.ToTensor(),
        transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    dataset = torchvision.datasets.ImageFolder(root, pipeline)
    loader = torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=True, drop_last=True,
                                         num_workers=workers, pin_memory=True, persistent_workers=workers > 0)
    produced = 0
    while True:
        for batch in loader:
            yield batch
            produced += 1
            if produced == total:
                return


def read_bytes(path):
    # bytes, not tensors: a batch of small tensors sent back through shared
    # memory runs out of file descriptors.
    with open(path, "rb") as f:
        return f.read()


def collate_bytes(samples):
    return [data for data, _ in samples], torch.tensor([label for _, label in samples])


def gpu_decode_batches(root, batch_size, workers, total):
    """(g): torchvision's own GPU path: workers read bytes, decode_jpeg decodes
    the batch on the GPU (nvJPEG), transforms.v2 crop, flip and normalize there."""
    import torchvision
    from torchvision.transforms import v2
    dataset = torchvision.datasets.ImageFolder(root, loader=read_bytes)
    loader = torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=True, drop_last=True,
                                         num_workers=workers, collate_fn=collate_bytes,
                                         persistent_workers=workers > 0)
    augment = v2.Compose([v2.RandomResizedCrop(224, antialias=True), v2.RandomHorizontalFlip()])
    mean = torch.tensor([0.485, 0.456, 0.406], device="cuda").view(1, 3, 1, 1) * 255
    std = torch.tensor([0.229, 0.224, 0.225], device="cuda").view(1, 3, 1, 1) * 255
    produced = 0
    while True:
        for data, target in loader:
            data = [torch.frombuffer(bytearray(b), dtype=torch.uint8) for b in data]
            images = torchvision.io.decode_jpeg(data, device="cuda", mode=torchvision.io.ImageReadMode.RGB)
            x = torch.stack([augment(image) for image in images]).float().sub_(mean).div_(std)
            yield x.contiguous(memory_format=torch.channels_last), target
            produced += 1
            if produced == total:
                return


def make_jpeg(job):
    """One image: smooth gradients plus noise, which compress like a photograph, not like flat colour."""
    import pathlib
    import numpy as np
    from PIL import Image
    root, i, classes, width, height = job
    rng = np.random.default_rng(i)
    folder = pathlib.Path(root) / f"class{i % classes:02d}"
    folder.mkdir(parents=True, exist_ok=True)
    y, x = np.mgrid[0:height, 0:width]
    base = np.stack([(x * rng.uniform(0.2, 0.5) + y * rng.uniform(0.1, 0.4)) % 256 for _ in range(3)], axis=-1)
    image = np.clip(base + rng.normal(0, 12, base.shape), 0, 255).astype(np.uint8)
    Image.fromarray(image).save(folder / f"{i:05d}.jpg", quality=90)


def make_jpegs(root, count, classes=10, width=500, height=375):
    import multiprocessing
    jobs = [(root, i, classes, width, height) for i in range(count)]
    with multiprocessing.Pool(min(len(jobs), os.cpu_count() or 1) or 1) as pool:
        pool.map(make_jpeg, jobs, chunksize=8)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("case", choices=["torch", "lightning", "dataloader", "gpu-decode", "make-jpegs"])
    parser.add_argument("path", nargs="?")
    parser.add_argument("--precision", default="bf16-mixed", choices=["bf16-mixed", "16-mixed"])
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--data")
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--count", type=int, default=2560)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--width", type=int, default=500)
    parser.add_argument("--height", type=int, default=375)
    parser.add_argument("--arch", default="resnet50", choices=["resnet50", "resnet18"])
    parser.add_argument("--compile", action="store_true", help="lightning: torch.compile(model)")
    args = parser.parse_args()
    if args.case == "make-jpegs":
        make_jpegs(args.path, args.count, args.classes, args.width, args.height)
        return
    global torch
    import torch
    if not torch.cuda.is_available():
        print(f"gpu_throughput[{args.case}]: skipped, no GPU visible")
        return
    global ARCH
    ARCH = args.arch
    torch.manual_seed(0)
    total = args.warmup + args.steps
    if args.case in ("dataloader", "gpu-decode"):
        produce = jpeg_batches if args.case == "dataloader" else gpu_decode_batches
        rate = plain_loop(produce(args.data, args.batch_size, args.workers, total), args.precision, args.steps,
                          args.warmup)
    elif args.case == "torch":
        rate = plain_loop(list(cycle(make_batches(8, args.batch_size), total)), args.precision, args.steps, args.warmup)
    else:
        rate = run_lightning(make_batches(8, args.batch_size), args.precision, args.steps, args.warmup, args.compile)
    variant = (f", {args.arch}" if args.arch != "resnet50" else "") + (", compile" if args.compile else "")
    print(f"gpu_throughput[{args.case}{variant}, {args.precision}]: {rate:.1f} img/s")


if __name__ == "__main__":
    sys.exit(main())
