"""Executor side of a write, per input batch: Arrow batch → topics → encode → frame → headers,
ready to produce (:mod:`connector.write._produce` produces it).

Encoding and framing are whole-column Arrow operations, and the encoded Arrow arrays (values,
keys, topics, partitions, the ``headers`` column) go to the producer as they are: it hands the
whole batch to librdkafka in one compiled loop, with no Python call per record.
"""
from __future__ import annotations

import logging
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from wireformat import Framing

from connector.errors import ConfigError
from connector.write._types import Encoding, EncodingMode, WriteSetup

__all__ = ["EncodedBatch", "encode_batch", "topic_namer"]

log = logging.getLogger("asyncapi_kafka")

_MAX_ERRORS_SHOWN = 3


def _fail_rows(errors: pa.Array, what: str, topic_of) -> None:
    valid = pc.is_valid(errors)
    if not pc.any(valid).as_py():
        return
    from connector.formats import EncodeError

    rows = np.flatnonzero(valid.to_numpy(zero_copy_only=False))
    shown = "; ".join(f"row {int(i)} (topic {topic_of(int(i))!r}): {errors[int(i)].as_py()}"
                      for i in rows[:_MAX_ERRORS_SHOWN])
    raise EncodeError(f"{len(rows)} record(s) of a batch cannot be encoded as the channel's {what} schema, so "
                      f"nothing of the batch was written: {shown}")


def _encode(enc: Encoding, values: pa.Array, what: str, topic_of, topics=None,
            keys=None) -> tuple[pa.Array, list | None, np.ndarray | None]:
    """(Kafka bytes, the headers every record carries or None, rows a rule sent to a dead-letter
    topic or None): the write core, then this sink's policy for rows the schema cannot hold (the
    whole batch fails, naming them)."""
    from connector.formats import encode_column

    w = enc.writer
    if enc.mode is EncodingMode.BYTES or w is None:
        return encode_column(values, encoder=None, framing=Framing.NONE).values, None, None
    if w.rules and isinstance(topics, pa.Array):  # the rules name each row's topic from a list
        topics = topics.to_pylist()
    out = encode_column(values, encoder=w.encoder, framing=w.framing, schema_id=w.wire_id,
                        message_indexes=w.message_indexes, compression=enc.compression, is_key=what == "key",
                        column=what, rules=w.rules, topics=topics, keys=keys)
    errors = out.errors
    if out.dropped is not None:
        errors = pc.if_else(pa.array(out.dropped), pa.nulls(len(errors), pa.string()), errors)
    _fail_rows(errors, what, topic_of)
    return out.values, (out.headers or []) + list(w.headers), out.dropped


def _encode_messages(enc: Encoding, values: pa.Array, topic_of, topics=None, keys=None):
    """A ``struct<message1, message2, ...>`` value: each row encoded as the message whose field it
    sets (a null struct is a tombstone). (Kafka bytes, each record's headers — its message's type
    header and schema-id header —, rows sent to a dead-letter topic or None)."""
    from connector.formats.core import scatter
    from connector.kafka import header_rows

    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    n = len(values)
    present = pc.is_valid(values).to_numpy(zero_copy_only=False)
    sets = np.stack([pc.and_(pc.is_valid(values.field(name)), pa.array(present)).to_numpy(zero_copy_only=False)
                     for name, _ in enc.writers]) if n else np.zeros((len(enc.writers), 0), bool)
    count = sets.sum(axis=0)
    bad = present & (count != 1)
    if bad.any():
        names = [name for name, _ in enc.writers]
        shown = "; ".join(f"row {int(i)} (topic {topic_of(int(i))!r}) sets "
                          f"{[names[k] for k in np.flatnonzero(sets[:, i])] or 'no message'}"
                          for i in np.flatnonzero(bad)[:_MAX_ERRORS_SHOWN])
        from connector.formats import EncodeError

        raise EncodeError(f"{int(bad.sum())} record(s) of a batch set no message field or several of 'value' "
                          f"(struct<{', '.join(names)}>: each row sets the one field of its message), so nothing "
                          f"of the batch was written: {shown}")
    parts, groups, dropped = [], [], np.zeros(n, bool)
    for k, (name, w) in enumerate(enc.writers):
        rows = np.flatnonzero(sets[k])
        if not len(rows):
            continue
        take = pa.array(rows)
        sub_topics = topics.take(take) if isinstance(topics, pa.Array) else topics
        sub_keys = keys.take(take) if keys is not None else None
        one = Encoding(EncodingMode.ENCODE, w, enc.compression)
        out, common, drop = _encode(one, values.field(name).take(take), f"value.{name}",
                                    lambda i, rows=rows: topic_of(int(rows[i])), sub_topics, sub_keys)
        parts.append((rows, out))
        groups.append((rows, tuple(common or ())))
        if drop is not None:
            dropped[rows[drop]] = True
    out_values = scatter(n, parts, pa.binary())
    return out_values, header_rows(n, groups), (dropped if dropped.any() else None)


def _topics(setup: WriteSetup, batch: pa.RecordBatch):
    """One topic name for the batch, or an array with one per row (validated against the channel)."""
    plan = setup.plan
    if setup.topic is not None and not setup.topic_column:
        return setup.topic
    if setup.topic_column:
        topics = batch.column("topic")
    else:
        pieces = []
        for kind, text in setup.address_parts:
            if kind == "param":
                col = batch.column(text)
                if col.null_count:
                    row = pc.index(pc.is_null(col), True).as_py()
                    raise ConfigError(f"row {row}: address parameter column '{text}' is null, so the row has no "
                                      f"topic in channel {plan.channel!r}")
                pieces.append(col.cast(pa.string()))
            else:
                pieces.append(pa.scalar(text, pa.string()))
        topics = pc.binary_join_element_wise(*pieces, "") if any(isinstance(p, pa.Array) for p in pieces) else \
            pa.array(["".join(p.as_py() for p in pieces)] * batch.num_rows, pa.string())
    if topics.null_count:
        row = pc.index(pc.is_null(topics), True).as_py()
        raise ConfigError(f"row {row}: column 'topic' is null")
    uniq = pc.unique(topics).to_pylist()
    for t in uniq:
        if setup.topic is not None and t != setup.topic:
            raise ConfigError(f"column 'topic' holds {t!r}, but channel {plan.channel!r} writes to {setup.topic!r}: "
                              "drop the column (or write to the channel of that topic)")
        if not plan.matches(t):
            raise ConfigError(f"topic {t!r} is not an address of channel {plan.channel!r} ({plan.address})")
    if len(uniq) == 1:
        return uniq[0]
    return topics


def _value_array(setup: WriteSetup, batch: pa.RecordBatch) -> pa.Array:
    if setup.value_column is not None:
        return batch.column(setup.value_column)
    cols = [batch.column(n) for n in setup.value_fields]
    return pa.StructArray.from_arrays(cols, names=list(setup.value_fields))


def _headers(batch: pa.RecordBatch, framing_headers: list, own_rows: pa.Array | None = None, topic_of=None,
             typed: frozenset[str] = frozenset()):
    """The batch's headers (the ``headers`` column, then the headers this write adds: the schema-id
    and type headers, on every record or per record in ``own_rows``) and each record's header
    bytes, or (None, None). ``typed``: the names of the type headers this write adds."""
    from connector.kafka import Headers, concat_header_rows

    rows = batch.column("headers") if "headers" in batch.schema.names else None
    if rows is not None and typed:
        rows = _without_own(rows, [(k, v) for k, v in framing_headers or () if k in typed], own_rows, typed, topic_of)
    rows = concat_header_rows(rows, own_rows)
    if rows is None and not framing_headers:
        return None, None
    headers = Headers(rows=rows, common=tuple(framing_headers or ()))
    return headers, headers.sizes(batch.num_rows)


def _without_own(rows: pa.Array, common: list, own_rows: pa.Array | None, typed: frozenset[str],
                 topic_of) -> pa.Array:
    """The ``headers`` column without the type headers this write adds (a read's headers written
    back carry them), after checking each agrees with the record's message: a record whose own type
    header names another message would be read back as that one."""
    from connector.formats import EncodeError
    from connector.kafka import split_header

    n = len(rows)
    expected = {name: pa.array([value] * n, pa.binary()) for name, value in common}
    if own_rows is not None:
        expected.update({name: split_header(own_rows, name)[0] for name in typed})
    for name, want in expected.items():
        found, rest = split_header(rows, name)
        if found.null_count == n:
            continue
        differ = pc.fill_null(pc.and_(pc.is_valid(found), pc.invert(pc.fill_null(pc.equal(found, want), False))),
                              False)
        if pc.any(differ).as_py():
            i = pc.index(differ, True).as_py()
            where = f" (topic {topic_of(i)!r})" if topic_of is not None else ""
            raise EncodeError(f"row {i}{where}: its 'headers' column holds {name}={found[i].as_py()!r}, but the "
                              f"record is written as the message whose {name} is {want[i].as_py()!r}; drop the "
                              "header (the write adds it) or write the row as that message")
        rows = rest
    return rows


class EncodedBatch(NamedTuple):
    """One input batch, ready to produce: what :meth:`connector.kafka.BatchProducer.produce` takes."""

    topics: str | pa.Array          # one topic for the batch, or one per row
    values: pa.Array                # the records' bytes
    keys: pa.Array | None
    partitions: pa.Array | None     # int32, -1 where the partitioner chooses
    headers: Any                    # connector.kafka.Headers or None
    header_sizes: np.ndarray | None  # each record's header bytes (size checks)

    @property
    def rows(self) -> int:
        return len(self.values)

    def topic_names(self) -> list[str]:
        """The distinct topics of the batch."""
        return [self.topics] if isinstance(self.topics, str) else pc.unique(self.topics).to_pylist()


def encode_batch(setup: WriteSetup, batch: pa.RecordBatch) -> EncodedBatch:
    """One input batch encoded, framed and given its topics and headers, ready to produce.

    Raises
    ------
    EncodeError
        A row the schema cannot hold (the whole batch fails, naming up to three rows).
    ConfigError
        A row without a topic of the channel.
    """
    topics = _topics(setup, batch)
    topic_of = topic_namer(topics)
    raw_keys = batch.column("key") if setup.key.mode is not EncodingMode.ABSENT else None
    keys, khdr, kdrop = (None, None, None)
    if setup.key.mode is not EncodingMode.ABSENT:
        keys, khdr, kdrop = _encode(setup.key, batch.column("key"), "key", topic_of, topics)
    own_rows = None
    if setup.value.mode is EncodingMode.MESSAGES:
        values, own_rows, vdrop = _encode_messages(setup.value, _value_array(setup, batch), topic_of, topics,
                                                   keys if keys is not None else raw_keys)
        vhdr = None
    else:
        values, vhdr, vdrop = _encode(setup.value, _value_array(setup, batch), "value", topic_of, topics,
                                      keys if keys is not None else raw_keys)
    dropped = vdrop if kdrop is None else kdrop if vdrop is None else (vdrop | kdrop)
    if dropped is not None:  # sent to a dead-letter topic by a data-contract rule: not written here
        keep = pa.array(~dropped)
        log.warning("%d record(s) of a batch went to a dead-letter topic and are not written", int(dropped.sum()))
        batch = batch.filter(keep)
        values = values.filter(keep)
        keys = keys.filter(keep) if keys is not None else None
        if not isinstance(topics, str):
            topics = topics.filter(keep)
        if own_rows is not None:
            own_rows = own_rows.filter(keep)
    partitions = None
    if setup.has_partition:
        partitions = pc.fill_null(batch.column("partition").cast(pa.int32()), -1)
    headers, hsize = _headers(batch, (khdr or []) + (vhdr or []), own_rows, topic_namer(topics),
                              _typed(setup.value))
    return EncodedBatch(topics, values, keys, partitions, headers, hsize)


def _typed(enc: Encoding) -> frozenset[str]:
    """The names of the type headers a value encoding adds (the document's, per message)."""
    writers = [w for _, w in enc.writers] + ([enc.writer] if enc.writer is not None else [])
    return frozenset(name for w in writers for name, _ in w.headers)


def topic_namer(topics):
    """``row -> topic`` of a batch whose topics are one name or one per row (error messages, size checks)."""
    return (lambda i: topics) if isinstance(topics, str) else (lambda i: topics[i].as_py())
