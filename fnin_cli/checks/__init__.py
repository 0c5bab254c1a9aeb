"""Checks of an input's data before integration.

- :mod:`.decoding`: does the normal map integrate under the given decoding (convention,
  channel order, float encoding), or clearly better under a plausible mistake?
- :mod:`.invalid`: how many masked normals are NaN/inf, zero or not unit length.
"""

from .decoding import Decoding, DecodingCheck, check_decoding, decode, given_decoding, integrability_score
from .invalid import INVALID_MAX, InvalidReport, check_invalid, invalid_report

__all__ = ["Decoding", "DecodingCheck", "INVALID_MAX", "InvalidReport", "check_decoding", "check_invalid", "decode",
           "given_decoding", "integrability_score", "invalid_report"]
