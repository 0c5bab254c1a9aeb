"""Input preparation: one INPUT and the run's options made ready to integrate.

:func:`prepare` does every piece of input work of ``fnin integrate`` (the CLI, one input
or a batch, and :func:`fnin_cli.batch.runner.run_jobs`): it checks the map's size and
memory before reading it, reads the mask once, builds K from ``--fx/--fy/--cx/--cy``,
loads and decodes the map (:func:`~fnin_cli.inputs.load_input`), applies
``--downsample`` to the map, the ``--depth-at`` pins and the depth prior, and reads the
depth prior. What it returns is what :func:`fnin_cli.pipeline.integrate` takes, plus the
fields of the ``--json`` record that describe the input.

From Python::

    from fnin_cli.batch.options import Options
    from fnin_cli.prepare import prepare
    from fnin_cli import integrate
    ready = prepare("scan/normal_map.png", Options(method="wls", downsample=2).check())
    res = integrate(ready.inp, method="wls", depth_at=ready.depth_at, depth_prior=ready.prior)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from . import io
from .batch.memory import check_memory
from .batch.options import Options
from .batch.plan import output_name
from .camera import intrinsics
from .downsample import downsample_input, downsample_pins, downsample_prior
from .errors import FninError
from .inputs import Input, load_input
from .io.formats import probe_shape
from .io.layout import input_files, prior_beside
from .prior import DepthPrior, read_prior


@dataclass
class Prepared:
    """An input ready to integrate.

    Attributes
    ----------
    inp : Input
        The map as integrated (after ``--downsample``).
    depth_at : list or tuple or None
        The ``--depth-at`` pins in the pixels of ``inp``.
    prior : DepthPrior or None
        The depth prior in the pixels of ``inp``.
    record : dict
        The ``--json`` record's fields about the input: ``convention``, ``mask_source``,
        ``camera_source``, ``shape``, ``camera``, ``pixels``; ``downsample`` and
        ``input_shape`` with ``--downsample``; ``prior_source`` with a depth prior.
    seconds : dict
        ``check`` (the decoding check, when it ran) and ``load`` (the whole preparation).
    """

    inp: Input
    depth_at: list | tuple | None = None
    prior: DepthPrior | None = None
    record: dict = field(default_factory=dict)
    seconds: dict = field(default_factory=dict)


def prior_file(path, options: Options, name: str | None = None):
    """The depth prior file of the input ``path``.

    ``--depth-prior`` (a path, or a template whose ``{stem}`` is ``name``, the input's
    output name: :func:`~fnin_cli.batch.plan.output_name` when None), else a
    ``depth_prior.*`` of its layout folder; None without one.
    """
    if options.depth_prior is not None:
        return Path(options.depth_prior.replace("{stem}", output_name(path) if name is None else name))
    return prior_beside(path)


def prepare(path, options: Options, name: str | None = None, mesh: bool = True, workers: int = 1,
            record: dict | None = None) -> Prepared:
    """Read, check and reduce one INPUT under ``options``.

    Parameters
    ----------
    path : str or Path
        A normal map file or a DiLiGenT/BiNI-layout folder.
    options : Options
        The run's options (checked: :meth:`Options.check`).
    name : str, optional
        The input's output name, for a ``{stem}`` in ``--depth-prior``.
    mesh : bool
        Whether a mesh will be built (the memory check counts it).
    workers : int
        Inputs run at once (each gets its share of the free memory).
    record : dict, optional
        Filled with the record's fields (and its ``seconds``) as they become known, so
        that after a failure it holds what was learned before it.

    Returns
    -------
    Prepared

    Raises
    ------
    FninError
        A missing or unreadable file, a map too large for the free memory, a decoding
        or mask problem, a bad depth prior: one line naming the file.
    """
    rec = {} if record is None else record
    secs = rec.setdefault("seconds", {})
    t = time.perf_counter()
    npath, layout_mask, _ = input_files(path)
    if not npath.exists():
        raise FninError("file not found", npath)
    shape = probe_shape(npath)
    ds = options.downsample
    mask = options.mask
    mask_source = None   # the mask file read here (the loader then gets its array)
    prior_path = prior_file(path, options, name)   # the memory check counts it; read after the map
    if shape is not None:
        io.check_size(shape, npath)
        # the masked pixels decide the memory: read the mask now (once; the loader gets the array)
        mask_path = mask if mask is not None else layout_mask
        if mask_path is not None:
            mask, mask_source = io.read_mask(mask_path, shape), str(mask_path)
            # the memory check, once: before reading the map where its masked pixels are known
            check_memory(shape, options.method, npath, mesh, workers, int(mask.sum()), ds, prior_path is not None)
    checked = mask_source is not None
    K = options.K
    if options.fx is not None:
        if shape is None:  # no cheap header: read it (the loader reads it again; rare)
            shape = io.read_array(npath)[0].shape[:2]
        K = intrinsics(shape, options.fx, options.fy, options.cx, options.cy)
    inp = load_input(path, mask=mask, K=K, ortho=options.ortho,
                     pixel_size=options.pixel_size, convention=options.convention, channels=options.channels,
                     float_encoding=options.float_encoding, allow_invalid=options.allow_invalid,
                     flip=options.flip)
    rec["convention"] = inp.convention
    # where the mask and camera came from: a file (--mask/--K, or the input's folder), the
    # --fx/--fy/--cx/--cy options, or none (valid normals; orthographic)
    rec["mask_source"] = mask_source if mask_source is not None else inp.mask_source
    rec["camera_source"] = "--fx/--fy/--cx/--cy" if options.fx is not None else inp.camera_source
    if inp.check is not None:
        secs["check"] = inp.check["seconds"]
    if options.fx is not None:
        inp.source = str(npath)
    full_shape, full_pixels = inp.shape, int(inp.mask.sum())
    if ds > 1:
        inp = downsample_input(inp, ds)
        rec["downsample"] = ds
        rec["input_shape"] = list(full_shape)
    rec["shape"] = list(inp.shape)
    rec["camera"] = "perspective" if inp.camera.perspective else "orthographic"
    rec["pixels"] = int(inp.mask.sum())
    if not checked:   # no mask file: the memory check with the map's valid normals as its mask
        check_memory(full_shape, options.method, npath, mesh, workers, full_pixels, ds, prior_path is not None)
    depth_at = downsample_pins(options.depth_at, ds)
    prior = None
    if prior_path is not None:
        prior = read_prior(prior_path, full_shape, inp.camera, options.prior_sigma, options.prior_kind)
        prior = downsample_prior(prior, ds)
        rec["prior_source"] = str(prior_path)
    secs["load"] = round(time.perf_counter() - t, 4)
    return Prepared(inp, depth_at, prior, {k: rec[k] for k in _FIELDS if k in rec},
                    {k: secs[k] for k in ("check", "load") if k in secs})


# the record fields prepare fills, in the order it fills them
_FIELDS = ("convention", "mask_source", "camera_source", "downsample", "input_shape", "shape", "camera", "pixels",
           "prior_source")
