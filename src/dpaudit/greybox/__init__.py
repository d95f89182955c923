"""Grey-box auditing: replay a pure-Python / NumPy mechanism on neighbouring data sets with
identical randomness and compare the inputs reaching its noise primitives
(:mod:`~dpaudit.greybox.recorder`, :mod:`~dpaudit.greybox.replay`).  Compiled libraries
(OpenDP, PyDP) cannot be intercepted and stay black-box (:mod:`dpaudit.zoo`)."""

from dpaudit.greybox.recorder import RAW_RANDOMNESS, Call, Primitive, Recorder
from dpaudit.greybox.replay import GreyboxFinding, Trace, compare, record, replay

__all__ = ["Primitive", "Call", "Recorder", "RAW_RANDOMNESS", "Trace", "GreyboxFinding",
           "record", "replay", "compare"]
