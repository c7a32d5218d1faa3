"""The text -> A4 page renderer (mmlbdata.media.pages), on a real Wikipedia article."""
from __future__ import annotations

import io
from pathlib import Path

import pymupdf
import pytest
from PIL import Image

from mmlbdata.media import pages as P


def wiki_article(real_data: Path, title: str) -> str:
    """One article of the WikiText-2 test file, from its ' = Title = ' line to the next."""
    raw = (real_data / "text" / "wikitext2_raw_wiki.test.raw").read_text(encoding="utf-8")
    lines = raw.replace("\r\n", "\n").split("\n")
    start = lines.index(f" = {title} = ")
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith(" = ") and not lines[i].startswith(" = ="))
    return "\n".join(lines[start:end])


@pytest.fixture(scope="module")
def ironclad(real_data: Path) -> str:
    """Real article with characters outside the font (Japanese names, macrons)."""
    return wiki_article(real_data, "Ironclad warship")


@pytest.fixture(scope="module")
def durenstein(real_data: Path) -> str:
    """Real article (6,679 words, Latin-1 accents) that the font covers entirely."""
    return wiki_article(real_data, "Battle of D\u00fcrenstein")


def pdf_words(pdf: bytes) -> list[str]:
    with pymupdf.open(stream=pdf, filetype="pdf") as doc:
        return " ".join(page.get_text() for page in doc).split()


def test_a4_at_92_9_ppi_is_768_by_1086(ironclad: str) -> None:
    rendered = P.render_pages(ironclad)
    assert len(rendered.pages) > 5
    for png, size in zip(rendered.pages[:-1], rendered.sizes[:-1]):
        assert size == (768, 1086)
        assert Image.open(io.BytesIO(png)).size == (768, 1086)
        assert png.startswith(b"\x89PNG")
    last_w, last_h = rendered.sizes[-1]
    assert last_w == 768 and last_h <= 1086
    assert Image.open(io.BytesIO(rendered.pages[-1])).size == rendered.sizes[-1]


def test_pdf_text_equals_input_words_in_order(durenstein: str) -> None:
    pdf, _, replaced = P.text_to_pdf(durenstein)
    assert replaced == {}
    words = durenstein.split()
    assert len(words) > 5000
    assert pdf_words(pdf) == words


def test_real_article_with_foreign_script_uses_the_fallback_font(ironclad: str) -> None:
    """Japanese names and macrons are outside Helvetica: drawn with the fallback, read back intact."""
    assert any(not P._in_main_font(ch) for ch in ironclad)
    pdf, _, replaced = P.text_to_pdf(ironclad)
    assert replaced == {}
    assert pdf_words(pdf) == ironclad.split()
    with pymupdf.open(stream=pdf, filetype="pdf") as doc:
        fonts = {font[3] for page in doc for font in page.get_fonts()}
    assert any("Helvetica" in f for f in fonts) and any("Droid-Sans-Fallback" in f for f in fonts)


def test_without_fallback_foreign_script_is_replaced_and_reported(ironclad: str) -> None:
    settings = P.PageSettings(fallback=False)
    pdf, _, replaced = P.text_to_pdf(ironclad, settings)
    assert replaced["\u014d"] == 2  # o with macron, in romanized Japanese names
    assert sum(replaced.values()) == 5
    clean, _ = P.sanitize(ironclad, settings)
    assert pdf_words(pdf) == clean.split()
    assert settings.key() != P.PageSettings().key()


def test_two_renders_are_byte_identical(ironclad: str) -> None:
    text = ironclad[:6000]
    first, second = P.render_pages(text), P.render_pages(text)
    assert first.pages == second.pages
    assert first.pdf == second.pdf


def test_last_page_is_cropped_to_text_plus_margin() -> None:
    settings = P.PageSettings()
    rendered = P.render_pages("one line\nand a second one")
    assert len(rendered.pages) == 1
    expected = round((2 * settings.margin + 2 * settings.leading) * 1086 / settings.page_size[1])
    # ReadBench data_prep.py _render: crop_w = margin + widest line + 4 * margin
    width = round((5 * settings.margin + P.text_width("and a second one", settings)) * 768 / settings.page_size[0])
    assert rendered.sizes[0] == (width, expected)
    # the text is drawn in black near the top, the bottom margin is white
    img = Image.open(io.BytesIO(rendered.pages[0])).convert("L")
    assert min(img.crop((0, 0, width, expected - 24)).get_flattened_data()) < 100
    assert min(img.crop((0, expected - 20, width, expected)).get_flattened_data()) == 255


def real_options(real_data: Path) -> str:
    """A four-option image's text ("A. ..." one per line) made of real WikiText words."""
    raw = (real_data / "text" / "wikitext2_raw_wiki.test.raw").read_text(encoding="utf-8").split()
    words = [w for w in raw if w.isalpha()]
    return "\n".join(f"{letter}. {' '.join(words[100 + 3 * i:103 + 3 * i])}" for i, letter in enumerate("ABCD"))


def test_options_image_is_cropped_in_width_to_text_plus_margins(real_data: Path) -> None:
    """ReadBench's renderer (data_prep.py ``_render``, its ``_save``): ``content_end_x = margin +
    min(max_line_w, max_w)``, ``crop_w = min(page_w, int(content_end_x + 4 * margin))``."""
    from mmlbdata.core.tokens import image_tokens

    text = real_options(real_data)  # 'A. Ridley play Mercury' ... 'D. Drum Theatre in'
    settings = P.PageSettings()
    rendered = P.render_pages(text)
    widest = max(P.text_width(line, settings) for line in text.split("\n"))
    width = round((5 * settings.margin + widest) * 768 / settings.page_size[0])
    assert rendered.sizes == [(width, 121)] and width == 271
    # before (full width kept): 768 x 121, 108 image tokens; cropped: 271 x 121, 40 tokens
    full = P.render_pages(text, settings=P.PageSettings(crop_width=False))
    assert full.sizes == [(768, 121)]
    assert (image_tokens(*full.sizes[0]), image_tokens(*rendered.sizes[0])) == (108, 40)
    # nothing is cut: the four right margins are white, the ink ends just before them
    img = Image.open(io.BytesIO(rendered.pages[0])).convert("L")
    pad_px = round(4 * settings.margin * 768 / settings.page_size[0])
    assert min(img.crop((width - pad_px + 2, 0, width, 121)).get_flattened_data()) == 255
    assert min(img.crop((width - pad_px - 12, 0, width - pad_px + 2, 121)).get_flattened_data()) < 128


def test_prose_pages_keep_the_a4_width(durenstein: str) -> None:
    # wrapped prose: a line reaches within four margins of the text width, so crop_w = page_w
    rendered = P.render_pages(durenstein[:12000])
    assert len(rendered.sizes) > 1 and all(size == (768, 1086) for size in rendered.sizes[:-1])
    assert rendered.sizes[-1][0] <= 768
    assert P.PageSettings().key() != P.PageSettings(crop_width=False).key()


def test_every_page_of_short_lines_is_cropped(real_data: Path) -> None:
    """ReadBench crops each page by its own widest line (``max_line_w`` restarts per page)."""
    raw = (real_data / "text" / "wikitext2_raw_wiki.test.raw").read_text(encoding="utf-8").split()
    words = [w for w in raw if w.isalpha()]
    text = "\n".join(" ".join(words[2 * i:2 * i + 2]) for i in range(130))  # 130 two-word lines
    settings = P.PageSettings()
    layout = P.layout_text(text)
    rendered = P.render_pages(text)
    assert rendered.sizes == layout.sizes and len(rendered.sizes) == 3
    for page, (width, height) in zip(layout.pages, rendered.sizes):
        widest = max(P.text_width(line, settings) for line in page)
        assert width == round((5 * settings.margin + widest) * 768 / settings.page_size[0]) < 300
    assert [h for _, h in rendered.sizes[:2]] == [1086, 1086]
    assert {w for w, _ in P.render_pages(text, settings=P.PageSettings(crop_width=False)).sizes} == {768}


def test_page_count_and_paragraphs_kept() -> None:
    settings = P.PageSettings()
    per_page = settings.lines_per_page
    assert per_page == 55  # (841.9 - 36) / 14.4
    text = "\n".join(f"line {i}" for i in range(per_page + 3))
    rendered = P.render_pages(text)
    assert len(rendered.pages) == 2
    assert rendered.sizes[0][1] == 1086 and rendered.sizes[1][1] < 200  # short lines: narrow (width crop)
    # blank lines are kept as lines, trailing ones dropped
    assert P.layout_lines("a\n\n\nb\n\n") == ["a", "", "", "b"]


def test_greedy_wrap_fits_and_is_greedy() -> None:
    from reportlab.pdfbase.pdfmetrics import stringWidth

    settings = P.PageSettings()
    text = " ".join(f"word{i}" for i in range(400))
    lines = P.layout_lines(text)
    assert " ".join(lines).split() == text.split()
    for line, nxt in zip(lines, lines[1:]):
        assert stringWidth(line, "Helvetica", 12) <= settings.text_width
        # greedy: the next line's first word would not have fit
        assert stringWidth(line + " " + nxt.split()[0], "Helvetica", 12) > settings.text_width


def test_long_word_is_broken_not_clipped() -> None:
    from reportlab.pdfbase.pdfmetrics import stringWidth

    word = "x" * 300
    lines = P.layout_lines(f"start {word} end")
    assert lines[0] == "start"
    assert "".join(lines[1:]).replace("end", "").replace(" ", "") == word
    assert all(stringWidth(line, "Helvetica", 12) <= P.PageSettings().text_width for line in lines)
    assert len(lines) >= 3


def test_unsupported_characters_replaced_visibly_and_reported() -> None:
    text = "Du Fu (\u675c\u752b) wrote \U0001F600 poems\x07 in caf\u00e9s: \u03c0r\u00b2 \u2264 \u221a2"
    rendered = P.render_pages(text)
    assert rendered.replaced == {"\U0001F600": 1, "\x07": 1}  # no font has them
    assert len(rendered.pages) == 1
    words = pdf_words(rendered.pdf)
    assert words == ["Du", "Fu", "(\u675c\u752b)", "wrote", "\u00a4", "poems\u00a4", "in", "caf\u00e9s:",
                     "\u03c0r\u00b2", "\u2264", "\u221a2"]
    # without the fallback font, CJK and maths are replaced too
    bare = P.render_pages(text, settings=P.PageSettings(fallback=False))
    assert set(bare.replaced) == {"\u675c", "\u752b", "\U0001F600", "\x07", "\u03c0", "\u2264", "\u221a"}


def test_mixed_font_line_wraps_on_measured_width() -> None:
    from reportlab.pdfbase.pdfmetrics import stringWidth

    settings = P.PageSettings()
    text = " ".join("\u03b1\u03b2\u03b3-word\u4e2d" for _ in range(200))
    lines = P.layout_lines(text)
    for line in lines:
        assert P.text_width(line, settings) <= settings.text_width
    runs = P.font_runs("ab\u03b1c", settings)
    assert runs == [("Helvetica", "ab"), (P.FALLBACK_FONT, "\u03b1"), ("Helvetica", "c")]
    assert P.text_width("ab\u03b1c", settings) == pytest.approx(
        stringWidth("abc", "Helvetica", 12) + stringWidth("\u03b1", P.FALLBACK_FONT, 12))


def test_higher_ppi_scales_pixels() -> None:
    rendered = P.render_pages("x " * 6000, ppi=150)
    assert rendered.sizes[0] == (1240, 1754)
    assert P.page_size_px(P.PageSettings(ppi=300)) == (2480, 3508)


def test_empty_text_has_no_pages() -> None:
    assert P.render_pages("").pages == []
    assert P.render_pages("\n \n").pages == []


def test_settings_key_changes_with_ppi() -> None:
    assert P.PageSettings().key() != P.PageSettings(ppi=150).key()
    assert P.text_recipe_key("a", P.PageSettings()) != P.text_recipe_key("b", P.PageSettings())


def test_planned_sizes_match_rasterized(durenstein: str) -> None:
    layout = P.layout_text(durenstein[:30000])
    rendered = P.render_pages(durenstein[:30000])
    assert layout.sizes == rendered.sizes
    assert sum(layout.words_per_page()) == len(durenstein[:30000].split())
    layout150 = P.layout_text("a few words\n" * 80, ppi=150)
    assert layout150.sizes == P.render_pages("a few words\n" * 80, ppi=150).sizes


def test_render_text_pages_caches_in_store(tmp_path: Path, durenstein: str) -> None:
    from mmlbdata.core.store import ImageStore

    store = ImageStore(tmp_path / "store")
    text = durenstein[:12000]
    refs = P.render_text_pages(store, text)
    direct = P.render_pages(text)
    assert [Path(r.path).read_bytes() for r in refs] == direct.pages
    assert [(r.width, r.height) for r in refs] == direct.sizes
    # second call: no rendering at all (the recipes answer), same files
    calls = []
    original = P._rasterize
    P._rasterize = lambda *a, **k: calls.append(1) or original(*a, **k)
    try:
        again = P.render_text_pages(store, text)
        only_last = P.render_text_pages(store, text, which=[len(refs) - 1])
    finally:
        P._rasterize = original
    assert again == refs and only_last == [refs[-1]] and calls == []
    # a page subset of a new text rasterizes just those pages; 150 PPI is another recipe
    sub = P.render_text_pages(store, text + " more", which=[0])
    assert len(sub) == 1 and (sub[0].width, sub[0].height) == (768, 1086)
    hi = P.render_text_pages(store, text, ppi=150, which=[0])
    assert (hi[0].width, hi[0].height) == (1240, 1754)
    reported = []
    P.render_text_pages(store, "caf\u00e9 \u4e2d \U0001F600", on_replaced=reported.append)
    assert reported == [{"\U0001F600": 1}]


# -- layout=official: ReadBench's data_prep.py get_font_and_dimensions / _wrap / _render ---------------

def official_line_count_per_page(ppi: float) -> int:
    """Hand-run of data_prep.py ``_render``'s page break (``y`` starts at the margin; a line is drawn
    unless ``y + line_h > page_h - margin``; ``y`` then grows by ``line_h + line_spacing``)."""
    page_h, margin = int(11.69 * ppi), int(0.25 * ppi)
    font_px = int(12 * ppi / 72)
    line_h = {15: 14 + 4, 25: 23 + 6}[font_px]  # Arial ascent + descent, rounded up, as FreeType gives
    pitch = line_h + int(line_h * 0.2)
    y, count = margin, 0
    while not y + line_h > page_h - margin:
        y, count = y + pitch, count + 1
    return count


@pytest.mark.parametrize("ppi, page, font_px, pitch", [(92.9, (768, 1086), 15, 21), (150, (1240, 1753), 25, 34)])
def test_official_settings_are_readbench_pixels(ppi: float, page: tuple[int, int], font_px: int, pitch: int) -> None:
    # data_prep.py get_font_and_dimensions: int(8.27 ppi) x int(11.69 ppi), margin int(ppi / 4), font int(12 ppi / 72)
    settings = P.official_settings(ppi)
    zoom_x, zoom_y = P._zoom(settings)
    assert P.page_size_px(settings) == page
    assert settings.font_size * zoom_x == pytest.approx(font_px)
    assert settings.leading * zoom_y == pytest.approx(pitch)
    assert settings.margin * zoom_x == pytest.approx(int(ppi / 4))
    assert settings.lines_per_page == official_line_count_per_page(ppi) == 49
    assert P.official_line_px(15) == 21 and P.official_line_px(25) == 34


def test_official_layout_on_real_text_has_49_lines_of_21_px(real_data: Path) -> None:
    text = (real_data / "text" / "wikitext2_raw_wiki.test.raw").read_text(encoding="utf-8")[:60000]
    official = P.layout_text(text, P.official_settings())
    library = P.layout_text(text)
    assert all(len(page) == 49 for page in official.pages[:-1]) and len(official) == 14
    assert all(len(page) == 55 for page in library.pages[:-1])
    assert all(size == (768, 1086) for size in official.sizes[:-1])
    # data_prep.py _save: the last page is cut at y + margin = 2 margins + 21 px per line drawn
    assert official.sizes[-1][1] == 2 * 23 + 21 * len(official.pages[-1])
    # a 15 px font is 11.6 pt, so lines hold a little more, but 49 lines a page instead of 55 take
    # more pages: 14 for this text instead of 12
    assert sum(map(len, official.pages)) < sum(map(len, library.pages)) and len(library) == 12
    rendered = P.render_pages(text[:3000], settings=P.official_settings())
    assert rendered.sizes == P.planned_sizes(P.layout_text(text[:3000], P.official_settings()).pages,
                                              P.official_settings())
    assert rendered.pages == P.render_pages(text[:3000], settings=P.official_settings()).pages  # deterministic


def test_official_wrap_keeps_long_words_and_trailing_blank_lines() -> None:
    # data_prep.py _wrap: a word wider than the line gets a line of its own, unbroken; blank
    # paragraphs (also trailing ones) are empty lines that _render draws
    settings = P.official_settings()
    long_word = "x" * 200
    assert P.layout_lines(f"a {long_word} b\n\n", settings) == ["a", long_word, "b", "", ""]
    assert "" not in P.layout_lines(f"a {long_word} b\n\n")  # the library layout trims and breaks
    assert P.official_settings().key() != P.PageSettings().key()
