"""Rules on the write path, in the order confluent-kafka's serializer applies them.

The rules are those of the registered schema the records are framed with (its id is on every
record, so its contract holds for every record): DOMAIN rules in order on the Arrow values
(``ENCRYPT`` encrypts tagged fields column by column, ``CEL`` conditions and ``CEL_FIELD`` rules
in the Arrow subset run on whole columns), then the format's vectorized encoder, then ENCODING
rules on the payloads (``ENCRYPT_PAYLOAD``), then the framing (the caller's).

Any other rule makes the batch go through confluent-kafka's own serializer record by record:
our encoder writes each record in plain, confluent-kafka's serializer reads it back into its
object form and writes it again with every rule applied (``use.schema.id``). A rule failure
follows ``onFailure``: ERROR makes the row an error, NONE writes the record as it is, DLQ sends
the record (as JSON, fields of encryption rules redacted, as confluent-kafka's ``DlqAction``) to
the dead-letter topic and leaves it out of the write.
"""
from __future__ import annotations

import dataclasses
import functools
import logging
import threading
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from registry import Schema
from wireformat import Framing, parse_frames

from connector.formats import EncodeResult, payload_format
from connector.formats.core import ProcessCache
from connector.schema.rules._cel import NotVectorizable
from connector.schema.rules._common import (
    per_record_reason,
    RowFailures,
    active_rules,
    put_rows,
    record_form,
    send_to_dlq,
    RuleScope,
)
from connector.schema.rules._crypto import encrypt_column
from connector.schema.rules._domain import cel_condition, cel_field
from connector.schema.rules._fields import BYTES, STRING, encrypt_rule_columns, leaves_of, replace_leaf
from connector.schema.rules._keys import EncryptParams

__all__ = ["WriteRules", "WriteOutcome"]

log = logging.getLogger("asyncapi_kafka")


@dataclasses.dataclass(frozen=True)
class WriteOutcome:
    """:meth:`WriteRules.encode`'s answer: the encoder's result and the rows sent to a DLQ
    (left out of the write, not errors of the write)."""

    result: EncodeResult
    dropped: np.ndarray


@dataclasses.dataclass(frozen=True, kw_only=True)
class WriteRules(RuleScope):
    """The rules a write applies (picklable; see :class:`~._read.ReadRules` for the fields)."""

    target: Schema

    no_topic_hint = "name the subject (subject=) or the topic"

    def _state(self) -> _State:
        return _STATES.get(self, lambda: _State(self))

    def subjects(self, topics, n: int) -> list[str]:
        """The subject of each of ``n`` records (``topics``: one topic, one per record, or None)."""
        if self.subject or topics is None or isinstance(topics, str):
            return [self.subject_of(topics, self.target)] * n
        by_topic: dict[str, str] = {}
        for t in set(topics):
            by_topic[t] = self.subject_of(t, self.target)
        return [by_topic[t] for t in topics]

    def encode(self, values: pa.Array, encoder, column: str = "value", *, topics=None, keys=None,
               headers=None) -> WriteOutcome:
        n = len(values)
        st = self._state()
        fails = RowFailures(n, "WRITE", self.settings)
        subjects = self.subjects(topics, n) if st.needs_subject else [self.subject or ""] * n
        if st.per_record is None:
            try:
                out = st.vectorized(values, encoder, column, subjects, fails)
            except NotVectorizable as e:
                log.info("data contracts: a write batch runs per record through confluent-kafka: %s", e)
                fails = RowFailures(n, "WRITE", self.settings)
                out = st.per_record_encode(values, encoder, column, subjects, topics, fails)
        else:
            out = st.per_record_encode(values, encoder, column, subjects, topics, fails)
        payloads, errors = out.payloads, out.errors.to_numpy(zero_copy_only=False).copy()
        bad = fails.mask()
        dropped = np.zeros(n, bool)
        if fails.dlq:
            rows = np.array(sorted(fails.dlq), np.int64)
            dropped[rows] = True
            send_to_dlq(fails, values=st.dlq_values(values, encoder, rows, n), keys=_keys(keys, n),
                        topics=topics, headers=None, mode="WRITE")
        if bad.any():
            errors = np.where(bad, fails.errors, errors)
            payloads = pc.if_else(pa.array(bad), pa.nulls(n, pa.binary()), payloads)
        return WriteOutcome(EncodeResult(payloads, pa.array(errors, pa.string())), dropped)


class _State:
    def __init__(self, rules: WriteRules):
        self.rules = rules
        self.lock = threading.Lock()
        t = rules.target
        self.domain = active_rules(t, "DOMAIN", "WRITE")
        self.encoding = active_rules(t, "ENCODING", "WRITE")
        self.per_record: str | None = per_record_reason(self.encoding, self.domain)
        self.needs_subject = bool(self.per_record) or any(
            r.type in ("ENCRYPT", "ENCRYPT_PAYLOAD") for r in self.domain + self.encoding)
        self.serde: Any = None
        self.form: Any = None

    # -- vectorized -----------------------------------------------------------------------------------
    def vectorized(self, values, encoder, column, subjects, fails) -> EncodeResult:
        from connector.formats.core import ValueFitError

        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        try:
            values = encoder.coerce(values, column)
        except ValueFitError:
            pass  # the encoder reports those rows
        target, fmt, message = self.rules.target, self.rules.fmt, self.rules.message
        for rule in self.domain:
            live = np.asarray(pc.is_valid(values).to_numpy(zero_copy_only=False), bool) & \
                np.equal(fails.errors, np.array(None, object))
            if not live.any():
                continue
            if rule.type == "ENCRYPT":
                values = self._encrypt(rule, values, live, subjects, fails)
                continue
            fail = functools.partial(_fail_rows, fails, rule, subjects)
            if rule.type == "CEL":
                cel_condition(rule, values, live, target, fmt, message, fail)
            else:
                values = cel_field(rule, values, live, target, fmt, message, fail)
        res = encoder.encode(values, column)
        if not self.encoding:
            return res
        payloads = res.payloads
        for rule in self.encoding:
            params = EncryptParams.of(rule, target)
            live = np.asarray(pc.is_valid(payloads).to_numpy(zero_copy_only=False), bool)
            payloads = self._encrypt_col(payloads, live, rule, params, subjects, fails, text=False, what="payload")
        return EncodeResult(payloads, res.errors)

    def _encrypt_col(self, col, use, rule, params, subjects, fails, *, text: bool, what: str, owner=None):
        idx = np.flatnonzero(use)
        if not len(idx):
            return col
        subs = np.array(subjects, object)[owner[idx] if owner is not None else idx]
        out = col
        for subject in sorted(set(subs.tolist())):
            pick = idx[subs == subject]
            try:
                version, aead = self.rules.ring.writer(params, subject)
            except Exception as e:  # noqa: BLE001 - a key that cannot be had fails its rows, named
                rows_failed = np.unique(owner[pick] if owner is not None else pick)
                fails.fail(rows_failed, rule, f"{what}: {type(e).__name__}: {e}", subject)
                continue
            enc = encrypt_column(col.take(pa.array(pick)), aead, version=version if params.rotated else None,
                                 text=text)
            out = put_rows(out, pick, enc)
        return out

    def _encrypt(self, rule, values, live, subjects, fails):
        """Encrypt the fields an ENCRYPT rule selects; a selected field of another type fails the
        rows that hold a value there, as confluent-kafka's field encryption does."""
        target = self.rules.target
        params = EncryptParams.of(rule, target)
        for f in encrypt_rule_columns(values, target, self.rules.fmt, self.rules.message, rule.tags, live):
            if not f.encryptable:
                if f.present.any():
                    bad = np.unique(f.owner[f.present])
                    fails.fail(bad, rule, f"field {f.leaf.full_name}: type {f.leaf.type} not supported for encryption",
                               [subjects[i] for i in bad])
                continue
            new = self._encrypt_col(f.col, f.present, rule, params, subjects, fails,
                                    text=f.text, what=f"field {f.leaf.full_name}", owner=f.owner)
            values = replace_leaf(values, f.leaf.path, new)
        return values

    # -- per record -----------------------------------------------------------------------------------
    def _form(self):
        """The target's records as objects (what reads our encoder's bytes back for the serializer)."""
        if self.form is None:
            self.form = record_form(self.rules.fmt, self.rules.target, self.rules.message)
        return self.form

    def per_record_encode(self, values, encoder, column, subjects, topics, fails) -> EncodeResult:
        r = self.rules
        if self.serde is None:
            self.serde = r.record_serde({})
        res = encoder.encode(values, column)
        plain = res.payloads.to_pylist()
        form = self._form()
        topic_list = [topics] * len(plain) if topics is None or isinstance(topics, str) else list(topics)
        out: list[bytes | None] = []
        for i, p in enumerate(plain):
            if p is None:
                out.append(None)
                continue
            obj = form.from_bytes(p)
            framed, err, dlq_rule = self.serde.serialize(obj, r.target, topic_list[i] or "", subjects[i], form)
            if err is not None:
                if dlq_rule is not None:
                    from registry import Rule

                    fails.fail(np.array([i]), Rule.from_json(dlq_rule.to_dict()), err, subjects[i])
                else:
                    fails.error(np.array([i]), f"data contract: {err}")
                out.append(None)
                continue
            out.append(framed)
        framed_arr = pa.array(out, pa.binary())
        parsed = parse_frames(framed_arr, Framing.CONFLUENT, protobuf_indexes=payload_format(r.fmt).indexed_messages)
        payloads = pc.if_else(pc.is_valid(framed_arr), parsed.payload, pa.nulls(len(out), pa.binary()))
        return EncodeResult(payloads, res.errors)

    def dlq_values(self, values, encoder, rows: np.ndarray, n: int) -> list:
        """The DLQ record values of ``rows``: JSON of the record, fields of encryption rules redacted."""
        out: list[bytes | None] = [None] * n
        plain = encoder.encode(values.take(pa.array(rows))).payloads.to_pylist()
        tags = {t for rule in self.domain + self.encoding if rule.type in ("ENCRYPT", "ENCRYPT_PAYLOAD")
                for t in rule.tags}
        redact = [leaf for leaf in leaves_of(self.rules.target, self.rules.fmt, self.rules.message)
                  if tags & leaf.tags and leaf.type in (STRING, BYTES)]
        form = self._form()
        for row, p in zip(rows.tolist(), plain):
            if p is None:
                continue
            obj = form.from_bytes(p)
            for leaf in redact:
                obj = form.transform(obj, leaf, functools.partial(_redacted, leaf.type))
            out[row] = form.to_json(obj)
        return out


_STATES = ProcessCache()


def _redacted(typ: str, value: Any) -> Any:
    """confluent-kafka's ``FieldRedactionExecutor``: a tagged string or bytes value's stand-in."""
    if typ == STRING and isinstance(value, str):
        return "<REDACTED>"
    if typ == BYTES and isinstance(value, (bytes, bytearray)):
        return b"<REDACTED>"
    return value


def _fail_rows(fails: RowFailures, rule, subjects: list[str], rows: np.ndarray, text: str) -> None:
    """A domain step's failed ``rows`` as row failures, each under its record's subject."""
    fails.fail(rows, rule, text, [subjects[i] for i in rows])


def _keys(keys, n: int) -> list | None:
    if keys is None:
        return None
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    if isinstance(keys, pa.Array):
        if not pa.types.is_binary(keys.type):
            keys = keys.cast(pa.binary()) if pa.types.is_string(keys.type) else None
        return keys.to_pylist() if keys is not None else None
    return list(keys)
