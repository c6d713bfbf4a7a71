"""Text files as editors save them."""

import codecs


def without_bom(raw: bytes) -> bytes:
    """`raw` without the UTF-8 byte-order mark some editors put first: left there, it is an invisible first
    character of the first name, caption or key ("not found" for a name that looks right)."""
    return raw.removeprefix(codecs.BOM_UTF8)
