"""Generates a CINIC-10-format folder of 32x32 RGB PNGs for the vs_lightning
benchmark: <out>/{train,valid,test}/<digit>/<n>.png. Each image is one of
scikit-learn's real 8x8 handwritten digits, enlarged to 16..28 pixels,
placed at a random spot on a random dark background in a random bright
colour, with pixel noise, so the task is learnable but not trivial. Train
images come from the first 70% of the digits, valid/test from the rest.

  python bench/vs_lightning/make_data.py <out> [train_per_class valid_per_class test_per_class]
"""
import sys
from pathlib import Path

import numpy as np
from PIL import Image
from sklearn.datasets import load_digits


def render(digit: np.ndarray, rng: np.random.Generator) -> Image.Image:
    side = int(rng.integers(16, 29))
    glyph = Image.fromarray(np.uint8(digit * (255.0 / 16.0))).resize((side, side), Image.BILINEAR)
    alpha = np.asarray(glyph, dtype=np.float32)[..., None] / 255.0
    background = rng.integers(0, 90, size=3).astype(np.float32)
    colour = rng.integers(150, 256, size=3).astype(np.float32)
    canvas = np.tile(background, (32, 32, 1))
    top, left = rng.integers(0, 33 - side, size=2)
    patch = canvas[top:top + side, left:left + side]
    canvas[top:top + side, left:left + side] = patch * (1 - alpha) + colour * alpha
    canvas += rng.normal(0, 12, size=canvas.shape)
    return Image.fromarray(np.uint8(np.clip(canvas, 0, 255)), mode="RGB")


def main(out: Path, counts: tuple) -> None:
    digits = load_digits()
    cut = int(0.7 * len(digits.target))
    pools = {"train": range(0, cut), "valid": range(cut, len(digits.target)), "test": range(cut, len(digits.target))}
    rng = np.random.default_rng(0)
    for (split, pool), per_class in zip(pools.items(), counts):
        by_class = {c: [i for i in pool if digits.target[i] == c] for c in range(10)}
        for c, members in by_class.items():
            folder = out / split / str(c)
            folder.mkdir(parents=True, exist_ok=True)
            for n in range(per_class):
                render(digits.images[members[n % len(members)]], rng).save(folder / f"{n:05d}.png")
        print(f"{split}: {10 * per_class} images")
    (out / ".complete").touch()


if __name__ == "__main__":
    counts = tuple(int(v) for v in sys.argv[2:5]) if len(sys.argv) >= 5 else (400, 60, 60)
    main(Path(sys.argv[1]), counts)
