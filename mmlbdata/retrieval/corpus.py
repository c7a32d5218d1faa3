"""100-word passages with titles, built once from a Wikipedia dump and memory-mapped from disk.

Sources (all read as they are released):
- KILT knowledge source records (`kilt_knowledgesource.json`, one JSON article per line, or the
  `facebook/kilt_wikipedia` parquet/arrow shards): ``wikipedia_id``, ``wikipedia_title``,
  ``text.paragraph`` (paragraph 0 is the title, ``Section::::`` paragraphs open sections),
  ``wikidata_info.wikidata_id``;
- KILT's ``kilt_w100_title.tsv`` (``id<TAB>text<TAB>title``, already split into passages);
- WikiText raw (`` = Title = `` opens an article, `` = = Section = = `` a section), used as a small
  real stand-in for Wikipedia in tests and benchmarks.

Articles are chunked per section (a passage never straddles the lead section and the next one, so
"the lead section's passages" is well defined). Each passage keeps the paragraph/character span it
came from, which is how KILT provenance is mapped to a passage.

On disk a corpus is a folder: ``passages.arrow`` (Arrow IPC file in fixed-size record batches, so a
passage id maps to (batch, row) and reads are zero-copy from the memory map), ``articles.arrow``
(one row per article: ids, title, first passage id, passage and lead counts) and ``manifest.json``
(counts and the content fingerprint that keys every index cache).
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

logger = logging.getLogger("mmlbdata")

PASSAGE_WORDS = 100
BATCH_ROWS = 4096
FORMAT_VERSION = 1

PASSAGE_SCHEMA = pa.schema([
    ("pid", pa.int64()),
    ("title", pa.string()),
    ("text", pa.string()),
    ("wikipedia_id", pa.string()),
    ("section", pa.string()),
    ("start_par", pa.int32()),
    ("start_char", pa.int32()),
    ("end_par", pa.int32()),
    ("end_char", pa.int32()),
])
ARTICLE_SCHEMA = pa.schema([
    ("wikipedia_id", pa.string()),
    ("wikidata_id", pa.string()),
    ("title", pa.string()),
    ("first_pid", pa.int64()),
    ("n_passages", pa.int32()),
    ("n_lead", pa.int32()),
])

_SECTION = "Section::::"
_WORD = re.compile(r"\S+")
_WIKITEXT_TITLE = re.compile(r"^ = ([^=].*?) = $")
_WIKITEXT_SECTION = re.compile(r"^ =(?: =)+ (.*?) =(?: =)+ $")


class CorpusError(ValueError):
    """A corpus source that cannot be read (names the file and the record)."""


# --------------------------------------------------------------------------- source readers

def _raise(message: str) -> None:
    raise CorpusError(message)


def read_kilt_records(path: Path, on_error: Callable[[str], None] = _raise) -> Iterator[dict]:
    """KILT knowledge-source articles from JSON lines or the Hub's parquet/arrow shards; a bad
    line is passed to ``on_error`` (default: raise) with the file and line named."""
    path = Path(path)
    files = sorted(p for p in path.rglob("*") if p.suffix in (".parquet", ".arrow")) if path.is_dir() else [path]
    for file in files:
        if file.suffix == ".parquet":
            yield from _kilt_from_parquet(file)
        elif file.suffix == ".arrow":
            yield from _kilt_from_arrow(file)
        else:
            yield from _kilt_from_jsonl(file, on_error)


def _kilt_from_jsonl(file: Path, on_error: Callable[[str], None]) -> Iterator[dict]:
    with open(file, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                record["text"]["paragraph"]
            except (ValueError, KeyError, TypeError) as exc:
                on_error(f"{file}: line {lineno}: not a KILT article ({exc})")
                continue
            yield record


def _kilt_from_parquet(file: Path) -> Iterator[dict]:
    import pyarrow.parquet as pq

    columns = ["wikipedia_id", "wikipedia_title", "text", "wikidata_info"]
    pf = pq.ParquetFile(file)
    names = set(pf.schema_arrow.names)
    for batch in pf.iter_batches(batch_size=256, columns=[c for c in columns if c in names]):
        yield from batch.to_pylist()


def _kilt_from_arrow(file: Path) -> Iterator[dict]:
    with pa.memory_map(str(file)) as source:
        try:
            reader = ipc.open_stream(source)
        except pa.ArrowInvalid:
            reader = ipc.open_file(source)
            batches = (reader.get_batch(i) for i in range(reader.num_record_batches))
        else:
            batches = iter(reader)
        for batch in batches:
            yield from batch.to_pylist()


def read_wikitext(path: Path) -> Iterator[dict]:
    """WikiText raw as KILT-shaped articles (title paragraph, ``Section::::`` markers)."""
    article: dict | None = None
    with open(path, encoding="utf-8", newline="") as fh:
        for line in fh:
            line = line.rstrip("\r\n")
            title = _WIKITEXT_TITLE.match(line)
            if title:
                if article is not None:
                    yield article
                n = 0 if article is None else int(article["wikipedia_id"][2:]) + 1
                name = title.group(1).strip()
                article = {"wikipedia_id": f"wt{n}", "wikipedia_title": name,
                           "text": {"paragraph": [name + "\n"]}, "wikidata_info": None}
                continue
            if article is None or not line.strip():
                continue
            section = _WIKITEXT_SECTION.match(line)
            if section:
                article["text"]["paragraph"].append(f"{_SECTION}{section.group(1).strip()}\n")
            else:
                article["text"]["paragraph"].append(line.strip() + "\n")
    if article is not None:
        yield article


def read_w100_tsv(path: Path, on_error: Callable[[str], None] = _raise) -> Iterator[tuple[str, str, str]]:
    """``kilt_w100_title.tsv`` rows as (id, text, title); a header row is skipped."""
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            parts = line.rstrip("\n").split("\t")
            if lineno == 1 and parts[0] == "id":
                continue
            if len(parts) != 3:
                on_error(f"{path}: line {lineno}: expected id, text, title, got {len(parts)} fields")
                continue
            yield parts[0], parts[1].strip('"'), parts[2].strip('"')


# --------------------------------------------------------------------------- chunking

@dataclass
class _Word:
    text: str
    par: int
    start: int
    end: int


def chunk_article(record: dict, words_per_passage: int = PASSAGE_WORDS) -> list[dict]:
    """Split one KILT article into passages of ``words_per_passage`` words, per section."""
    paragraphs = record["text"]["paragraph"]
    sections: list[tuple[str, list[_Word]]] = [("", [])]
    for par, paragraph in enumerate(paragraphs):
        if par == 0:
            continue  # the title
        if paragraph.startswith(_SECTION):
            sections.append((paragraph[len(_SECTION):].strip(), []))
            continue
        sections[-1][1].extend(_Word(m.group(), par, m.start(), m.end()) for m in _WORD.finditer(paragraph))
    title = record.get("wikipedia_title") or paragraphs[0].strip()
    passages = []
    for name, words in sections:
        for i in range(0, len(words), words_per_passage):
            chunk = words[i:i + words_per_passage]
            passages.append({
                "title": title, "text": " ".join(w.text for w in chunk),
                "wikipedia_id": str(record.get("wikipedia_id", "")), "section": name,
                "start_par": chunk[0].par, "start_char": chunk[0].start,
                "end_par": chunk[-1].par, "end_char": chunk[-1].end,
            })
    return passages


def _wikidata_id(record: dict) -> str:
    info = record.get("wikidata_info") or {}
    return str(info.get("wikidata_id") or "")


# --------------------------------------------------------------------------- building

@contextmanager
def atomic_folder(target: Path) -> Iterator[Path]:
    """A temporary sibling of ``target`` to build in, renamed over ``target`` only on success, so
    a cache folder is either complete or absent (an interrupted build is simply redone)."""
    target = Path(target)
    tmp = target.with_name(target.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)


def detect_format(path: Path) -> str:
    """``kilt`` | ``w100`` | ``wikitext`` from the file's name and first line."""
    path = Path(path)
    if path.is_dir():
        return "kilt"
    if path.suffix == ".tsv":
        return "w100"
    if path.suffix in (".parquet", ".arrow"):
        return "kilt"
    with open(path, encoding="utf-8", errors="replace") as fh:
        head = fh.readline()
        while head and not head.strip():
            head = fh.readline()
    if head.lstrip().startswith("{"):
        return "kilt"
    if _WIKITEXT_TITLE.match(head.rstrip("\r\n")):
        return "wikitext"
    raise CorpusError(f"{path}: not a KILT, kilt_w100 or WikiText file (first line {head[:60]!r})")


def source_fingerprint(path: Path) -> str:
    """Cheap identity of a (possibly huge) source: format, size and its first and last MiB."""
    path = Path(path)
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    h = hashlib.sha256(f"v{FORMAT_VERSION}:{PASSAGE_WORDS}".encode())
    for file in files:
        size = file.stat().st_size
        h.update(f"{file.name}:{size}".encode())
        with open(file, "rb") as fh:
            h.update(fh.read(1 << 20))
            if size > 2 << 20:
                fh.seek(size - (1 << 20))
                h.update(fh.read())
    return h.hexdigest()[:16]


class _Writer:
    """Streams passages and articles into Arrow IPC files, hashing content as it goes."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.passages = ipc.new_file(str(folder / "passages.arrow"), PASSAGE_SCHEMA)
        self.articles = ipc.new_file(str(folder / "articles.arrow"), ARTICLE_SCHEMA)
        self.rows: list[dict] = []
        self.article_rows: list[dict] = []
        self.pid = 0
        self.n_articles = 0
        self.hash = hashlib.sha256()

    def add_article(self, wikipedia_id: str, wikidata_id: str, title: str, passages: list[dict]) -> None:
        n_lead = sum(1 for p in passages if p["section"] == "")
        self.article_rows.append({"wikipedia_id": wikipedia_id, "wikidata_id": wikidata_id, "title": title,
                                  "first_pid": self.pid, "n_passages": len(passages), "n_lead": n_lead})
        self.n_articles += 1
        for p in passages:
            self.add_passage(p)
        if len(self.article_rows) >= BATCH_ROWS:
            self._flush_articles()

    def add_passage(self, passage: dict) -> None:
        row = {"pid": self.pid, **passage}
        self.hash.update(f"{row['title']}\x1f{row['text']}\x1e".encode())
        self.rows.append(row)
        self.pid += 1
        if len(self.rows) == BATCH_ROWS:
            self.passages.write_batch(pa.RecordBatch.from_pylist(self.rows, schema=PASSAGE_SCHEMA))
            self.rows = []

    def _flush_articles(self) -> None:
        if self.article_rows:
            self.articles.write_batch(pa.RecordBatch.from_pylist(self.article_rows, schema=ARTICLE_SCHEMA))
            self.article_rows = []

    def close(self) -> dict:
        if self.rows:
            self.passages.write_batch(pa.RecordBatch.from_pylist(self.rows, schema=PASSAGE_SCHEMA))
        self._flush_articles()
        self.passages.close()
        self.articles.close()
        return {"n_passages": self.pid, "n_articles": self.n_articles, "fingerprint": self.hash.hexdigest()[:16]}


def build_corpus(source: Path, out_dir: Path, fmt: str | None = None,
                 words_per_passage: int = PASSAGE_WORDS) -> "Corpus":
    """Chunk ``source`` into ``out_dir`` (written to a temporary folder, renamed when complete)."""
    source, out_dir = Path(source), Path(out_dir)
    fmt = fmt or detect_format(source)
    skipped: list[str] = []

    def skip(message: str) -> None:
        """Bad source lines are logged and listed in the manifest; the corpus is still built."""
        logger.warning("corpus: skipped %s", message)
        skipped.append(message)

    with atomic_folder(out_dir) as tmp:
        writer = _Writer(tmp)
        if fmt == "w100":
            _write_w100(source, writer, skip)
        else:
            records = read_wikitext(source) if fmt == "wikitext" else read_kilt_records(source, skip)
            for record in records:
                passages = chunk_article(record, words_per_passage)
                writer.add_article(str(record.get("wikipedia_id", "")), _wikidata_id(record),
                                   record.get("wikipedia_title") or "", passages)
        stats = writer.close()
        manifest = {"format_version": FORMAT_VERSION, "source": source.name, "source_format": fmt,
                    "words_per_passage": words_per_passage, "batch_rows": BATCH_ROWS, **stats,
                    "num_skipped": len(skipped), "skipped": skipped[:100]}
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))
    return Corpus(out_dir)


def _write_w100(source: Path, writer: _Writer, on_error: Callable[[str], None]) -> None:
    """Group consecutive tsv rows of one title into an article (the file is in article order)."""
    title, passages = None, []
    for _pid, text, row_title in read_w100_tsv(source, on_error):
        if row_title != title and passages:
            writer.add_article("", "", title, passages)
            passages = []
        title = row_title
        passages.append({"title": row_title, "text": text, "wikipedia_id": "", "section": "" if not passages else None,
                         "start_par": -1, "start_char": -1, "end_par": -1, "end_char": -1})
    if passages:
        writer.add_article("", "", title, passages)


def open_corpus(source: Path, cache_dir: Path | None = None) -> "Corpus":
    """A built corpus folder as is, or any source built once into ``cache_dir`` (keyed by source)."""
    source = Path(source)
    if (source / "manifest.json").is_file():
        return Corpus(source)
    cache_dir = Path(cache_dir or default_cache_dir())
    target = cache_dir / f"corpus-{source_fingerprint(source)}"
    if (target / "manifest.json").is_file():
        return Corpus(target)
    return build_corpus(source, target)


def default_cache_dir() -> Path:
    """``$MMLB_CACHE/retrieval`` (beside the image store), else ``~/.cache/mmlbdata/retrieval``."""
    base = os.environ.get("MMLB_CACHE") or Path.home() / ".cache" / "mmlbdata"
    return Path(base) / "retrieval"


# --------------------------------------------------------------------------- reading

class Corpus:
    """A built corpus, memory-mapped: random access by passage id, streaming in batches."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.manifest = json.loads((self.folder / "manifest.json").read_text())
        self._batch_rows = int(self.manifest["batch_rows"])
        self._passages = ipc.open_file(pa.memory_map(str(self.folder / "passages.arrow")))
        self._articles: pa.Table | None = None

    @property
    def fingerprint(self) -> str:
        """Content hash of every (title, text): the key of all index caches."""
        return self.manifest["fingerprint"]

    def __len__(self) -> int:
        return int(self.manifest["n_passages"])

    def passage(self, pid: int) -> dict:
        """One passage as a dict (zero-copy read of one row from the memory map)."""
        if not 0 <= pid < len(self):
            raise IndexError(f"passage id {pid} outside 0..{len(self) - 1}")
        batch = self._passages.get_batch(pid // self._batch_rows)
        return batch.slice(pid % self._batch_rows, 1).to_pylist()[0]

    def passages(self, pids: Iterable[int]) -> list[dict]:
        return [self.passage(int(p)) for p in pids]

    def iter_batches(self, columns: tuple[str, ...] = ("pid", "title", "text")) -> Iterator[pa.RecordBatch]:
        """All passages, batch by batch (constant memory)."""
        for i in range(self._passages.num_record_batches):
            batch = self._passages.get_batch(i)
            yield batch.select(list(columns))

    @property
    def articles(self) -> pa.Table:
        if self._articles is None:
            with pa.memory_map(str(self.folder / "articles.arrow")) as source:
                self._articles = ipc.open_file(source).read_all()
        return self._articles

    def find_article(self, *, wikipedia_id: str | None = None, wikidata_id: str | None = None,
                     title: str | None = None) -> dict | None:
        """The first article matching the first given key (vectorised scan, no Python index)."""
        for column, value in (("wikipedia_id", wikipedia_id), ("wikidata_id", wikidata_id), ("title", title)):
            if not value:
                continue
            mask = pc.equal(self.articles[column], str(value))
            hits = self.articles.filter(mask)
            if hits.num_rows:
                return hits.slice(0, 1).to_pylist()[0]
        return None

    def article_passages(self, article: dict, lead_only: bool = False) -> list[dict]:
        count = article["n_lead"] if lead_only else article["n_passages"]
        return self.passages(range(article["first_pid"], article["first_pid"] + count))
