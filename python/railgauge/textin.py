"""Reading an input file's text as it comes: plain, or compressed by gzip, bzip2 or xz (told
apart by content, not by name), with or without a UTF-8 byte-order mark.

Measurements measured elsewhere are often archived compressed (``measurements.jsonl.gz``,
a Netgauge table ``loggp.out.xz``); every reader of railgauge's inputs (its measurements,
Netgauge tables, LoP data) takes them through :func:`read_text`, so that none of them has to
be unpacked first. The readers turn :class:`TextInputError` into their own error, which
names the file.
"""

from __future__ import annotations

import bz2
import lzma
import zlib
from pathlib import Path

#: The largest text a compressed input may unpack to: an input of railgauge is a table of
#: points (a Netgauge table of 1025 sizes is 100 kB), so more is not one of them.
MAX_UNPACKED = 1 << 30

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x1f\x8b", "gzip"),
    (b"BZh", "bzip2"),
    (b"\xfd7zXZ\x00", "xz"),
)

#: The names of compressed files end in these; :func:`plain_suffix` looks past them.
COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz")


class TextInputError(ValueError):
    """An input file that cannot be read as text: the reason, without the file's name."""


#: What follows ``BZh`` and the block size digit in a bzip2 stream: a block's magic, or the
#: end-of-stream magic of an empty one (so that text starting with "BZh" stays text).
_BZIP2_NEXT = (b"1AY&SY", b"\x17rE8P\x90")


def compression(data: bytes) -> str | None:
    """``"gzip"``, ``"bzip2"`` or ``"xz"`` when ``data`` starts like such a stream, else None."""
    for magic, name in _MAGIC:
        if data.startswith(magic):
            if name == "bzip2" and not (data[3:4].isdigit() and data[3:4] != b"0"
                                        and data[4:10] in _BZIP2_NEXT):
                continue
            return name
    return None


def _decompressor(kind: str) -> zlib._Decompress | bz2.BZ2Decompressor | lzma.LZMADecompressor:
    if kind == "gzip":
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if kind == "bzip2":
        return bz2.BZ2Decompressor()
    return lzma.LZMADecompressor()


def _unpack(data: bytes, kind: str) -> bytes:
    """The data of a compressed file, at most MAX_UNPACKED bytes: every stream of it (``cat
    a.gz b.gz`` is one gzip file of two), trailing zero bytes ignored as gzip does."""
    parts: list[bytes] = []
    total = 0
    while True:
        d = _decompressor(kind)
        try:
            out = d.decompress(data, MAX_UNPACKED + 1 - total)
        except (OSError, EOFError, ValueError, lzma.LZMAError, zlib.error) as exc:
            raise TextInputError(f"not a valid {kind} file ({exc})") from None
        total += len(out)
        parts.append(out)
        if total > MAX_UNPACKED:
            raise TextInputError(
                f"{kind} file unpacks to more than {MAX_UNPACKED >> 20} MiB: "
                "not a table of points"
            )
        if not d.eof:
            raise TextInputError(f"{kind} file is cut short (an interrupted copy?)")
        data = d.unused_data
        if not data.strip(b"\x00"):
            return b"".join(parts)
        if compression(data) != kind:
            raise TextInputError(f"{kind} file has trailing data that is not {kind}")


def read_text(path: str | Path) -> str:
    """The text of an input file: unpacked when it is gzip, bzip2 or xz (by its first
    bytes), decoded as UTF-8 with an optional byte-order mark.

    Raises
    ------
    TextInputError
        The file cannot be read, is a broken or oversized compressed stream, or is not
        UTF-8 text; the message gives the reason (the caller names the file).
    """
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise TextInputError(f"cannot read file: {exc.strerror or exc}") from None
    kind = compression(data)
    if kind is not None:
        data = _unpack(data, kind)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        what = f"{kind}-compressed data is" if kind else "file is"
        raise TextInputError(f"not UTF-8 text (the {what} binary: {exc.reason})") from None


def plain_suffix(path: str | Path) -> str:
    """The file's suffix past a compression suffix, lower case: ``.csv`` for ``x.CSV.gz``."""
    p = Path(path)
    if p.suffix.lower() in COMPRESSED_SUFFIXES:
        p = p.with_suffix("")
    return p.suffix.lower()
