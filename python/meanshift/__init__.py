"""Gaussian mean shift on CPUs and GPUs (meanshift-skeleton's C++ library).

- :class:`MeanShift`: a scikit-learn clustering estimator (fit / predict / fit_predict).
- :func:`segment`: mean-shift image segmentation (Comaniciu & Meer), as ``meanshift segment``.
- :func:`backends`: the backends this build and this machine offer; :func:`auto_backend`.

Errors: ``ValueError`` for bad input (the library's message); :class:`BackendUnavailableError`
for a backend that is not compiled in or has no device here; :class:`DeviceError` for a device
runtime failure; all but ValueError derive from :class:`MeanShiftError` (a RuntimeError). Ctrl-C
cancels a run between two iterations (KeyboardInterrupt). See docs/python.md.
"""
from ._core import (  # noqa: F401
    BackendUnavailableError,
    DeviceError,
    MeanShiftError,
    NotSupportedError,
)
from ._core import version as _library_version
from ._common import auto_backend, backends
from ._estimator import MeanShift
from ._segment import Segmentation, segment

__version__ = _library_version
__all__ = [
    "MeanShift",
    "segment",
    "Segmentation",
    "backends",
    "auto_backend",
    "MeanShiftError",
    "BackendUnavailableError",
    "DeviceError",
    "NotSupportedError",
]
