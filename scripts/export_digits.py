"""Exports scikit-learn's bundled handwritten digits (1797 real 8x8 images)
into the CINIC-10 folder layout: <out>/{train,valid,test}/<class>/<n>.png.

The split is fixed (stratified, seed 0) so every machine gets the same files.
Pixel values 0..16 are scaled to 0..255 and written as 8-bit grayscale PNGs.
"""
import sys
from pathlib import Path

import numpy as np
from PIL import Image
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split


def main(out: Path) -> None:
    digits = load_digits()
    images = np.round(digits.images * (255.0 / 16.0)).astype(np.uint8)
    labels = digits.target
    index = np.arange(len(labels))
    train, rest = train_test_split(index, test_size=0.3, stratify=labels, random_state=0)
    valid, test = train_test_split(rest, test_size=0.5, stratify=labels[rest], random_state=0)
    for split, ids in (("train", train), ("valid", valid), ("test", test)):
        for i in ids:
            folder = out / split / str(labels[i])
            folder.mkdir(parents=True, exist_ok=True)
            Image.fromarray(images[i], mode="L").save(folder / f"{i:04d}.png")
        print(f"{split}: {len(ids)} images")
    (out / ".complete").touch()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
