"""Files: formats (read, header probe, write), folder layouts and atomic writes.

Every reader returns plain numpy arrays and raises :class:`~fnin_cli.errors.FninError`
(never a raw library exception) with the file name and what to try. Every writer is
atomic: it writes a temporary file in the destination folder and renames it over the
target, so a failure never leaves a partial file and never touches an existing one.

- :mod:`.formats` — one :class:`~.formats.Format` per suffix; ``read_array``,
  ``read_mask``, ``read_K``, ``write_array``, ``read_depth``, ``write_png``, ``write_normal_map``,
  ``probe_shape``.
- :mod:`.layout` — the file names of a DiLiGenT/BiNI-layout folder.
- :mod:`.files` — ``check_output`` and ``atomic_path``.
- :mod:`.depth` — depth maps as 16-bit PNG with their scale in text chunks.
"""

from .files import atomic_path, check_output
from .formats import (DEPTH_SUFFIXES, FORMATS, check_size, Format, MASK_SUFFIXES, MAX_PIXELS, MESH_SUFFIXES,
                      NORMAL_SUFFIXES, probe_shape, read_K, read_array, read_depth, read_mask, to_uint16,
                      write_array, write_normal_map, write_png)
from .layout import FOLDER_MASKS, FOLDER_NORMALS, find_in_folder

__all__ = ["DEPTH_SUFFIXES", "FOLDER_MASKS", "FOLDER_NORMALS", "FORMATS", "Format", "MASK_SUFFIXES", "MAX_PIXELS",
           "MESH_SUFFIXES", "NORMAL_SUFFIXES", "atomic_path", "check_output", "check_size", "find_in_folder", "probe_shape",
           "read_K", "read_array", "read_depth", "read_mask", "to_uint16", "write_array", "write_normal_map",
           "write_png"]
