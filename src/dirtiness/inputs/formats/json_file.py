"""A JSON artefact read from its file, plain or gzipped (told by its first bytes, not its name): what the
formats of ``inputs.formats`` share, below them."""

from __future__ import annotations

import gzip
import json
import zlib

from ...errors import InputError

GZIP = b"\x1f\x8b"  # how every gzip file starts (a manifest.json.gz, as CI systems keep artefacts)


def is_gzip(path: str) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(2) == GZIP
    except OSError:
        return False


def open_text(path: str, compressed: bool):
    return gzip.open(path, "rt", encoding="utf-8") if compressed else open(path, encoding="utf-8")


def load_json(path: str):
    """A JSON document, plain or gzipped (told by its first bytes, not its name)."""
    compressed = is_gzip(path)
    try:
        with open_text(path, compressed) as handle:
            return json.load(handle)
    except json.JSONDecodeError as error:
        raise InputError(f"{path}: line {error.lineno}: malformed JSON: {error.msg}") from None
    except (EOFError, zlib.error, gzip.BadGzipFile) as error:
        raise InputError(f"{path}: a damaged gzip file ({error or 'it ends too early'})") from None
    except UnicodeDecodeError as error:
        raise InputError(f"{path}: not UTF-8 text{' once unzipped' if compressed else ''} (byte {error.start})") \
            from None
    except OSError as error:
        raise InputError(f"{path}: cannot read: {error.strerror or error}") from None
