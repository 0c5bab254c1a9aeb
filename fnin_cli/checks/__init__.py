"""Checks of an input's data before integration.

- :mod:`.decoding`: does the normal map integrate under the given decoding (convention,
  channel order, float encoding), or clearly better under a plausible mistake? It decides
  from the cues of :mod:`.cues` over the decodings of :mod:`.decodings`.
- :mod:`.invalid`: how many masked normals are NaN/inf, zero or not unit length.
"""

from .cues import integrability_score
from .decoding import DecodingCheck, check_decoding
from .decodings import Decoding, decode, given_decoding
from .invalid import INVALID_MAX, InvalidReport, check_invalid, invalid_report

__all__ = ["Decoding", "DecodingCheck", "INVALID_MAX", "InvalidReport", "check_decoding", "check_invalid", "decode",
           "given_decoding", "integrability_score", "invalid_report"]
