"""Writing one input's outputs: mesh, depth map, weights map, preview, the depth prior's trust.
"""

from __future__ import annotations

import time

from .. import io
from ..mesh import mesh_arrays, write_mesh
from .options import Options
from .preview import preview_image, preview_title


def write_outputs(outputs: dict, inp, res, options: Options, rec: dict | None = None, status=None) -> dict:
    """Write the mesh / depth / weights / preview of one result (each atomically);
    ``status.stage`` is told "mesh" and "write"."""
    written = rec["outputs"] if rec is not None else {}
    for kind, path in outputs.items():
        if status is not None:
            status.stage("mesh" if kind == "mesh" else "write")
        if kind == "mesh":
            t = time.perf_counter()
            mesh = mesh_arrays(res.depth, res.camera, res.mask, normals=inp.normals, colors=options.colors,
                              cut=options.cut)
            if rec is not None:
                rec["seconds"]["mesh"] = round(time.perf_counter() - t, 4)
            write_mesh(path, mesh, force=options.force, axes=options.mesh_axes)
        elif kind == "depth":
            io.write_array(path, res.depth, force=options.force)
        elif kind == "weights":
            io.write_array(path, res.discontinuity, force=options.force)
        elif kind == "prior_weights":      # prepare() refused the input without a prior
            io.write_array(path, res.prior_trust, force=options.force)
        elif kind == "preview":
            path = io.check_output(path, options.force)
            img = preview_image(inp.normals, res.depth, res.discontinuity, res.camera, res.mask,
                               title=preview_title(inp, res), loose=getattr(res, "loose", None),
                               disagree=getattr(res, "prior_disagree", None))
            with io.atomic_path(path) as tmp:
                io.write_png(tmp, img)
        written[kind] = str(path)
    return written
