"""PDF page rendering: sizes without rendering, broken files, content-addressed caching."""
from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image

from mmlbdata.media import pdf
from mmlbdata.media.pdf import PdfError
from mmlbdata.core.store import ImageStore, file_sha256


def _raw_pdf(objects: list[str]) -> bytes:
    """A hand-written PDF (object 1 is the catalog) with a correct xref table."""
    out = b"%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode()
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    out += (f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\n"
            f"startxref\n{xref}\n%%EOF\n").encode()
    return out


def _made_pdf(tmp_path: Path, name: str, sizes: list[tuple[float, float]], rotate: int = 0) -> Path:
    import pymupdf

    doc = pymupdf.open()
    for i, (w, h) in enumerate(sizes):
        page = doc.new_page(width=w, height=h)
        page.insert_text((10, 20), f"page {i}", fontsize=11)
        if rotate:
            page.set_rotation(rotate)
    path = tmp_path / name
    doc.save(path)
    return path


@pytest.fixture
def small_pdf(tmp_path):
    return _made_pdf(tmp_path, "small.pdf", [(200, 300), (300, 300), (123.4, 456.7)])


def test_sizes_match_renders_including_odd_and_rotated_pages(tmp_path, small_pdf):
    rotated = _made_pdf(tmp_path, "rot.pdf", [(200, 300)], rotate=90)
    for path in (small_pdf, rotated):
        for i in range(pdf.page_count(path)):
            for dpi in (72, 144, 97):
                png = pdf.render_page_png(path, i, dpi)
                assert Image.open(io.BytesIO(png)).size == pdf.page_pixel_sizes(path, dpi)[i]
    assert pdf.page_pixel_sizes(small_pdf, 144)[:2] == [(400, 600), (600, 600)]  # the second page square
    assert pdf.page_pixel_sizes(rotated, 144) == [(600, 400)]  # rotation swaps the sides
    assert pdf.page_pixel_sizes(small_pdf, 144, max_pages=2) == [(400, 600), (600, 600)]


def test_real_pdfs_first_and_last_page(real_data):
    docs = sorted((real_data / "mmlongbench_doc" / "documents").glob("*.pdf"))
    assert len(docs) == 8
    path = next(d for d in docs if d.name == "Macbook_air.pdf")  # square pages
    n = pdf.page_count(path)
    assert n == 76
    for i in (0, n - 1):
        image = Image.open(io.BytesIO(pdf.render_page_png(path, i)))
        assert image.size == pdf.page_pixel_sizes(path)[i] == (708, 708)
        assert image.mode == "RGB"


def test_encrypted_pdf(tmp_path, small_pdf):
    import pymupdf

    doc = pymupdf.open(small_pdf)
    path = tmp_path / "enc.pdf"
    doc.save(path, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="u", owner_pw="o")
    with pytest.raises(PdfError, match="encrypted") as info:
        pdf.page_count(path)
    assert info.value.path == str(path) and info.value.page is None
    assert str(path) in str(info.value)
    # Permission-only encryption (empty user password) is common and readable: not an error.
    owner_only = tmp_path / "owner_only.pdf"
    doc.save(owner_only, encryption=pymupdf.PDF_ENCRYPT_AES_256, owner_pw="o", user_pw="")
    assert pdf.page_count(owner_only) == 3


def test_truncated_pdf(tmp_path, real_data):
    data = (real_data / "mmlongbench_doc" / "documents" / "NETFLIX_2015_10K.pdf").read_bytes()
    path = tmp_path / "cut.pdf"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(PdfError, match="truncated") as info:
        pdf.render_page_png(path, 0)
    assert str(path) in str(info.value)


def test_unreadable_and_zero_page_pdf(tmp_path):
    garbage = tmp_path / "garbage.pdf"
    garbage.write_bytes(b"not a pdf at all\n%%EOF\n")
    with pytest.raises(PdfError, match="unreadable"):
        pdf.open_pdf(garbage)
    zero = tmp_path / "zero.pdf"
    zero.write_bytes(_raw_pdf(["<< /Type /Catalog /Pages 2 0 R >>",
                               "<< /Type /Pages /Kids [] /Count 0 >>"]))
    with pytest.raises(PdfError, match="zero pages"):
        pdf.page_count(zero)
    with pytest.raises(PdfError, match="not found"):
        pdf.page_count(tmp_path / "absent.pdf")


def test_page_that_cannot_render_names_the_page(tmp_path):
    # Page 2 points at an object the file does not contain: MuPDF would render a blank Letter
    # page in its place, which must not end up in an example.
    path = tmp_path / "holes.pdf"
    path.write_bytes(_raw_pdf([
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R 7 0 R] /Count 2 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 300] >>"]))
    assert pdf.page_pixel_sizes(path, 72, max_pages=1) == [(200, 300)]
    with pytest.raises(PdfError) as info:
        pdf.render_page_png(path, 1)
    assert info.value.page == 1 and "page index 1" in str(info.value)
    with pytest.raises(PdfError) as info:
        pdf.page_pixel_sizes(path)
    assert info.value.page == 1
    with pytest.raises(PdfError, match="out of range"):
        pdf.render_page_png(path, 5)
    with pytest.raises(PdfError) as info:  # raised in a worker process, same message
        list(pdf.iter_render_jobs([(path, 0), (path, 1)], 72, num_proc=2))
    assert info.value.page == 1 and info.value.path == str(path)


def test_pdf_error_survives_pickling():
    import pickle

    error = pickle.loads(pickle.dumps(PdfError("/x/a.pdf", "boom", 3)))
    assert (error.path, error.page, str(error)) == ("/x/a.pdf", 3, "/x/a.pdf (page index 3): boom")


def test_render_jobs_parallel_equals_serial(small_pdf):
    serial = list(pdf.iter_render_jobs([(small_pdf, i) for i in (0, 1, 2)], 72, num_proc=1))
    parallel = list(pdf.iter_render_jobs([(small_pdf, i) for i in (2, 0, 1)], 72, num_proc=2))
    assert parallel == [serial[2], serial[0], serial[1]]


def test_recipe_key_is_content_addressed(tmp_path, small_pdf):
    copy = tmp_path / "elsewhere.pdf"
    copy.write_bytes(small_pdf.read_bytes())
    assert pdf.pdf_sha256(copy) == pdf.pdf_sha256(small_pdf)
    key = pdf.recipe_key(pdf.pdf_sha256(small_pdf), 3, 144)
    assert key == f"pdf:{file_sha256(small_pdf)}:p3:144dpi"


def test_render_page_refs_caches_in_store_once(tmp_path, small_pdf, monkeypatch):
    store = ImageStore(tmp_path / "store")
    refs = pdf.render_page_refs(store, [(small_pdf, 1), (small_pdf, 0), (small_pdf, 1)], dpi=72)
    assert [(r.width, r.height) for r in refs] == [(300, 300), (200, 300), (300, 300)]
    assert refs[0] == refs[2]
    assert Path(refs[1].path).read_bytes() == pdf.render_page_png(small_pdf, 0, 72)
    # A copy of the PDF elsewhere hits the same cache: nothing is rendered again.
    copy = tmp_path / "copy.pdf"
    copy.write_bytes(small_pdf.read_bytes())
    monkeypatch.setattr(pdf, "_render", lambda *a, **k: pytest.fail("rendered twice"))
    assert pdf.render_page_refs(store, [(copy, 0), (copy, 1)], dpi=72) == [refs[1], refs[0]]


def test_render_page_refs_parallel(tmp_path, small_pdf):
    store = ImageStore(tmp_path / "store")
    jobs = [(small_pdf, i) for i in (2, 1, 0)]
    refs = pdf.render_page_refs(store, jobs, dpi=72, num_proc=2)
    assert [Path(r.path).read_bytes() for r in refs] == list(pdf.iter_render_jobs(jobs, 72))
