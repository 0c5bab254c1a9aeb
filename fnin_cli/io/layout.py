"""Folder layouts: the DiLiGenT/BiNI case folder (normal map, optional mask and K.txt).

The one place for the file names fnin looks for inside an input folder.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import FninError

FOLDER_NORMALS = ("normal_map.png", "normal_map.exr", "normal_map.npy", "normal_map.tiff", "normal_map.tif",
                  "normal.png", "normal.exr", "normal.npy")
FOLDER_MASKS = ("mask.png", "mask.npy", "mask.exr")
FOLDER_K = "K.txt"
FOLDER_PRIORS = ("depth_prior.npy", "depth_prior.exr", "depth_prior.tif", "depth_prior.tiff", "depth_prior.png",
                 "depth_prior.csv")
# suffixes of lossy image files: their compression changes the colours, hence the normals
LOSSY_SUFFIXES = (".jpg", ".jpeg", ".webp", ".avif", ".heic")
FOLDER_FILES = FOLDER_NORMALS + FOLDER_MASKS + (FOLDER_K,) + FOLDER_PRIORS   # everything a folder input may read


def find_in_folder(folder: Path):
    """The (normal map, mask or None, K.txt or None) paths of a case folder.

    Raises
    ------
    FninError
        If the folder holds none of ``FOLDER_NORMALS``.
    """
    normals = next((folder / n for n in FOLDER_NORMALS if (folder / n).exists()), None)
    if normals is None:
        raise FninError(_no_normals(folder), folder)
    return (normals, *_mask_and_K(folder))


def _no_normals(folder: Path) -> str:
    """The one-line reason a folder holds no readable normal map, naming a ``normal_map.*``
    or ``normal.*`` file it does hold and why that one is refused."""
    wanted = "normal_map.png / .exr / .npy / .tif"
    stems = {Path(n).stem for n in FOLDER_NORMALS}
    try:
        found = sorted(p for p in folder.iterdir() if p.stem in stems and p.is_file())
    except OSError:
        found = []
    if not found:
        return f"folder has no {wanted}"
    name, suf = found[0].name, found[0].suffix.lower()
    if suf in LOSSY_SUFFIXES:
        why = (f"holds {name}, a lossy format (its compression changes the normals): save the map as "
               f".png (8/16-bit) or .tif, or .exr/.npy for floats")
    else:
        why = f"holds {name}, a type fnin does not read: save the map as .png, .tif, .exr or .npy"
    return f"folder has no {wanted}; it {why}"


def in_layout(path) -> bool:
    """Whether ``path`` is a file named like a layout folder's normal map (``normal_map.png``, ...)."""
    return Path(path).name in FOLDER_NORMALS


def beside(normals_file):
    """The (mask or None, K.txt or None) paths beside a normal map named like a layout
    folder's (``x/normal_map.png`` reads ``x/mask.png`` and ``x/K.txt`` as the folder
    ``x`` would); (None, None) for any other file name (README "Inputs")."""
    p = Path(normals_file)
    if not in_layout(p):
        return None, None
    return _mask_and_K(p.parent)


def input_files(path):
    """The (normal map, mask or None, K.txt or None) paths an INPUT reads: a case folder's
    (:func:`find_in_folder`), or a file and what lies :func:`beside` it."""
    path = Path(path)
    if path.is_dir():
        return find_in_folder(path)
    return (path, *beside(path))


def prior_beside(path):
    """The ``depth_prior.*`` of a case folder, or beside a normal map named like a layout
    folder's (read like its mask and K); None elsewhere."""
    path = Path(path)
    folder = path if path.is_dir() else (path.parent if in_layout(path) else None)
    if folder is None:
        return None
    return next((folder / n for n in FOLDER_PRIORS if (folder / n).exists()), None)


def _mask_and_K(folder: Path):
    mask = next((folder / n for n in FOLDER_MASKS if (folder / n).exists()), None)
    K = folder / FOLDER_K if (folder / FOLDER_K).exists() else None
    return mask, K
