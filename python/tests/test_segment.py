"""meanshift.segment: uint8 and float images, outputs, errors."""
import numpy as np
import pytest

import meanshift
from test_cli import patches_image


def test_segments_the_patches():
    img = patches_image()
    s = meanshift.segment(img, min_region=20)
    assert s.labels.shape == (36, 48) and s.labels.dtype == np.int32
    assert s.filtered.shape == img.shape and s.filtered.dtype == np.uint8
    assert s.segmented.shape == img.shape and s.segmented.dtype == np.uint8
    assert s.n_segments == 4 and s.sizes.sum() == 36 * 48
    # Each patch is one segment.
    for ys, xs in ((slice(0, 18), slice(0, 24)), (slice(0, 18), slice(24, 48)),
                   (slice(18, 36), slice(0, 30)), (slice(18, 36), slice(30, 48))):
        assert len(np.unique(s.labels[ys, xs])) == 1
    # The segmented image is the patch colour (the noise averages out), within 3 levels.
    assert abs(s.segmented[5, 5].astype(int) - (200, 40, 40)).max() <= 3
    # Filtering smooths the noise: the filtered patch varies less than the input.
    assert s.filtered[:18, :24].std(axis=(0, 1)).max() < img[:18, :24].std(axis=(0, 1)).max()


def test_float_image_in_its_own_units():
    img = np.zeros((20, 30, 2), dtype=np.float64)
    img[:, 15:] = (10.0, 5.0)
    s = meanshift.segment(img, 2.0, 1.0, min_region=0)
    assert s.filtered.dtype == np.float32 and s.filtered.shape == (20, 30, 2)
    assert s.n_segments == 2
    np.testing.assert_allclose(s.segmented[0, 0], (0, 0), atol=1e-6)
    np.testing.assert_allclose(s.segmented[0, 29], (10, 5), atol=1e-6)
    gray = meanshift.segment(img[:, :, 0].astype(np.float32), 2.0, 1.0, min_region=0)
    assert gray.n_segments == 2 and gray.filtered.shape == (20, 30, 1)


@pytest.mark.parametrize("bad, match", [
    (np.zeros((4, 4, 4), np.uint8), "3 channels"),
    (np.zeros((4, 4), np.uint8), "shape"),
    (np.zeros((0, 4, 3), np.uint8), "shape"),
    (np.full((4, 4, 3), np.nan), "NaN"),
    (np.zeros((4, 4, 3), np.int16), "dtype"),
])
def test_bad_images(bad, match):
    with pytest.raises(ValueError, match=match):
        meanshift.segment(bad)


def test_bad_bandwidths():
    with pytest.raises(ValueError, match="spatial_bandwidth"):
        meanshift.segment(patches_image(), 0.0, 6.0)


def test_progress_and_cancel():
    calls = []
    meanshift.segment(patches_image(), progress=lambda i, a, t: calls.append((i, a, t)))
    # Per iteration (banded ascent) or per band of rows (the openmp image kernel): iterations within
    # the limit, the total fixed, the modes or pixels still to do never growing.
    assert calls and all(1 <= c[0] <= 5 and c[2] == 36 * 48 for c in calls)  # max_iter = 5
    assert [c[1] for c in calls] == sorted((c[1] for c in calls), reverse=True)
    with pytest.raises(meanshift.MeanShiftError, match="cancelled"):
        meanshift.segment(patches_image(), progress=lambda i, a, t: False)
