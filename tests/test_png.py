from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from memevo.environments.png import write_png


def _read(path: Path) -> tuple[str, tuple[int, int], bytes, dict[str, object]]:
    with Image.open(path) as image:
        return image.mode, image.size, image.tobytes(), dict(image.info)


def test_a_written_png_reads_back_as_the_same_pixels_with_savefigs_marks(tmp_path: Path) -> None:
    """Pixels of every value, a width that is not a multiple of anything, and the resolution and software
    fields savefig writes (read the same way by Pillow)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    from memevo.environments.plots import SAVE_DPI, SOFTWARE

    pixels = np.random.default_rng(0).integers(0, 256, size=(37, 53, 4), dtype=np.uint8)
    write_png(tmp_path / "hand.png", pixels, dpi=SAVE_DPI, software=SOFTWARE)
    mode, size, data, info = _read(tmp_path / "hand.png")
    assert (mode, size, data) == ("RGBA", (53, 37), pixels.tobytes())

    figure = plt.figure(figsize=(1, 1))
    figure.savefig(tmp_path / "savefig.png", dpi=SAVE_DPI)
    plt.close(figure)
    *_, savefig_info = _read(tmp_path / "savefig.png")
    assert info == savefig_info


def test_pixels_that_are_not_rgba_bytes_are_refused(tmp_path: Path) -> None:
    for wrong in (np.zeros((4, 4, 3), np.uint8), np.zeros((4, 4, 4), np.float32), np.zeros((4, 16), np.uint8)):
        with pytest.raises(ValueError, match="height x width x 4 uint8"):
            write_png(tmp_path / "wrong.png", wrong, dpi=100, software="test")
    assert not (tmp_path / "wrong.png").exists()
