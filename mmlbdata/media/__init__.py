"""media: pixels and frames into the image store.

PDF pages (``pdf``, ``documents``, ``page_grid``), text rendered to A4 pages (``pages``), COCO
grids (``stitch``), video frames and subtitles (``video``, ``subtitles``, ``interleave``,
``download_video``, ``transcribe``). Every image goes through :mod:`mmlbdata.core.store`.

No benchmark logic: recipes decide what to render, this layer renders it. May import
``mmlbdata.core`` only.
"""
