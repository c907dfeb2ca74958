"""Documents of several-message channels and the reads of them, for the routing tests."""
from __future__ import annotations

import json

import pyarrow as pa

from connector.asyncapi import load_document, plan_read
from connector.formats import decode_column
from connector.schema import SchemaRequest, value_decoder
from wireformat import Framing

HEADERS_TYPE = pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))

# Two JSON messages told apart by the types of their values only (no `required`, no enum): the
# verdict of today's decoder and of a validating one agree on every record the tests use.
A = {"type": "object", "title": "A", "properties": {"foo": {"type": "string"}}}
B = {"type": "object", "title": "B", "properties": {"foo": {"type": "integer"}, "bar": {"type": "boolean"}}}


def typed(header: str, **values) -> dict:
    """A headers schema fixing ``header`` per message: ``const`` for a str, ``enum`` for a list,
    declared without a value for None."""
    out = {}
    for name, v in values.items():
        prop = {"type": "string"}
        if isinstance(v, str):
            prop["const"] = v
        elif isinstance(v, list):
            prop["enum"] = v
        out[name] = {"type": "object", "properties": {header: prop}}
    return out


def document(payloads: dict, headers: dict | None = None, *, fmt: str | None = None, channel: str = "mixed") -> dict:
    """An AsyncAPI 3.0 document with one channel carrying ``payloads`` (message -> schema)."""
    messages = {}
    for name, schema in payloads.items():
        payload = schema if fmt is None else {"schemaFormat": fmt, "schema": schema}
        m = {"name": name, "payload": payload}
        if headers and headers.get(name) is not None:
            m["headers"] = headers[name]
        messages[name] = m
    return {"asyncapi": "3.0.0", "info": {"title": "t", "version": "1"},
            "channels": {channel: {"address": channel, "messages": messages}}}


def plan_of(doc: dict, **kw):
    return plan_read(load_document(json.loads(json.dumps(doc))), channel="mixed", **kw)


def decoder_of(doc: dict, framing: Framing = Framing.NONE):
    return value_decoder(SchemaRequest(), plan=plan_of(doc), registry=None, framing=framing)


def headers_column(rows) -> pa.Array:
    """rows: None, or a list of (name, value) pairs per record."""
    return pa.array([None if r is None else [{"key": k, "value": v.encode() if isinstance(v, str) else v}
                                             for k, v in r] for r in rows], HEADERS_TYPE)


def read(decoder, values, headers=None):
    vals = pa.array([v if isinstance(v, (bytes, type(None))) else json.dumps(v).encode() for v in values],
                    pa.binary())
    res = decode_column(vals, framing=Framing.NONE, decoder=decoder,
                        headers=headers_column(headers) if headers is not None else None)
    return res.values.to_pylist(), res.errors.to_pylist()


def which(value: dict | None) -> str | None:
    """The message field a decoded row fills (None: none)."""
    if value is None:
        return None
    filled = [k for k, v in value.items() if v is not None]
    assert len(filled) <= 1, value
    return filled[0] if filled else None
