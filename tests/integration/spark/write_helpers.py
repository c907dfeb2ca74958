"""Helpers for the sink's tests: the matrix's orders as DataFrames, written and read back."""
from __future__ import annotations

from tests.integration.spark import matrix_helpers as mh

VALUE_DDL = {
    "avro": "id bigint, customer string, amount double, status string, placed_at timestamp, note string",
    "json": "id bigint, customer string, amount double, status string, note string",
    "protobuf": "id bigint, customer string, amount double, status string, "
                "lines array<struct<sku: string, qty: int>>, note string",
}


def rows(fmt: str, n: int = mh.N, start: int = 0) -> list[tuple]:
    """(key, value, headers, partition) tuples of the matrix's orders ``start..start+n``."""
    out = []
    for i in range(start, start + n):
        rec = mh.record(i, fmt)
        value = tuple(rec[f.split()[0]] for f in _fields(fmt))
        out.append((f"k{i}", value, [(mh.TRACE, f"t{i}".encode())], i % mh.PARTITIONS))
    return out


def _fields(fmt: str) -> list[str]:
    depth, cur, out = 0, "", []
    for ch in VALUE_DDL[fmt]:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    out.append(cur.strip())
    return out


def frame(spark, fmt: str, n: int = mh.N, start: int = 0):
    """A DataFrame with columns key, value (struct), headers, partition."""
    return spark.createDataFrame(rows(fmt, n, start), _struct_ddl(fmt))


def _struct_ddl(fmt: str) -> str:
    inner = ", ".join(f"{f.split(' ', 1)[0]}: {f.split(' ', 1)[1]}" for f in _fields(fmt))
    return (f"key string, value struct<{inner}>, headers array<struct<key: string, value: binary>>, "
            "partition int")


def write(df, doc: str, *, stream: bool = False, **options):
    w = df.write.format("asyncapi-kafka").mode("append").option("asyncapi", doc).option("channel", "orders")
    for k, v in options.items():
        w = w.option(k, v)
    w.save()


def read(spark, doc: str, **options):
    r = spark.read.format("asyncapi-kafka").option("asyncapi", doc).option("channel", "orders")
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def check_read_back(df, fmt: str, n: int = mh.N, start: int = 0) -> None:
    """Every written order comes back once, key, value, user header and partition equal."""
    got = df.collect()
    by_key = {}
    for r in got:
        assert r.key not in by_key, f"duplicate record {r.key}"
        by_key[r.key] = r
    assert sorted(by_key) == sorted(f"k{i}" for i in range(start, start + n))
    for i in range(start, start + n):
        r = by_key[f"k{i}"]
        assert r.value is not None, f"record {i} decoded to null: {getattr(r, '_error', None)}"
        assert r.value.asDict(recursive=True) == mh.expected_value(mh.record(i, fmt), fmt)
        assert r.partition == i % mh.PARTITIONS
        if "headers" in r:
            user = [(h.key, bytes(h.value)) for h in r.headers if h.key == mh.TRACE]
            assert user == [(mh.TRACE, f"t{i}".encode())]
