"""What a ``read_committed`` consumer sees, computed from the log itself.

The librdkafka mock cluster (and tansu) ignore ``isolation.level``: a ``read_committed``
consumer there reads aborted records too (FACTS.md). So the exactly-once tests read each
partition's raw record batches with Kafka's Fetch API (v4, ``read_uncommitted``, every batch
with its transactional and control flags and its producer id) and apply Kafka's rules:

* a record of a non-transactional batch is visible;
* a record of a transactional batch is visible once its producer's COMMIT control record
  follows, never if an ABORT follows;
* nothing at or after the last stable offset is visible: the first offset of the earliest
  transaction still open (neither committed nor aborted).

A minimal client (uncompressed batches only, which the tests write), tests only.
"""
from __future__ import annotations

import dataclasses
import socket
import struct

from confluent_kafka import Consumer

__all__ = ["PartitionLog", "read_log", "committed_values"]

_FETCH, _VERSION = 1, 4
_TRANSACTIONAL, _CONTROL = 0x10, 0x20
_ABORT, _COMMIT = 0, 1


@dataclasses.dataclass
class PartitionLog:
    """One partition as a read_committed consumer sees it, and what it does not see."""

    visible: list[tuple[int, bytes | None, bytes | None]]   # (offset, key, value)
    aborted: list[int]                                       # offsets of aborted records
    open_from: int | None                                    # last stable offset, if a transaction is open
    high_watermark: int
    markers: int                                             # control records (COMMIT and ABORT)


def committed_values(bootstrap: str, topic: str) -> list[bytes]:
    """The values a read_committed consumer reads from every partition of ``topic``."""
    return [v for log in read_log(bootstrap, topic).values() for _, _, v in log.visible if v is not None]


def read_log(bootstrap: str, topic: str) -> dict[int, PartitionLog]:
    """Every partition of ``topic``, fetched from its leader."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "kafka-log", "log_level": 0})
    try:
        md = c.list_topics(topic, timeout=10)
    finally:
        c.close()
    brokers = {b.id: (b.host, b.port) for b in md.brokers.values()}
    out = {}
    for p, pm in sorted(md.topics[topic].partitions.items()):
        out[p] = _partition(brokers[pm.leader], topic, p)
    return out


def _partition(addr: tuple[str, int], topic: str, partition: int) -> PartitionLog:
    pending: dict[int, list[tuple[int, bytes | None, bytes | None]]] = {}  # pid -> its open transaction
    first_open: dict[int, int] = {}
    visible: list[tuple[int, bytes | None, bytes | None]] = []
    aborted: list[int] = []
    markers = 0
    offset, hw = 0, None
    with socket.create_connection(addr, timeout=10) as s:
        while hw is None or offset < hw:
            hw, batches = _fetch(s, topic, partition, offset)
            if not batches:
                break
            for base, attrs, pid, records, _last in batches:
                if attrs & _CONTROL:
                    markers += 1
                    kind = struct.unpack(">hh", records[0][1][:4])[1] if records and records[0][1] else None
                    txn = pending.pop(pid, [])
                    first_open.pop(pid, None)
                    if kind == _COMMIT:
                        visible.extend(txn)
                    else:
                        aborted.extend(o for o, _, _ in txn)
                elif attrs & _TRANSACTIONAL:
                    first_open.setdefault(pid, base)
                    pending.setdefault(pid, []).extend(records)
                else:
                    visible.extend(records)
                offset = max(offset, (records[-1][0] if records else base) + 1)
            offset = max(offset, batches[-1][4] + 1)
    lso = min(first_open.values()) if first_open else None
    if lso is not None:
        visible = [r for r in visible if r[0] < lso]
    return PartitionLog(sorted(visible), sorted(aborted), lso, hw or 0, markers)


def _fetch(s: socket.socket, topic: str, partition: int, offset: int):
    t = topic.encode()
    body = struct.pack(">iiiib", -1, 500, 1, 4 << 20, 0)
    body += struct.pack(">ih", 1, len(t)) + t + struct.pack(">iiqi", 1, partition, offset, 4 << 20)
    client = b"kafka-log"
    req = struct.pack(">hhih", _FETCH, _VERSION, 7, len(client)) + client + body
    s.sendall(struct.pack(">i", len(req)) + req)
    resp = _read(s, struct.unpack(">i", _read(s, 4))[0])
    r = _Reader(resp)
    r.i32()  # correlation id
    r.i32()  # throttle
    for _ in range(r.i32()):
        r.string()
        for _ in range(r.i32()):
            r.i32()
            err = r.i16()
            if err:
                raise RuntimeError(f"Fetch {topic}[{partition}]@{offset}: error {err}")
            hw = r.i64()
            r.i64()  # last stable offset (ignored by the mock: it equals the high watermark)
            n = r.i32()
            for _ in range(max(n, 0)):
                r.i64()
                r.i64()
            size = r.i32()
            data = r.take(size) if size > 0 else b""
            return hw, _batches(data)
    return 0, []


def _batches(data: bytes):
    """(base offset, attributes, producer id, records, last offset) of each complete batch."""
    out = []
    pos = 0
    while pos + 12 <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        end = pos + 12 + length
        if end > len(data):
            break  # a partial batch at the end of the answer
        r = _Reader(data[pos + 12:end])
        r.i32()  # partition leader epoch
        if r.i8() != 2:
            raise RuntimeError("only record batches of magic 2 are read")
        r.u32()  # crc
        attrs = r.i16()
        if attrs & 0x7:
            raise RuntimeError("compressed batches are not read by this test client")
        last_delta = r.i32()
        r.i64()
        r.i64()
        pid = r.i64()
        r.i16()
        r.i32()
        records = []
        for _ in range(r.i32()):
            r.varint()  # length
            r.i8()
            r.varint()  # timestamp delta
            off = base + r.varint()
            key = r.bytes_varint()
            value = r.bytes_varint()
            for _ in range(r.varint()):
                r.bytes_varint()
                r.bytes_varint()
            records.append((off, key, value))
        out.append((base, attrs, pid, records, base + last_delta))
        pos = end
    return out


def _read(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("broker closed the connection")
        buf += chunk
    return buf


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def _unpack(self, fmt: str):
        v = struct.unpack_from(fmt, self.data, self.pos)[0]
        self.pos += struct.calcsize(fmt)
        return v

    def i8(self) -> int:
        return self._unpack(">b")

    def i16(self) -> int:
        return self._unpack(">h")

    def i32(self) -> int:
        return self._unpack(">i")

    def u32(self) -> int:
        return self._unpack(">I")

    def i64(self) -> int:
        return self._unpack(">q")

    def take(self, n: int) -> bytes:
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def string(self) -> str:
        return self.take(self.i16()).decode()

    def varint(self) -> int:
        shift = result = 0
        while True:
            b = self.data[self.pos]
            self.pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return (result >> 1) ^ -(result & 1)
            shift += 7

    def bytes_varint(self) -> bytes | None:
        n = self.varint()
        return None if n < 0 else self.take(n)
