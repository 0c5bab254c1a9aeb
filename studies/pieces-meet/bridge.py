"""bridge-placement's candidate (studies/bridge-placement/bridge.py, as measured inside the
package at 71ab633), loaded from that folder by path: this study's baseline and the shift
its candidates build on."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "bridge_placement_bridge", Path(__file__).resolve().parent.parent / "bridge-placement" / "bridge.py")
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)

bridge_shift = _module.bridge_shift
place_by_bridges = _module.place_by_bridges
