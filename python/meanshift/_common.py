"""Shared helpers: the library options dict, progress reporting, backend names."""
from __future__ import annotations

import sys
import time
from numbers import Integral, Real
from typing import Any, Callable, Optional

from . import _core

BACKENDS = ("auto", "serial", "openmp", "opencl", "cuda")


def library_options(
    *,
    backend: str,
    device: Any,
    n_jobs: Optional[int],
    tune: Optional[dict],
    max_iter: int,
    tol: float,
    merge_eps: float,
    grouping: str,
    cutoff: Optional[float],
    exact: bool,
    search: str,
    seeding: str,
    bin_size: float,
    min_bin_freq: int,
    bin_data: bool,
    refine_boundaries: bool = True,
    fixed_iterations: Optional[int] = None,
    max_memory: Optional[int] = None,
) -> dict:
    """Checks the estimator-level parameters and returns the dict _core.cluster() reads."""
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    o: dict = {"backend": backend}
    if device is not None:
        # "P:D" is an OpenCL platform:device; an int or a list of ints are device indices (CUDA).
        if isinstance(device, str):
            if ":" in device:
                o["device_spec"] = device
            else:
                o["devices"] = [int(x) for x in device.split(",") if x.strip()]
        elif isinstance(device, Integral):
            o["devices"] = [int(device)]
        else:
            o["devices"] = [int(x) for x in device]
    if n_jobs is not None:
        if not isinstance(n_jobs, Integral) or n_jobs == 0 or n_jobs < -1:
            raise ValueError(f"n_jobs must be None, -1 or a positive int, got {n_jobs!r}")
        o["threads"] = 0 if n_jobs == -1 else int(n_jobs)
    if tune:
        o["tune"] = [f"{k}={v}" for k, v in dict(tune).items()]
    if not isinstance(max_iter, Integral) or max_iter < 1:
        raise ValueError(f"max_iter must be an int >= 1, got {max_iter!r}")
    o["max_iterations"] = int(max_iter)
    if fixed_iterations is not None:
        o["fixed_iterations"] = int(fixed_iterations)
    for name, v in (("tol", tol), ("merge_eps", merge_eps), ("bin_size", bin_size)):
        if not isinstance(v, Real) or not v >= 0 or v == float("inf"):
            raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")
    o["tolerance"] = float(tol)
    o["merge_eps"] = float(merge_eps)
    o["bin_size"] = float(bin_size)
    o["grouping"] = grouping
    o["cutoff"] = float("inf") if cutoff is None else float(cutoff)
    o["exact"] = bool(exact)
    o["search"] = search
    o["seeding"] = seeding
    if not isinstance(min_bin_freq, Integral) or min_bin_freq < 1:
        raise ValueError(f"min_bin_freq must be an int >= 1, got {min_bin_freq!r}")
    o["min_bin_count"] = int(min_bin_freq)
    o["bin_data"] = bool(bin_data)
    o["refine_boundaries"] = bool(refine_boundaries)
    if max_memory is not None:
        # The library's Options::max_memory (bytes; 0 = the machine's available memory).
        if isinstance(max_memory, bool) or not isinstance(max_memory, Integral) or max_memory < 0:
            raise ValueError(f"max_memory must be None or an int >= 0 (bytes), got {max_memory!r}")
        o["max_memory"] = min(int(max_memory), 2**64 - 1)
    return o


def refuse_non_numeric(X: Any, what: str = "X") -> None:
    """Raises ValueError for string, bytes or object arrays holding strings, as scikit-learn's
    estimators do (``dtype='numeric'``): numbers written as text are not silently parsed."""
    dtypes = []
    if hasattr(X, "dtypes") and not hasattr(X, "dtype"):  # a DataFrame: one dtype per column
        dtypes = list(X.dtypes)
    elif hasattr(X, "dtype"):
        dtypes = [X.dtype]
    elif not hasattr(X, "toarray"):  # lists and other sequences (sparse input is refused later)
        try:
            import numpy as np

            dtypes = [np.asarray(X).dtype]
        except (ValueError, TypeError):
            return  # ragged input: scikit-learn's own check reports it
    for dt in dtypes:
        kind = getattr(dt, "kind", "")
        if kind in ("U", "S", "V"):
            raise ValueError(
                f"{what}: dtype='numeric' is not compatible with arrays of bytes/strings (got {dt}); "
                "convert your data to numeric values explicitly instead")
        if kind == "O":
            import numpy as np

            values = np.asarray(X, dtype=object).ravel()
            if any(isinstance(v, (str, bytes)) for v in values):
                raise ValueError(f"{what}: holds strings (dtype object); convert your data to numeric values "
                                 "explicitly instead")


def progress_function(
    callback: Optional[Callable[[int, int, int], Any]], verbose: bool, what: str
) -> Optional[Callable[[int, int, int], Any]]:
    """The per-iteration function handed to the library: the user's callback and/or a line on stderr.

    The library calls it after every iteration with (iteration, modes still active, all modes);
    returning False cancels the run. Ctrl-C is checked by the bindings whether or not there is one.
    """
    if not verbose:
        return callback
    start = time.perf_counter()

    def report(iteration: int, active: int, total: int):
        sys.stderr.write(
            f"\r{what}: iteration {iteration}, {active} of {total} modes moving, "
            f"{time.perf_counter() - start:.1f} s"
        )
        if active == 0:
            sys.stderr.write("\n")
        sys.stderr.flush()
        return callback(iteration, active, total) if callback is not None else True

    return report


def backends() -> list:
    """What this build and this machine offer.

    Returns a list with one dict per backend the library knows: ``name``, ``compiled_in``,
    ``usable``, ``reason`` (why it cannot run here; empty when usable) and ``devices`` (a list of
    dicts: ``index``, ``name``, ``kind``, ``compute_units``, ``pus_per_ppu``, ``global_memory`` in
    bytes). ``backends()[i]["name"]`` is what ``MeanShift(backend=...)`` takes; what ``'auto'``
    picks is :func:`auto_backend`.
    """
    return _core.backends()


def auto_backend() -> str:
    """The backend ``backend='auto'`` runs on this machine ('cuda', 'opencl', 'openmp' or 'serial')."""
    return _core.resolve_auto_backend()
