"""Text -> A4 page images, the way ReadBench shows a context to a model.

Layout is done by reportlab (Helvetica 12 pt, the metric twin of the Arial the benchmark
specifies; 0.25 in margins; line height 1.2 x the font size) and rasterized by PyMuPDF at a
chosen PPI (92.9 by default, which turns A4 into 768 x 1086 pixels). Wrapping is greedy on
the measured width of each word, a word wider than a line is broken rather than clipped,
paragraphs (newlines) and blank lines are kept. The last page is cropped to the end of the
text plus the bottom margin so a short context does not come with a page of white, and every
page is cropped in width as ReadBench's renderer (``data_prep.py`` ``_render``) crops it: the
left margin, the page's widest line, then four margins, never wider than A4. A page of wrapped
prose keeps the full width (its widest line is within four margins of the text width); an
options image or a page of short lines comes out narrow. ``crop_width=False`` keeps every page
at the full width (the layout of earlier versions of this library). ``official_settings(ppi)`` is
ReadBench's own pixel layout instead (15 px font, 21 px lines, 49 lines a page at 92.9 PPI).

The output is deterministic: the PDF is written in reportlab's invariant mode and PNG
encoding has no timestamps, so the same text and settings give the same bytes, which lets
the image store deduplicate renders by a recipe key.

Helvetica, a standard PDF font, covers Windows-1252 only. Other characters (Greek, maths,
Latin Extended, CJK ...) are drawn with a fallback font, Droid Sans Fallback, the TrueType font
that ships inside PyMuPDF (so every machine with the same PyMuPDF renders the same bytes; its
hash is part of the settings key). What neither font has (emoji, control characters) is replaced
by a visible marker and counted in ``RenderedPages.replaced`` so a builder can report it instead
of crashing or silently dropping text.
"""
from __future__ import annotations

import bisect
import hashlib
import io
import math
from collections import Counter
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from itertools import accumulate
from typing import TYPE_CHECKING, Callable, Iterable, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from mmlbdata.core.store import ImageRef, ImageStore

DEFAULT_PPI = 92.9
POINTS_PER_INCH = 72.0
A4_POINTS = (595.2755905511812, 841.8897637795277)  # 210 x 297 mm, as reportlab defines A4
REPLACEMENT = "\u00a4"  # the currency sign: in the font, visible, and rare in real text
RENDERER_VERSION = "3"  # bump when the output bytes change for the same settings
RIGHT_PAD_MARGINS = 4  # ReadBench's width crop: widest line + 4 margins on the right


@dataclass(frozen=True)
class PageSettings:
    """Everything that determines the rendered bytes (part of the cache recipe key)."""

    ppi: float = DEFAULT_PPI
    font: str = "Helvetica"
    font_size: float = 12.0
    margin_in: float = 0.25
    line_height: float = 1.2
    page_size: tuple[float, float] = A4_POINTS
    crop_last: bool = True
    crop_width: bool = True  # each page cut to margin + its widest line + 4 margins (ReadBench)
    gray: bool = True  # black text on white: 8-bit gray PNGs are 2.4x smaller than RGB, same pixels
    fallback: bool = True  # draw characters Helvetica lacks with PyMuPDF's Droid Sans Fallback
    break_long_words: bool = True  # False: a word wider than a line overflows it (ReadBench's _wrap)
    trim_trailing_blank: bool = True  # False: trailing blank lines stay and lengthen the last page

    @property
    def margin(self) -> float:
        return self.margin_in * POINTS_PER_INCH

    @property
    def leading(self) -> float:
        return self.font_size * self.line_height

    @property
    def text_width(self) -> float:
        return self.page_size[0] - 2 * self.margin

    @property
    def lines_per_page(self) -> int:
        usable = self.page_size[1] - 2 * self.margin
        return max(1, int(usable // self.leading + 1e-9))

    def key(self) -> str:
        """Short stable string of the settings, for recipe keys."""
        raw = repr(sorted(asdict(self).items())) + RENDERER_VERSION
        if self.fallback:
            raw += _fallback_font()[1]
        return hashlib.sha256(raw.encode()).hexdigest()[:12]


# ReadBench's renderer (data_prep.py ``get_font_and_dimensions``): A4 as 8.27 x 11.69 inches, a quarter
# inch margin and a 12 pt font, each truncated to whole pixels at the PPI; Arial; line height the
# font's ascent + descent in pixels plus a fifth of it (truncated) as spacing.
OFFICIAL_PAGE_INCHES = (8.27, 11.69)
OFFICIAL_FONT_PT = 12
ARIAL_ASCENT, ARIAL_DESCENT = 1854 / 2048, 434 / 2048  # Arial's hhea metrics (units per em 2048)


def official_line_px(font_px: int) -> int:
    """Line pitch of ReadBench's renderer for a ``font_px`` Arial: FreeType rounds the ascent and the
    descent up to whole pixels (15 px -> 14 + 4 = 18), then ``int(0.2 * 18)`` = 3 px of spacing: 21."""
    line_h = math.ceil(ARIAL_ASCENT * font_px) + math.ceil(ARIAL_DESCENT * font_px)
    return line_h + int(line_h * 0.2)


def official_settings(ppi: float = DEFAULT_PPI, crop_width: bool = True) -> PageSettings:
    """The page layout of ReadBench's own images, expressed in this renderer's points.

    At 92.9 PPI: a 768 x 1086 px page, 23 px margins, a 15 px font, 21 px per line, so 49 lines a
    page (``y + line_h > page_h - margin`` starts a new page). Pixel sizes are converted to points
    with the page's own scale so they land on the same pixels. Helvetica's widths are Arial's
    (metric twins); a word wider than the line is left to overflow as ReadBench's ``_wrap`` leaves
    it, and trailing blank lines are kept, as its ``_render`` draws them.
    """
    page_px = tuple(int(inches * ppi) for inches in OFFICIAL_PAGE_INCHES)
    pt_per_px = POINTS_PER_INCH / ppi
    font_px = max(1, int(OFFICIAL_FONT_PT * ppi / POINTS_PER_INCH))
    line_px = official_line_px(font_px)
    return PageSettings(ppi=ppi, font_size=font_px * pt_per_px, margin_in=int(ppi * 0.25) / ppi,
                        line_height=line_px / font_px, page_size=(page_px[0] * pt_per_px, page_px[1] * pt_per_px),
                        crop_width=crop_width, break_long_words=False, trim_trailing_blank=False)


def settings_for_layout(layout: str, ppi: float = DEFAULT_PPI, crop_width: bool = True) -> PageSettings:
    """Page settings for a ``layout`` option: ``official`` draws pages as ReadBench's
    ``data_prep.py`` does (15 px font, 21 px per line, 49 lines a page at 92.9 PPI); ``library``
    keeps this library's 12 pt Helvetica at 1.2 leading (55 lines a page), so earlier builds stay
    reproducible. ``crop_width=False`` keeps every page at the full A4 width."""
    if layout == "official":
        return official_settings(ppi, crop_width=crop_width)
    if layout != "library":
        raise ValueError(f"readbench: --option layout={layout!r} is not one of 'library', 'official'")
    return PageSettings(ppi=ppi, crop_width=crop_width)


@dataclass
class RenderedPages:
    """The page PNGs of one text, in reading order."""

    pages: list[bytes]
    sizes: list[tuple[int, int]]
    replaced: dict[str, int] = field(default_factory=dict)
    pdf: bytes = b""


FALLBACK_FONT = "MMLBFallback"


@lru_cache(maxsize=1)
def _fallback_font() -> tuple[frozenset[int], str]:
    """Register PyMuPDF's built-in Droid Sans Fallback with reportlab: (its code points, sha256)."""
    import pymupdf
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont

    data = pymupdf.Font("cjk").buffer
    font = TTFont(FALLBACK_FONT, io.BytesIO(data))
    pdfmetrics.registerFont(font)
    return frozenset(font.face.charToGlyph), hashlib.sha256(data).hexdigest()


@lru_cache(maxsize=4096)
def _in_main_font(ch: str) -> bool:
    """True if the standard font can draw ``ch`` (Windows-1252, printable)."""
    if ch in "\n ":
        return True
    if not ch.isprintable() and ch != "\u00a0":
        return False
    try:
        ch.encode("cp1252")
    except UnicodeEncodeError:
        return False
    return True


def _drawable(ch: str, settings: PageSettings) -> bool:
    if _in_main_font(ch):
        return True
    return settings.fallback and ch.isprintable() and ord(ch) in _fallback_font()[0]


def sanitize(text: str, settings: PageSettings | None = None) -> tuple[str, dict[str, int]]:
    """Normalize newlines and tabs; replace what no font has with ``REPLACEMENT``.

    Returns the cleaned text and a count per replaced character, so callers can report
    e.g. ``{'\U0001F600': 3}``.
    """
    settings = settings or PageSettings()
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\t", " ")
    try:
        text.encode("cp1252")
        if text.replace("\n", "").isprintable():
            return text, {}  # the common case: nothing to look at character by character
    except UnicodeEncodeError:
        pass
    replaced: Counter[str] = Counter()
    out = []
    for ch in text:
        if _drawable(ch, settings):
            out.append(ch)
        else:
            replaced[ch] += 1
            out.append(REPLACEMENT)
    return "".join(out), dict(replaced)


def font_runs(s: str, settings: PageSettings) -> list[tuple[str, str]]:
    """(font name, text) runs of a sanitized string: Helvetica, or the fallback where needed."""
    try:
        s.encode("cp1252")
        return [(settings.font, s)]
    except UnicodeEncodeError:
        pass
    runs: list[tuple[str, str]] = []
    for ch in s:
        font = settings.font if _in_main_font(ch) else FALLBACK_FONT
        if runs and runs[-1][0] == font:
            runs[-1] = (font, runs[-1][1] + ch)
        else:
            runs.append((font, ch))
    return runs


def text_width(s: str, settings: PageSettings) -> float:
    """Width in points of a sanitized string, each run measured in its own font."""
    from reportlab.pdfbase.pdfmetrics import stringWidth

    return sum(stringWidth(run, font, settings.font_size) for font, run in font_runs(s, settings))


def _break_word(word: str, width: Callable[[str], float], limit: float) -> list[str]:
    """Split a word wider than a line into line-wide pieces (at least one char each)."""
    pieces, current = [], ""
    for ch in word:
        if current and width(current + ch) > limit:
            pieces.append(current)
            current = ch
        else:
            current += ch
    if current:
        pieces.append(current)
    return pieces


def wrap_paragraph(paragraph: str, width: Callable[[str], float], limit: float,
                   break_long: bool = True) -> list[str]:
    """Greedy word wrap on measured width; an empty paragraph is one blank line.

    A word wider than a line is broken into line-wide pieces, or with ``break_long=False`` put on a
    line of its own that overflows (ReadBench's ``_wrap``; the page clips it).

    Widths are additive (the fonts have no kerning here), so a line's width is kept as a running
    sum of word and space widths instead of re-measuring the whole line for every word.
    """
    words = paragraph.split()
    if not words:
        return [""]
    space = width(" ")
    lines: list[str] = []
    current, current_w = "", 0.0
    for word in words:
        word_w = width(word)
        if current and current_w + space + word_w <= limit:
            current, current_w = f"{current} {word}", current_w + space + word_w
            continue
        if current:
            lines.append(current)
        if word_w <= limit or not break_long:
            current, current_w = word, word_w
        else:
            *full, current = _break_word(word, width, limit)
            lines.extend(full)
            current_w = width(current)
    lines.append(current)
    return lines


def layout_lines(text: str, settings: PageSettings = PageSettings()) -> list[str]:
    """All lines of an already sanitized text, wrapped for the page width."""
    cache: dict[str, float] = {}

    def width(s: str) -> float:
        if s not in cache:
            cache[s] = text_width(s, settings)
        return cache[s]

    lines: list[str] = []
    for paragraph in text.split("\n"):
        lines.extend(wrap_paragraph(paragraph, width, settings.text_width, settings.break_long_words))
    while settings.trim_trailing_blank and lines and not lines[-1]:  # trailing blank lines would only add white space
        lines.pop()
    return lines


def paginate(lines: list[str], settings: PageSettings) -> list[list[str]]:
    per = settings.lines_per_page
    return [lines[i : i + per] for i in range(0, len(lines), per)]


def _baseline_offset(settings: PageSettings) -> float:
    """Distance from the top of a line box to its baseline (glyphs centred in the box)."""
    from reportlab.pdfbase.pdfmetrics import getFont

    face = getFont(settings.font).face
    ascent, descent = face.ascent / 1000.0, -face.descent / 1000.0
    glyph = (ascent + descent) * settings.font_size
    return (settings.leading - glyph) / 2 + ascent * settings.font_size


def pages_to_pdf(pages: list[list[str]], settings: PageSettings) -> bytes:
    """Draw paginated lines on full A4 pages; invariant mode makes the bytes reproducible."""
    from reportlab.pdfbase.pdfmetrics import stringWidth
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    pdf = canvas.Canvas(buf, pagesize=settings.page_size, invariant=1, pageCompression=1)
    top = settings.page_size[1] - settings.margin
    offset = _baseline_offset(settings)
    for page in pages:
        for i, line in enumerate(page):
            x, y = settings.margin, top - i * settings.leading - offset
            for font, run in font_runs(line, settings):
                pdf.setFont(font, settings.font_size)
                pdf.drawString(x, y, run)
                x += stringWidth(run, font, settings.font_size)
        pdf.showPage()
    pdf.save()
    return buf.getvalue()


def text_to_pdf(text: str, settings: PageSettings = PageSettings()) -> tuple[bytes, list[list[str]], dict[str, int]]:
    """The intermediate PDF of a text, its page lines, and the replaced characters."""
    clean, replaced = sanitize(text, settings)
    pages = paginate(layout_lines(clean, settings), settings)
    return pages_to_pdf(pages, settings), pages, replaced


def _last_page_height_px(lines: int, settings: PageSettings) -> int:
    """Pixel height of a cropped last page holding ``lines`` lines (text plus both margins)."""
    bottom = min(2 * settings.margin + lines * settings.leading, settings.page_size[1])
    return round(bottom * _zoom(settings)[1])


def _page_width_px(lines: list[str], settings: PageSettings) -> int:
    """Pixel width of a page: ReadBench's crop, left margin + widest line + 4 margins (capped at A4).

    Lines are measured only until one is wide enough to make the page full width, so a page of
    wrapped prose costs a line or two of measuring.
    """
    full_px = page_size_px(settings)[0]
    if not settings.crop_width:
        return full_px
    pad = (1 + RIGHT_PAD_MARGINS) * settings.margin
    full_at = settings.page_size[0] - pad  # a line this wide already reaches the page edge
    widest = 0.0
    for line in lines:
        widest = max(widest, text_width(line, settings))
        if widest >= full_at:
            return full_px
    return min(full_px, round((pad + widest) * _zoom(settings)[0]))


def _page_size_px(pages: list[list[str]], index: int, settings: PageSettings) -> tuple[int, int]:
    """Pixel size of page ``index``: cropped in width, and in height if it is the last."""
    height = page_size_px(settings)[1]
    if settings.crop_last and index == len(pages) - 1:
        height = _last_page_height_px(len(pages[index]), settings)
    return _page_width_px(pages[index], settings), height


def planned_sizes(pages: list[list[str]], settings: PageSettings) -> list[tuple[int, int]]:
    """Pixel sizes the pages will have, known from the layout alone (before rasterizing).

    Lets a builder count image tokens and pack pages to a budget, then rasterize only the
    pages it keeps.
    """
    return [_page_size_px(pages, index, settings) for index in range(len(pages))]


def _rasterize(pdf_bytes: bytes, pages: list[list[str]], settings: PageSettings,
               which: Sequence[int] | None = None) -> tuple[list[bytes], list[tuple[int, int]]]:
    import pymupdf

    zoom_x, zoom_y = _zoom(settings)
    matrix = pymupdf.Matrix(zoom_x, zoom_y)
    colorspace = pymupdf.csGRAY if settings.gray else pymupdf.csRGB
    out, sizes = [], []
    full = page_size_px(settings)
    with pymupdf.open(stream=pdf_bytes, filetype="pdf") as doc:
        for index in range(len(pages)) if which is None else which:
            width, height = _page_size_px(pages, index, settings)
            clip = None if (width, height) == full else pymupdf.Rect(0, 0, width / zoom_x, height / zoom_y)
            pix = doc[index].get_pixmap(matrix=matrix, colorspace=colorspace, alpha=False, clip=clip)
            out.append(pix.tobytes("png"))
            sizes.append((pix.width, pix.height))
    return out, sizes


def render_pages(text: str, ppi: float = DEFAULT_PPI, settings: PageSettings | None = None) -> RenderedPages:
    """Render ``text`` to PNG pages (empty text gives no pages)."""
    settings = settings or PageSettings(ppi=ppi)
    pdf_bytes, pages, replaced = text_to_pdf(text, settings)
    if not pages:
        return RenderedPages([], [], replaced, pdf_bytes)
    pngs, sizes = _rasterize(pdf_bytes, pages, settings)
    return RenderedPages(pngs, sizes, replaced, pdf_bytes)


def page_size_px(settings: PageSettings = PageSettings()) -> tuple[int, int]:
    """Pixel size of a full page: inches x PPI, rounded (A4 at 92.9 PPI -> 768 x 1086)."""
    width, height = settings.page_size
    return (round(width / POINTS_PER_INCH * settings.ppi), round(height / POINTS_PER_INCH * settings.ppi))


def _zoom(settings: PageSettings) -> tuple[float, float]:
    """Scale factors that map the page onto exactly ``page_size_px`` pixels.

    A plain ``ppi / 72`` zoom makes MuPDF round the 768.07 x 1086.3 pixel A4 outwards to
    769 x 1087; scaling to the rounded size instead (an anisotropy under 0.03 %) gives the
    page size the benchmark specifies.
    """
    px_w, px_h = page_size_px(settings)
    return px_w / settings.page_size[0], px_h / settings.page_size[1]


def text_recipe_key(text: str, settings: PageSettings) -> str:
    """Recipe prefix of a text's pages: the text hash plus the settings hash."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return f"textpages:{digest}:{settings.key()}"


@dataclass
class TextLayout:
    """A text laid out in pages, not yet rasterized: enough to count tokens and pack."""

    text: str
    settings: PageSettings
    pages: list[list[str]]
    sizes: list[tuple[int, int]]
    replaced: dict[str, int]

    def __len__(self) -> int:
        return len(self.pages)

    def words_per_page(self) -> list[int]:
        """Whitespace-separated words on each page (a word broken over lines counts per piece)."""
        return [sum(len(line.split()) for line in page) for page in self.pages]


def pages_of_words(layout: TextLayout, word_indices: Iterable[int]) -> list[int]:
    """Page index holding each word index (by the layout's per-page word counts)."""
    bounds = list(accumulate(layout.words_per_page()))  # words up to the end of each page
    return sorted({min(bisect.bisect_right(bounds, w), len(bounds) - 1) for w in word_indices})


def layout_text(text: str, settings: PageSettings | None = None, ppi: float = DEFAULT_PPI) -> TextLayout:
    """Lay out ``text`` (sanitized) into pages and their pixel sizes, without rasterizing."""
    settings = settings or PageSettings(ppi=ppi)
    clean, replaced = sanitize(text, settings)
    pages = paginate(layout_lines(clean, settings), settings)
    return TextLayout(text, settings, pages, planned_sizes(pages, settings), replaced)


def render_text_pages(
    store: "ImageStore",
    text: str,
    ppi: float = DEFAULT_PPI,
    settings: PageSettings | None = None,
    on_replaced: Callable[[dict[str, int]], None] | None = None,
    which: Sequence[int] | None = None,
    layout: TextLayout | None = None,
) -> list["ImageRef"]:
    """Pages of ``text`` as stored images, each rendered once per (text, settings, page).

    ``which`` selects page indices (default: all), so a builder that packed a few pages of
    a long context rasterizes only those. A page already in the store (same recipe key) is
    not rendered again; the PDF is made only if some page is missing. ``on_replaced``
    receives the replaced-character counts when there are any, so the caller can report them.
    """
    layout = layout or layout_text(text, settings, ppi)
    settings = layout.settings
    if layout.replaced and on_replaced is not None:
        on_replaced(layout.replaced)
    indices = list(range(len(layout.pages)) if which is None else which)
    prefix = text_recipe_key(text, settings)
    made: dict[int, bytes] = {}

    def produce(index: int) -> tuple[bytes, str]:
        if not made:  # first missing page: rasterize every requested page in one pass
            pngs, _ = _rasterize(pages_to_pdf(layout.pages, settings), layout.pages, settings, indices)
            made.update(zip(indices, pngs))
        return made[index], "png"

    return [store.cached(f"{prefix}:p{i}", lambda i=i: produce(i)) for i in indices]
