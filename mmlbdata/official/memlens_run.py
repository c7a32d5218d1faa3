"""What MemLens's official runners (xrenaf/MEMLENS @fd4c8d7) do to a record's images before the model.

``eval.py`` and ``eval_api.py`` both default ``--max_image_size`` to 800 (the README: "Resize images
to max N pixels (OOM prevention)"), and every wrapper that takes it shrinks each image with
``vlm_models/model_utils.py``'s ``resize_image_max_size`` before its processor or API call. A
1600x1200 photo therefore reaches the model as 800x600: 609 image tokens under the unified rule
instead of 2,451. :func:`sent_size` is that rule on a size alone, so the builder counts what the
model receives without decoding an image (sizes come from file headers).
"""
from __future__ import annotations

#: eval.py / eval_api.py ``--max_image_size`` default
MAX_IMAGE_SIZE = 800


def sent_size(width: int, height: int, max_size: int = MAX_IMAGE_SIZE) -> tuple[int, int]:
    """``resize_image_max_size``: an image within ``max_size`` on both sides is kept; otherwise its
    longer side becomes ``max_size`` (the height when the sides are equal: the official ``else``
    branch) and the other ``min(int(max_size / longer * shorter), max_size)``."""
    if width <= max_size and height <= max_size:
        return width, height
    if width > height:
        return max_size, min(int(max_size / width * height), max_size)
    return min(int(max_size / height * width), max_size), max_size
