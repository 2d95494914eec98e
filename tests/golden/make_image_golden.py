"""Writes test images and the reference results of Pillow and torchvision on
them, for tests/datamodules/image_decode_test.cpp and tests/datamodules/image_transforms_test.cpp.

    make_image_golden.py OUTDIR

OUTDIR/manifest.txt lists one result per line:
    array NAME HEIGHT WIDTH CHANNELS DTYPE    (data in OUTDIR/NAME.bin, HWC or CHW raw)
    param NAME V1 V2 ...                       (integers)
The images themselves are OUTDIR/*.png|jpg.
"""
import struct
import sys
import zlib
from pathlib import Path

import numpy as np
import torch
import torchvision.transforms.functional as F
from PIL import Image
from torchvision import transforms as T

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
manifest = []


def save_array(name, array):
    array = np.ascontiguousarray(array)
    shape = list(array.shape) + [1] * (3 - array.ndim)
    (out / f"{name}.bin").write_bytes(array.tobytes())
    manifest.append(f"array {name} {shape[0]} {shape[1]} {shape[2]} {array.dtype}")


def photo_like(height, width, seed):
    """Smooth gradients, edges and a little noise: compresses like a photo."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    r = 128 + 100 * np.sin(x / 23.0) * np.cos(y / 31.0)
    g = 128 + 90 * np.sin((x + y) / 17.0)
    b = np.where((x // 40 + y // 40) % 2 == 0, 200.0, 60.0)
    image = np.stack([r, g, b], axis=-1) + rng.normal(0, 6, (height, width, 3))
    return np.clip(image, 0, 255).astype(np.uint8)


def write_png_raw(path, width, height, color_type, bit_depth, raw_rows):
    """A PNG with exactly the given sample bytes (for 16-bit files)."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, bit_depth, color_type, 0, 0, 0)
    data = b"".join(b"\x00" + row for row in raw_rows)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(data)) +
                     chunk(b"IEND", b""))


# --- decoding: Pillow's Image.open(f).convert("RGB"), as torchvision's loader does
rgb = photo_like(45, 61, 1)
Image.fromarray(rgb).save(out / "rgb.png")
Image.fromarray(rgb[:, :, 1]).save(out / "gray.png")
Image.fromarray(np.dstack([rgb[:, :, 0], rgb[:, :, 2]])).save(out / "gray_alpha.png")
Image.fromarray(np.dstack([rgb, rgb[:, :, :1]])).save(out / "rgba.png")
palette = Image.fromarray(rgb).quantize(colors=50)
palette.save(out / "palette.png")
palette.save(out / "palette_trns.png", transparency=3)
# 16-bit samples: Pillow keeps the high byte of RGB; 16-bit grey it clips
# (I;16 -> L saturates at 255), so that one is checked against value >> 8.
rgb16 = (rgb.astype(np.uint16) << 8) | rgb[:, ::-1].astype(np.uint16)
write_png_raw(out / "rgb16.png", 61, 45, 2, 16, [rgb16[y].astype(">u2").tobytes() for y in range(45)])
gray16 = rgb16[:, :, 0]
write_png_raw(out / "gray16.png", 61, 45, 0, 16, [gray16[y].astype(">u2").tobytes() for y in range(45)])

photo = photo_like(375, 500, 2)
Image.fromarray(photo).save(out / "photo420.jpg", quality=90)
Image.fromarray(photo).save(out / "photo444.jpg", quality=95, subsampling=0)
Image.fromarray(photo).save(out / "progressive.jpg", quality=85, progressive=True)
Image.fromarray(photo[:, :, 0]).save(out / "gray.jpg", quality=90)
Image.fromarray(photo).convert("CMYK").save(out / "cmyk.jpg", quality=95)
Image.fromarray(photo).save(out / "photo.png")

for name in ["rgb.png", "gray.png", "gray_alpha.png", "rgba.png", "palette.png", "palette_trns.png", "rgb16.png",
             "photo420.jpg", "photo444.jpg", "progressive.jpg", "gray.jpg", "cmyk.jpg"]:
    save_array("decoded_" + name.replace(".", "_"), np.asarray(Image.open(out / name).convert("RGB")))
expected_rgb16 = (rgb16 >> 8).astype(np.uint8)
assert np.array_equal(np.asarray(Image.open(out / "rgb16.png").convert("RGB")), expected_rgb16)
save_array("decoded_gray16_png", np.repeat((gray16 >> 8).astype(np.uint8)[:, :, None], 3, axis=2))

# --- transforms on fixed parameters, both torchvision paths: PIL images
# (what ImageFolder gives) and uint8 tensors (antialiased interpolate).
pil = Image.open(out / "photo.png").convert("RGB")
tensor = torch.from_numpy(np.asarray(pil).copy()).permute(2, 0, 1)


def both(name, pil_fn, tensor_fn):
    save_array(name + "_pil", np.asarray(pil_fn(pil)))
    save_array(name + "_tensor", tensor_fn(tensor).permute(1, 2, 0).numpy())


both("resize256", lambda i: F.resize(i, 256), lambda t: F.resize(t, 256, antialias=True))
both("resize_exact_100x90", lambda i: F.resize(i, [100, 90]), lambda t: F.resize(t, [100, 90], antialias=True))
both("resized_crop_shrink", lambda i: F.resized_crop(i, 37, 50, 300, 410, [224, 224]),
     lambda t: F.resized_crop(t, 37, 50, 300, 410, [224, 224], antialias=True))
both("resized_crop_grow", lambda i: F.resized_crop(i, 100, 200, 60, 80, [224, 224]),
     lambda t: F.resized_crop(t, 100, 200, 60, 80, [224, 224], antialias=True))
both("val_pipeline", lambda i: F.center_crop(F.resize(i, 256), 224),
     lambda t: F.center_crop(F.resize(t, 256, antialias=True), 224))
both("center_crop_odd", lambda i: F.center_crop(i, [101, 199]), lambda t: F.center_crop(t, [101, 199]))
both("center_crop_pad", lambda i: F.center_crop(i, [400, 333]), lambda t: F.center_crop(t, [400, 333]))
both("hflip", F.hflip, F.hflip)

small = Image.fromarray(photo_like(32, 32, 3))
small.save(out / "small.png")
small_t = torch.from_numpy(np.asarray(small).copy()).permute(2, 0, 1)
padded_crop = F.crop(F.pad(small_t, 4), 1, 7, 32, 32)
save_array("random_crop_1_7", padded_crop.permute(1, 2, 0).numpy())
mean, std = [0.47889522, 0.47227842, 0.43047404], [0.24205776, 0.23828046, 0.25874835]
normalized = T.Normalize(mean, std)(T.ToTensor()(F.to_pil_image(padded_crop)))
save_array("to_tensor_normalize_chw", normalized.numpy())

# RandomResizedCrop: where all 10 attempts must fail, the fallback is deterministic.
for height, width in [(1000, 10), (10, 1000)]:
    i, j, h, w = T.RandomResizedCrop.get_params(torch.zeros(3, height, width), [0.08, 1.0], [3 / 4, 4 / 3])
    manifest.append(f"param rrc_fallback_{height}x{width} {i} {j} {h} {w}")
# Resize(256) output sizes (truncation of the longer side).
for height, width in [(375, 500), (500, 375), (333, 1000), (257, 256), (100, 99)]:
    h, w = F.resize(torch.zeros(1, height, width, dtype=torch.uint8), 256, antialias=True).shape[1:]
    manifest.append(f"param resize256_{height}x{width} {h} {w}")

(out / "manifest.txt").write_text("\n".join(manifest) + "\n")
