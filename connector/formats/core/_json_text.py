"""JSON string escapes as byte tables, for the compiled kernels that read JSON text (the JSON
Schema kernel) and write it (the JSON kernel's re-escaping, Protobuf's well-known types as JSON).
One table each way, so every kernel escapes and unescapes alike (as ``json.dumps`` and msgspec
write strings: the named escapes, ``\\u00XX`` for the other control characters)."""
import numpy as np

__all__ = ["HEX_DIGITS", "JSON_ESCAPES", "JSON_UNESCAPES"]

#: lower-case hex digits, by value
HEX_DIGITS = np.frombuffer(b"0123456789abcdef", np.uint8)

#: per byte of a string: 0 written as is, else the letter after its backslash (``u``: ``\u00XX``)
JSON_ESCAPES = np.zeros(256, np.uint8)
JSON_ESCAPES[:32] = ord("u")

#: per letter after a backslash: the byte it stands for, -1 when it is no escape (``u`` is read
#: by the caller: four hex digits follow)
JSON_UNESCAPES = np.full(256, -1, np.int64)

for _byte, _letter in {8: "b", 9: "t", 10: "n", 12: "f", 13: "r", 34: '"', 92: "\\"}.items():
    JSON_ESCAPES[_byte] = ord(_letter)
    JSON_UNESCAPES[ord(_letter)] = _byte
JSON_UNESCAPES[ord("/")] = ord("/")  # read, never written
