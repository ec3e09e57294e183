"""Type stub of the compiled module meanshift._core (internal: use the meanshift package)."""
from typing import Any, Callable, Optional, Union

import numpy as np
import numpy.typing as npt

version: str
default_cutoff: float
default_bin_size: float

class MeanShiftError(RuntimeError): ...
class BackendUnavailableError(MeanShiftError): ...
class DeviceError(MeanShiftError): ...
class NotSupportedError(MeanShiftError): ...

Progress = Optional[Callable[[int, int, int], Any]]

def cluster(
    data: npt.NDArray[np.float32],
    bandwidth: Union[float, npt.NDArray[np.float64]],
    weights: Optional[npt.NDArray[np.float32]],
    seeds: Optional[npt.NDArray[np.float32]],
    options: dict,
    progress: Progress,
) -> dict: ...
def segment_float(
    pixels: npt.NDArray[np.float32], height: int, width: int, hs: float, hr: float, min_region: int,
    fusion: float, options: dict, progress: Progress,
) -> dict: ...
def segment_rgb8(
    rgb: npt.NDArray[np.uint8], height: int, width: int, hs: float, hr: float, min_region: int,
    fusion: float, options: dict, progress: Progress,
) -> dict: ...
def backends() -> list[dict]: ...
def resolve_auto_backend() -> str: ...
def compiled_backends() -> list[str]: ...
def tune_keys() -> list[str]: ...
