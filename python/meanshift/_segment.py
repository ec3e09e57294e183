"""meanshift.segment: Comaniciu & Meer's mean-shift image segmentation, as `meanshift segment` runs it."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np

from . import _core
from ._common import library_options, progress_function


@dataclass
class Segmentation:
    """The result of :func:`segment` for an H × W image with C channels.

    labels : (H, W) int32, segment of each pixel in [0, n_segments); segment 0 is the largest.
    filtered : (H, W, C) the filtered image (each pixel replaced by its mode's colour); uint8 sRGB
        for uint8 input, else float32 in the input's units.
    segmented : (H, W, C) each pixel painted with its segment's mean colour (uint8 input: the mean
        in linear light, as the CLI paints it; float input: the mean of the input values).
    colours : (S, C) float32 mean input colour of each segment (CIELAB for uint8 input).
    mode_colours : (S, C) float32 mean filtered colour of each segment (CIELAB for uint8 input).
    sizes : (S,) int64 pixel counts, decreasing.
    info : dict: backend, search, cutoff, iterations, regions after each step, timings (s).
    """

    labels: np.ndarray
    filtered: np.ndarray
    segmented: np.ndarray
    colours: np.ndarray
    mode_colours: np.ndarray
    sizes: np.ndarray
    info: dict = field(default_factory=dict)

    @property
    def n_segments(self) -> int:
        return int(self.sizes.shape[0])


def segment(
    image,
    spatial_bandwidth: float = 3.0,
    range_bandwidth: float = 6.0,
    *,
    min_region: int = 40,
    fusion: float = 1.0,
    cutoff: Optional[float] = 4.0,
    exact: bool = False,
    max_iter: int = 5,
    tol: float = 0.3,
    backend: str = "auto",
    device: Any = None,
    n_jobs: Optional[int] = None,
    tune: Optional[dict] = None,
    verbose: bool = False,
    progress: Optional[Callable[[int, int, int], Any]] = None,
) -> Segmentation:
    """Segments an image by mean shift: filtering, fusion of close regions, pruning of small ones.

    The pipeline and every default are those of ``meanshift segment`` (docs/cli.md,
    docs/segmentation.md): a uint8 image gives the CLI's labels and images bit for bit.

    Parameters
    ----------
    image : array of shape (H, W, 3) uint8 (sRGB), or (H, W, C) / (H, W) float32 or float64
        uint8 images are converted to CIELAB (D65) as the CLI does, and the range bandwidth is in
        CIELAB units; float images are used as given (their channels' own units).
    spatial_bandwidth : float, default=3
        hs, the Gaussian's standard deviation over x and y, in pixels.
    range_bandwidth : float, default=6
        hr, the standard deviation over the colour channels.
    min_region : int, default=40
        Segments under this many pixels are merged into the adjacent one of closest colour
        (0 or 1: no pruning).
    fusion : float, default=1.0
        Adjacent regions whose mean mode colours lie within ``fusion`` × hr are fused (0: none).
    cutoff : float or None, default=4
        Truncated kernel radius in bandwidths (None: exact kernel).
    exact : bool, default=False
        The exact kernel, brute force (O((H·W)²) per iteration).
    max_iter : int, default=5
    tol : float, default=0.3
        A pixel's ascent stops when its shift is at most ``tol`` bandwidths or after ``max_iter``
        iterations (the CLI's defaults for segment, as OpenCV's pyrMeanShiftFiltering stops).
    backend, device, n_jobs, tune, verbose, progress
        As for :class:`meanshift.MeanShift`.

    Returns
    -------
    Segmentation
    """
    a = np.asarray(image)
    if a.ndim == 2 and a.dtype != np.uint8:
        a = a[:, :, None]
    if a.ndim != 3 or a.shape[0] < 1 or a.shape[1] < 1 or a.shape[2] < 1:
        raise ValueError(f"image must have shape (H, W, C) (or (H, W) for one float channel), got {np.shape(image)}")
    h, w, c = a.shape
    for name, v in (("spatial_bandwidth", spatial_bandwidth), ("range_bandwidth", range_bandwidth)):
        if not np.isfinite(v) or v <= 0:
            raise ValueError(f"{name} must be finite and > 0, got {v!r}")
    opts = library_options(
        backend=backend, device=device, n_jobs=n_jobs, tune=tune, max_iter=max_iter, tol=tol,
        merge_eps=0.5, grouping="sequential", cutoff=cutoff, exact=exact, search="auto",
        seeding="all", bin_size=0.5, min_bin_freq=1, bin_data=False)
    cb = progress_function(progress, verbose, "segment")
    if a.dtype == np.uint8:
        if c != 3:
            raise ValueError(f"a uint8 image must have 3 channels (sRGB), got {c}")
        rgb = np.ascontiguousarray(a).reshape(h * w, 3)
        r = _core.segment_rgb8(rgb, h, w, float(spatial_bandwidth), float(range_bandwidth), int(min_region),
                               float(fusion), opts, cb)
        filtered = r.pop("filtered_rgb").reshape(h, w, 3)
        segmented = r.pop("segmented_rgb").reshape(h, w, 3)
    elif a.dtype in (np.float32, np.float64):
        if not np.all(np.isfinite(a)):
            raise ValueError("image contains NaN or Inf")
        px = np.ascontiguousarray(a, dtype=np.float32).reshape(h * w, c)
        r = _core.segment_float(px, h, w, float(spatial_bandwidth), float(range_bandwidth), int(min_region),
                                float(fusion), opts, cb)
        filtered = r["filtered"].reshape(h, w, c)
        segmented = r["colours"][r["labels"]].reshape(h, w, c)
    else:
        raise ValueError(f"image dtype must be uint8 (sRGB), float32 or float64, got {a.dtype}")
    labels = r.pop("labels").reshape(h, w)
    colours, mode_colours, sizes = r.pop("colours"), r.pop("mode_colours"), r.pop("sizes")
    r.pop("filtered")
    return Segmentation(labels=labels, filtered=filtered, segmented=segmented, colours=colours,
                        mode_colours=mode_colours, sizes=sizes, info=r)
