"""The encryption primitives of Confluent's field and payload encryption, over whole Arrow columns.

Byte for byte what confluent-kafka's ``EncryptionExecutor`` (Google Tink) writes and reads:

=====================  ===================================================================
what                   bytes
=====================  ===================================================================
AES128_GCM/AES256_GCM  ``iv (12) || ciphertext || tag (16)``, empty associated data (Tink
                       raw AEAD)
AES256_SIV             ``siv (16) || ciphertext``, one empty associated-data component
                       (Tink raw deterministic AEAD)
rotated keys           ``0x00 || DEK version (4, big-endian) || the above`` when the rule sets
                       ``encrypt.dek.expiry.days`` > 0
string fields          the above, base64 (standard alphabet, padded)
DEK key material       Tink's serialized key proto: ``AesGcmKey`` (field 3 = key) or
                       ``AesSivKey`` (field 2 = the 64-byte key); field 1 (version) = 0
local KMS (KEK)        AES128-GCM raw with the key HKDF-SHA256(secret, no salt, no info, 16 bytes)
=====================  ===================================================================

The AEAD call is per value (``cryptography``'s OpenSSL binding, about 1 µs each); everything
around it is per column: one key per DEK version, versions read from the column's buffer with
numpy, nonces drawn in one call, the output array built once. Needs ``cryptography`` (the
``rules`` extra).
"""
from __future__ import annotations

import binascii
import os
from collections.abc import Callable

import numpy as np
import pyarrow as pa

from connector.errors import ConfigError

__all__ = ["ALGORITHMS", "Aead", "aead_for", "key_from_material", "new_key_material", "local_kms_key",
           "LocalKms", "local_kms_dek_maker", "decrypt_column", "encrypt_column", "split_versions", "RuleCryptoError"]

#: DEK algorithm → (raw key length, deterministic, Tink key-proto field of the key bytes)
ALGORITHMS: dict[str, tuple[int, bool, int]] = {
    "AES128_GCM": (16, False, 3),
    "AES256_GCM": (32, False, 3),
    "AES256_SIV": (64, True, 2),
}
_IV = 12
_TAG = 16
_VERSION_PREFIX = 5


class RuleCryptoError(ValueError):
    """A value that cannot be decrypted (wrong key, truncated, tampered) or encrypted."""


def _cryptography():
    try:
        from cryptography.hazmat.primitives.ciphers import aead
    except ImportError as e:  # pragma: no cover - the rules extra brings it
        raise ConfigError("encrypted fields need the 'cryptography' package: pip install "
                          "'asyncapi-kafka[rules]'") from e
    return aead


class Aead:
    """One key's AEAD, with Tink's raw output layout (see the module table)."""

    __slots__ = ("deterministic", "_cipher", "_InvalidTag")

    def __init__(self, key: bytes, deterministic: bool):
        aead = _cryptography()
        from cryptography.exceptions import InvalidTag

        self.deterministic = deterministic
        self._cipher = aead.AESSIV(key) if deterministic else aead.AESGCM(key)
        self._InvalidTag = InvalidTag

    def encrypt(self, plaintext: bytes, nonce: bytes | None = None) -> bytes:
        if self.deterministic:
            return self._cipher.encrypt(plaintext, [b""])
        iv = nonce if nonce is not None else os.urandom(_IV)
        return iv + self._cipher.encrypt(iv, plaintext, None)

    def decrypt_many(self, items: list, rows: list[int], cut: int, out: list, errors) -> None:
        """Decrypt ``items[i][cut:]`` into ``out[i]`` for every ``i`` of ``rows`` (the hot loop: locals
        only, one call into OpenSSL per value); failures go to ``errors[i]``."""
        dec, invalid = self._cipher.decrypt, self._InvalidTag
        if self.deterministic:
            ad = [b""]
            for i in rows:
                try:
                    out[i] = dec(items[i][cut:], ad)
                except invalid:
                    errors[i] = "decryption failed: wrong key or tampered ciphertext"
            return
        lo, hi = cut + _IV, cut + _IV + _TAG
        for i in rows:
            v = items[i]
            if len(v) < hi:
                errors[i] = f"ciphertext of {len(v) - cut} bytes is shorter than IV and tag"
                continue
            try:
                out[i] = dec(v[cut:lo], v[lo:], None)
            except invalid:
                errors[i] = "decryption failed: wrong key or tampered ciphertext"

    def decrypt(self, ciphertext: bytes) -> bytes:
        try:
            if self.deterministic:
                return self._cipher.decrypt(ciphertext, [b""])
            if len(ciphertext) < _IV + _TAG:
                raise RuleCryptoError(f"ciphertext of {len(ciphertext)} bytes is shorter than IV and tag")
            mv = memoryview(ciphertext)
            return self._cipher.decrypt(mv[:_IV], mv[_IV:], None)
        except self._InvalidTag:
            raise RuleCryptoError("decryption failed: wrong key or tampered ciphertext") from None


def key_from_material(material: bytes, algorithm: str) -> bytes:
    """The raw key inside Tink's serialized key proto (``AesGcmKey`` / ``AesSivKey``).

    Examples
    --------
    >>> key_from_material(b"\\x1a\\x10" + bytes(range(16)), "AES128_GCM") == bytes(range(16))
    True
    """
    try:
        length, _, field = ALGORITHMS[algorithm]
    except KeyError:
        raise ConfigError(f"unknown DEK algorithm {algorithm!r}; valid: {', '.join(ALGORITHMS)}") from None
    pos, key = 0, None
    try:
        while pos < len(material):
            tag, pos = _varint(material, pos)
            number, wire = tag >> 3, tag & 7
            if wire == 0:
                _, pos = _varint(material, pos)
            elif wire == 2:
                size, pos = _varint(material, pos)
                if number == field:
                    key = bytes(material[pos:pos + size])
                pos += size
            else:
                raise ValueError(f"wire type {wire}")
    except (IndexError, ValueError) as e:
        raise RuleCryptoError(f"DEK key material is not a Tink {algorithm} key ({e})") from None
    if key is None or len(key) != length:
        raise RuleCryptoError(f"DEK key material holds no {length}-byte {algorithm} key")
    return key


def new_key_material(algorithm: str) -> bytes:
    """Fresh key material as Tink's key template makes it (``AesGcmKey``/``AesSivKey``, version 0)."""
    length, _, field = ALGORITHMS[algorithm]
    return bytes([(field << 3) | 2, length]) + os.urandom(length)


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    out = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        out |= (b & 0x7F) << shift
        if not b & 0x80:
            return out, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def aead_for(material: bytes, algorithm: str) -> Aead:
    """The AEAD of a DEK's key material."""
    return Aead(key_from_material(material, algorithm), ALGORITHMS[algorithm][1])


def local_kms_key(secret: str) -> bytes:
    """The KEK of confluent-kafka's local KMS (``local-kms://``) for ``secret``: HKDF-SHA256, no
    salt, no info, 16 bytes."""
    _cryptography()
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    return HKDF(algorithm=hashes.SHA256(), length=16, salt=None, info=b"").derive(secret.encode("utf-8"))


class LocalKms:
    """confluent-kafka's local KMS: wraps and unwraps DEKs with a key derived from a secret.

    Examples
    --------
    >>> kms = LocalKms("s3cret")
    >>> kms.decrypt(kms.encrypt(b"dek")) == b"dek"
    True
    """

    def __init__(self, secret: str):
        self._aead = Aead(local_kms_key(secret), False)

    def encrypt(self, plaintext: bytes) -> bytes:
        return self._aead.encrypt(plaintext)

    def decrypt(self, ciphertext: bytes) -> bytes:
        return self._aead.decrypt(ciphertext)


def local_kms_dek_maker(secret: str) -> Callable[[str], tuple[bytes, bytes]]:
    """For :class:`connector.testing.RegistryServer`'s shared KEKs: ``algorithm -> (key material,
    key material wrapped by the local KMS of secret)``."""
    kms = LocalKms(secret)

    def make(algorithm: str) -> tuple[bytes, bytes]:
        material = new_key_material(algorithm)
        return material, kms.encrypt(material)

    return make


# -- columns ----------------------------------------------------------------------------------------
def _bounds(arr: pa.Array) -> tuple[np.ndarray, np.ndarray, memoryview]:
    """Start and end byte offsets of each value and the data buffer of a binary/string array."""
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], np.int32, count=len(arr) + 1, offset=arr.offset * 4) \
        if bufs[1] is not None else np.zeros(len(arr) + 1, np.int32)
    data = memoryview(bufs[2]) if bufs[2] is not None else memoryview(b"")
    return offsets[:-1].astype(np.int64), offsets[1:].astype(np.int64), data


def split_versions(values: pa.Array, rotated: bool) -> tuple[np.ndarray, np.ndarray]:
    """(DEK version per value, byte offset of the ciphertext proper) of a binary column.

    Without rotation every value uses version 1 and starts at 0. With rotation the 5-byte
    prefix (magic 0, version) is read from the buffer with numpy; a value too short or with
    another magic byte gets version -1.
    """
    n = len(values)
    if not rotated:
        return np.ones(n, np.int64), np.zeros(n, np.int64)
    starts, ends, data = _bounds(values)
    buf = np.frombuffer(data, np.uint8) if len(data) else np.zeros(1, np.uint8)
    ok = (ends - starts) >= _VERSION_PREFIX
    idx = np.where(ok, starts, 0)
    ok &= buf[np.minimum(idx, len(buf) - 1)] == 0
    version = np.zeros(n, np.int64)
    for i in range(1, 5):
        version = (version << 8) | buf[np.minimum(idx + i, len(buf) - 1)].astype(np.int64)
    version[~ok] = -1
    return version, np.full(n, _VERSION_PREFIX, np.int64)


def decrypt_column(values: pa.Array, aead_of: Callable[[int], Aead], *, rotated: bool,
                   text: bool) -> tuple[pa.Array, np.ndarray]:
    """Decrypt every non-null value of a ``binary`` (``text``: base64 ``string``) column.

    Parameters
    ----------
    values : pa.Array
        Ciphertexts, as the field holds them.
    aead_of : callable
        DEK version → :class:`Aead`; called once per distinct version in the column.
    rotated : bool
        Values carry the 5-byte version prefix (``encrypt.dek.expiry.days`` > 0).
    text : bool
        A string field: values are base64 text and plaintexts must be UTF-8.

    Returns
    -------
    (pa.Array, numpy object array)
        The plaintexts (same type as ``values``; null where a value failed) and the error text
        per value (None where it decrypted).
    """
    n = len(values)
    errors = np.full(n, None, object)
    raw = values.cast(pa.binary()) if text else values
    valid = ~np.asarray(raw.is_null().to_numpy(zero_copy_only=False), bool)
    items = raw.to_pylist()
    if text:
        # not strict: a stray character decodes to other bytes, which the AEAD tag then refuses
        a2b = binascii.a2b_base64
        for i in np.flatnonzero(valid).tolist():
            try:
                items[i] = a2b(items[i])
            except (binascii.Error, ValueError):
                items[i], errors[i] = None, "encrypted field is not base64 text"
                valid[i] = False
        raw = pa.array(items, pa.binary()) if rotated else raw
    versions, skip = split_versions(raw, rotated)
    out: list[bytes | None] = [None] * n
    for version in np.unique(versions[valid]).tolist():
        rows = np.flatnonzero(valid & (versions == version)).tolist()
        if version < 0:
            for i in rows:
                errors[i] = "encrypted field has no DEK version prefix"
            continue
        try:
            aead = aead_of(int(version))
        except Exception as e:  # noqa: BLE001 - a key that cannot be had fails its rows, named
            for i in rows:
                errors[i] = f"{type(e).__name__}: {e}"
            continue
        aead.decrypt_many(items, rows, int(skip[rows[0]]) if rows else 0, out, errors)
    result = pa.array(out, pa.binary())
    if text:
        try:
            return result.cast(pa.string()), errors
        except pa.ArrowInvalid:
            strs: list[str | None] = []
            for i, b in enumerate(out):
                try:
                    strs.append(None if b is None else b.decode("utf-8"))
                except UnicodeDecodeError:
                    strs.append(None)
                    errors[i] = "decrypted field is not UTF-8 text"
            return pa.array(strs, pa.string()), errors
    return result, errors


def encrypt_column(values: pa.Array, aead: Aead, *, version: int | None, text: bool) -> pa.Array:
    """Encrypt every non-null value of a ``binary`` or ``string`` (``text``) column with one DEK;
    ``version`` not None prefixes each ciphertext with it (rotated keys). Strings come back as
    base64 text."""
    raw = values.cast(pa.binary()) if text else values
    items = raw.to_pylist()
    prefix = b"\x00" + int(version).to_bytes(4, "big") if version is not None else b""
    nonces = os.urandom(_IV * len(items)) if not aead.deterministic else b""
    out: list[bytes | str | None] = []
    for i, v in enumerate(items):
        if v is None:
            out.append(None)
            continue
        ct = prefix + aead.encrypt(v, nonces[i * _IV:(i + 1) * _IV] if nonces else None)
        out.append(binascii.b2a_base64(ct, newline=False).decode("ascii") if text else ct)
    return pa.array(out, pa.string() if text else pa.binary())
