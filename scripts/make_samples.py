#!/usr/bin/env python
"""Generate the small normal maps in ``samples/`` from closed-form surfaces.

Every sample is a folder in the DiLiGenT/BiNI layout, so ``fnin integrate samples/dome``
and ``fnin bench samples`` work without any download:

- ``dome/``    perspective, 16-bit PNG: a spherical cap pushed into a tilted wall with a
               round hole; the cap's rim stands up to ~190 mm in front of the wall on
               one side and sinks into it on the other. normal_map.png (16-bit RGB, ps
               convention: RGB = (n + 1) / 2, x right, y up, z toward the viewer,
               background white), mask.png, K.txt, depth_gt.npz. Units: mm.
- ``flutes/``  perspective, float EXR: three half-pipes side by side, sheared in depth so
               the jumps between them open to ~60-90 mm and close at one row.
               normal_map.exr (float32 n in the ps convention, NaN background),
               mask.png, K.txt, depth_gt.npz. Units: mm.
- ``hill/``    orthographic (no K.txt; pixel size 1, depth in pixel units), 16-bit PNG:
               a Gaussian hill on tilted ground and a spherical cap that floats up to
               ~20 in front of the ground at the top and sinks into it at the bottom.
               normal_map.png, mask.png, depth_gt.npz.

All three have depth discontinuities that end inside the image (as at the
self-occlusions of real objects), so discontinuity-aware methods (bini, fnin) can
beat smooth integration (wls) there; all are 256x192 and under 400 KB each.

Normals are exact (analytic derivatives of the depth, see ``fnin_cli.analytic``), so the
remaining integration error is the discretisation of the solver. depth_gt.npz holds
``depth_gt`` (float32, NaN outside the mask) like DiLiGenT.

The output is deterministic: ``python scripts/make_samples.py --force`` rewrites the
committed files byte for byte (tests/test_samples.py regenerates them and compares).
"""

from __future__ import annotations

import argparse
import io as _bytes_io
import sys
import zipfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fnin_cli.data import analytic
from fnin_cli import io  # noqa: E402
from fnin_cli.camera import Camera  # noqa: E402

H, W = 192, 256


def _K(f: float) -> np.ndarray:
    return np.array([[f, 0.0, (W - 1) / 2], [0.0, f, (H - 1) / 2], [0.0, 0.0, 1.0]])


def _rounded_rect(margin: float, radius: float) -> np.ndarray:
    u, v = analytic.pixel_grid((H, W))
    du = np.clip(np.maximum(margin + radius - u, u - (W - 1 - margin - radius)), 0, None)
    dv = np.clip(np.maximum(margin + radius - v, v - (H - 1 - margin - radius)), 0, None)
    return du ** 2 + dv ** 2 <= radius ** 2


def _ellipse(cu, cv, ru, rv) -> np.ndarray:
    u, v = analytic.pixel_grid((H, W))
    return ((u - cu) / ru) ** 2 + ((v - cv) / rv) ** 2 <= 1.0


def dome():
    """Perspective: a spherical cap pushed into a tilted wall.

    On the left the sphere cuts the wall (a crease, continuous); on the right the cap's
    rim floats up to ~190 mm in front of the wall (a depth jump that fades to zero where
    the rim meets the wall, as at the self-occlusions of real objects).
    """
    K = _K(400.0)
    cam = Camera(K)
    wall = analytic.plane((H, W), cam, normal=[0.5, -0.1, -1.0], point=[0.0, 0.0, 1450.0])
    cap = analytic.sphere((H, W), cam, center=[-20.0, 0.0, 1560.0], radius=300.0, max_angle_deg=55.0)
    scene = analytic.nearest(wall, cap)
    mask = _rounded_rect(6, 24) & ~_ellipse(226, 160, 14, 14)
    return analytic.restrict(scene, mask), K


def _flute(cam, u_left, u_right, slope, v_cross, depth_amp=160.0):
    """A half-pipe along v over columns [u_left, u_right], cut where its normals reach
    60 deg (steep edges), sheared in depth by ``slope * (v - v_cross)`` mm per row."""
    uc, hw = (u_left + u_right) / 2, (u_right - u_left) / 2
    s60 = np.sin(np.radians(60.0))

    def fn(u, v):
        x = np.clip(s60 * (u - uc) / hw, -s60, s60)
        root = np.sqrt(1.0 - x * x)
        z = 1000.0 + slope * (v - v_cross) - depth_amp * root
        return z, depth_amp * x / root * s60 / hw, np.full_like(v, slope)

    return analytic.from_depth_function((H, W), cam, fn)


def flutes():
    """Perspective: three half-pipes side by side, each sheared in depth differently, so
    the depth jumps between them close at one row (110 and 70) and open to ~60-90 mm at
    the top and bottom. Steep edges make the normals jump there too."""
    K = _K(350.0)
    cam = Camera(K)
    u, _ = analytic.pixel_grid((H, W))
    edges = [0.0, 86.0, 172.0, 256.0]
    params = [(0.0, 0.0), (0.5, 110.0), (-0.5, 70.0)]
    parts = []
    for i, (slope, v_cross) in enumerate(params):
        band = (u >= edges[i]) & (u < edges[i + 1])
        parts.append(analytic.restrict(_flute(cam, edges[i] - 0.5, edges[i + 1] - 0.5, slope, v_cross), band))
    scene = analytic.nearest(*parts)
    return analytic.restrict(scene, _ellipse(127.5, 95.5, 124, 90)), K


def hill():
    """Orthographic (pixel units): a Gaussian hill on ground tilted toward the bottom,
    and a spherical cap (normals within 60 deg of the view) that sinks into the ground
    at the bottom (a crease) and floats up to ~20 in front of it at the top (a jump)."""
    cam = Camera(None, 1.0)
    cu, cv, s, hgt = 80.0, 110.0, 30.0, 35.0

    def ground(u, v):
        g = np.exp(-((u - cu) ** 2 + (v - cv) ** 2) / (2 * s * s))
        z = 300.0 - hgt * g + 0.05 * (u - cu) + 0.4 * (v - 96.0)
        return z, hgt * g * (u - cu) / (s * s) + 0.05, hgt * g * (v - cv) / (s * s) + 0.4

    base = analytic.from_depth_function((H, W), cam, ground)
    cap = analytic.sphere((H, W), cam, center=[180.0, 85.0, 300.0 + 0.05 * 100 + 0.4 * (85 - 96) + 30.0],
                   radius=60.0, max_angle_deg=60.0)
    scene = analytic.nearest(base, cap)
    return analytic.restrict(scene, _rounded_rect(6, 30) & ~_ellipse(40, 40, 14, 10)), None


SAMPLES = {"dome": (dome, ".png"), "flutes": (flutes, ".exr"), "hill": (hill, ".png")}


def _write_npz(path: Path, force: bool, **arrays) -> None:
    """np.savez_compressed without timestamps, so reruns give identical bytes."""
    path = io.check_output(path, force)
    with io.atomic_path(path) as tmp, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, arr in arrays.items():
            buf = _bytes_io.BytesIO()
            np.lib.format.write_array(buf, np.asarray(arr), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, buf.getvalue())


def _write_K(path: Path, K: np.ndarray, force: bool) -> None:
    path = io.check_output(path, force)
    with io.atomic_path(path) as tmp:
        np.savetxt(tmp, K)


def make_samples(out: Path, force: bool = False) -> list[Path]:
    """Write every sample under ``out``; returns the written files."""
    out = Path(out)
    written = []
    for name, (make, suffix) in SAMPLES.items():
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        surface, K = make()
        normals = surface.normals.astype(np.float32)
        paths = [folder / f"normal_map{suffix}", folder / "mask.png", folder / "depth_gt.npz"]
        io.write_normal_map(paths[0], normals, force=force, bits=16)
        io.write_array(paths[1], (surface.support * 255).astype(np.uint8), force=force)
        _write_npz(paths[2], force, depth_gt=surface.depth.astype(np.float32))
        if K is not None:
            paths.append(folder / "K.txt")
            _write_K(paths[-1], K, force)
        written += paths
    return written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "samples", help="output folder (default: samples/)")
    parser.add_argument("--force", action="store_true", help="overwrite existing files")
    args = parser.parse_args(argv)
    for p in make_samples(args.out, args.force):
        print(f"{p}  ({p.stat().st_size / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
