"""Stream the items of a huge top-level JSON object without loading the file.

Why: Multi-LexSum's ``sources.json`` is one 2.2 GB object ``{doc_id: {doc_text, ...}}``;
``json.load`` would hold all of it (several times over, as Python objects). This reads it in
chunks and decodes one value at a time with the standard library's ``raw_decode``, so memory is
bounded by the largest single value.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator, Optional

_WS = " \t\r\n"


class _Reader:
    def __init__(self, path: Path, chunk: int, max_value: Optional[int] = None):
        self.f = open(path, encoding="utf-8")
        self.chunk = chunk
        self.max_value = max_value  # characters one value may take (None: no bound)
        self.buf = ""
        self.pos = 0
        self.base = 0  # characters of the file before ``buf``
        self.eof = False

    @property
    def offset(self) -> int:
        """The reading position in the file, in characters."""
        return self.base + self.pos

    def fill(self, size: Optional[int] = None) -> bool:
        if self.eof:
            return False
        data = self.f.read(size or self.chunk)
        if not data:
            self.eof = True
            return False
        self.base += self.pos
        self.buf = self.buf[self.pos:] + data
        self.pos = 0
        return True

    def skip_ws(self) -> None:
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in _WS:
                self.pos += 1
            if self.pos < len(self.buf) or not self.fill():
                return

    def peek(self) -> str:
        self.skip_ws()
        return self.buf[self.pos] if self.pos < len(self.buf) else ""

    def expect(self, char: str, path: Path) -> None:
        if self.peek() != char:
            raise ValueError(f"{path}: expected {char!r} at offset ~{self.offset}, got {self.peek()!r}")
        self.pos += 1

    def value(self, decoder: json.JSONDecoder, path: Path):
        self.skip_ws()
        while True:
            try:
                value, end = decoder.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as err:
                pending = len(self.buf) - self.pos
                if self.max_value is not None and pending > self.max_value:
                    raise ValueError(f"{path}: invalid JSON ({err.msg}) or a value over {self.max_value:,} characters "
                                     f"at offset ~{self.offset}") from None
                # read as much again as is pending: a large value is rescanned a logarithmic number of times
                if not self.fill(max(self.chunk, pending)):
                    raise ValueError(f"{path}: truncated or invalid JSON near offset ~{self.offset}") from None
                continue
            # A number at the end of the buffer may continue in the next chunk.
            if end == len(self.buf) and not self.eof and self.fill():
                continue
            self.pos = end
            return value


def iter_object_items(path: Path, chunk: int = 1 << 20) -> Iterator[tuple[str, object]]:
    """Yield ``(key, value)`` of the top-level JSON object in ``path``, in file order."""
    path = Path(path)
    reader = _Reader(path, chunk)
    decoder = json.JSONDecoder()
    try:
        reader.expect("{", path)
        if reader.peek() == "}":
            return
        while True:
            key = reader.value(decoder, path)
            if not isinstance(key, str):
                raise ValueError(f"{path}: object key is not a string: {key!r}")
            reader.expect(":", path)
            yield key, reader.value(decoder, path)
            if reader.peek() == ",":
                reader.pos += 1
                continue
            reader.expect("}", path)
            return
    finally:
        reader.f.close()


def _array_values(reader: _Reader, decoder: json.JSONDecoder, path: Path) -> Iterator[object]:
    """The elements of the JSON array that starts at the reader's position, one at a time."""
    reader.expect("[", path)
    if reader.peek() == "]":
        reader.pos += 1
        return
    while True:
        yield reader.value(decoder, path)
        if reader.peek() == ",":
            reader.pos += 1
            continue
        reader.expect("]", path)
        return


def iter_array_items(path: Path, key: str = "data", chunk: int = 1 << 20,
                     max_value: Optional[int] = 256 << 20) -> Iterator[object]:
    """Yield the elements of a huge JSON array one at a time, in file order.

    Why: MemLens's ``dataset_256k.json`` is one 778 MB array of 789 records; ``json.load`` would
    hold all of it as Python objects (several GB). The file may be the array itself or an object
    whose ``key`` field holds it (the official loader takes ``raw.get("data", raw)``); the object's
    other fields are decoded and dropped. Memory is bounded by the largest single element; one that
    does not decode within ``max_value`` characters (a syntax error inside a record, which would
    otherwise pull the rest of the file into memory) stops the read with an error naming the offset.
    """
    path = Path(path)
    reader = _Reader(path, chunk, max_value)
    decoder = json.JSONDecoder()
    try:
        if reader.peek() == "[":
            yield from _array_values(reader, decoder, path)
            return
        reader.expect("{", path)
        while reader.peek() != "}":
            name = reader.value(decoder, path)
            reader.expect(":", path)
            if name == key and reader.peek() == "[":
                yield from _array_values(reader, decoder, path)
                return
            reader.value(decoder, path)
            if reader.peek() == ",":
                reader.pos += 1
        raise ValueError(f"{path}: a JSON object without a {key!r} array (expected a top-level array "
                         f"or {{{key!r}: [...]}})")
    finally:
        reader.f.close()
