"""fnin: integrate surface-normal maps into depth maps and meshes.

Python API::

    from fnin_cli import load_input, integrate
    from fnin_cli.mesh import build_mesh, write_mesh
    inp = load_input("normal_map.png", mask="mask.png", K="K.txt")
    res = integrate(inp, method="fnin")      # any of METHODS: "fnin-s", "bini", "wls", ...
    res.depth                                # (H, W) float32, NaN outside the mask
    write_mesh("mesh.ply", build_mesh(res.depth, res.camera, res.mask, normals=inp.normals))

Files: ``fnin_cli.io``; methods: ``fnin_cli.solvers.registry``; batches: ``fnin_cli.batch``;
the layout of the package: docs/methods.md.
"""

__version__ = "0.1.0"

from .camera import Camera  # noqa: E402
from .errors import FninError  # noqa: E402
from .pipeline import METHODS, Input, Result, build_input, integrate, load_input  # noqa: E402

__all__ = ["Camera", "FninError", "Input", "Result", "METHODS", "build_input", "integrate", "load_input"]
