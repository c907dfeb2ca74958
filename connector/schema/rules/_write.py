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
from connector.schema.rules._cel import NotVectorizable, compile_cel, split_guard
from connector.schema.rules._common import (
    per_record_reason,
    RowFailures,
    active_rules,
    put_rows,
    record_form,
    send_to_dlq,
    RuleScope,
    true_rows,
)
from connector.schema.rules._crypto import encrypt_column
from connector.schema.rules._fields import (
    BYTES,
    STRING,
    field_rule_columns,
    get_leaf,
    leaves_of,
    replace_leaf,
)
from connector.schema.rules._keys import EncryptParams, key_ring

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

    @property
    def ring(self):
        return key_ring(self.rules.registry, self.rules.settings.kms)

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
            elif rule.type == "CEL":
                self._cel(rule, values, live, fails, subjects)
            else:
                values = self._cel_field(rule, values, live, fails, target, fmt, message, subjects)
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
                version, aead = self.ring.writer(params, subject)
            except Exception as e:  # noqa: BLE001 - a key that cannot be had fails its rows, named
                rows_failed = np.unique(owner[pick] if owner is not None else pick)
                fails.fail(rows_failed, rule, f"{what}: {type(e).__name__}: {e}", subject)
                continue
            enc = encrypt_column(col.take(pa.array(pick)), aead, version=version if params.rotated else None,
                                 text=text)
            out = put_rows(out, pick, enc)
        return out

    def _encrypt(self, rule, values, live, subjects, fails):
        target = self.rules.target
        params = EncryptParams.of(rule, target)
        for leaf in leaves_of(target, self.rules.fmt, self.rules.message):
            if not leaf.selected_by(rule.tags):
                continue
            got = get_leaf(values, leaf.path)
            if got is None:
                continue
            col, owner = got
            present = np.asarray(pc.is_valid(col).to_numpy(zero_copy_only=False), bool) & live[owner]
            if leaf.type not in (STRING, BYTES) or not (pa.types.is_string(col.type) or pa.types.is_binary(col.type)):
                if present.any():
                    bad = np.unique(owner[present])
                    fails.fail(bad, rule, f"field {leaf.full_name}: type {leaf.type} not supported for encryption",
                               [subjects[i] for i in bad])
                continue
            new = self._encrypt_col(col, present, rule, params, subjects, fails,
                                    text=pa.types.is_string(col.type), what=f"field {leaf.full_name}", owner=owner)
            values = replace_leaf(values, leaf.path, new)
        return values

    def _cel(self, rule, values, live, fails, subjects) -> None:
        guard, body = split_guard(rule.expr or "")
        sub = values.filter(pa.array(live))
        types = self._leaf_types()
        ok = np.ones(len(sub), bool) if guard is None else true_rows(compile_cel(guard).evaluate({"message": sub}, types), len(sub))
        res = true_rows(compile_cel(body).evaluate({"message": sub}, types), len(sub)) if ok.any() else ok
        failed = ok & ~res
        if failed.any():
            bad = np.flatnonzero(live)[failed]
            fails.fail(bad, rule, rule.doc or f"Rule expr failed: {rule.expr}", [subjects[i] for i in bad])

    def _leaf_types(self) -> dict[tuple, str]:
        return {("message",) + leaf.path: leaf.type
                for leaf in leaves_of(self.rules.target, self.rules.fmt, self.rules.message) if not leaf.nested}

    def _cel_field(self, rule, values, live, fails, target, fmt, message, subjects):
        guard, body = split_guard(rule.expr or "")
        m = int(live.sum())
        idx = np.flatnonzero(live)
        for leaf, col in field_rule_columns(values, target, fmt, message, rule.tags):
            env: dict[str, Any] = {"value": col.filter(pa.array(live)), "name": leaf.name,
                                   "fullName": leaf.full_name, "typeName": leaf.type}
            if len(leaf.path) == 1:
                env["message"] = values.filter(pa.array(live))
            types = {("value",): leaf.type, **self._leaf_types()}
            gmask = np.ones(m, bool) if guard is None else true_rows(compile_cel(guard).evaluate(env, types), m)
            if not gmask.any():
                continue
            result = compile_cel(body).evaluate(env, types)
            if not isinstance(result, pa.Array):
                result = pa.array([result] * m)
            if rule.kind == "CONDITION":
                failed = gmask & ~true_rows(result, m)
                if failed.any():
                    fails.fail(idx[failed], rule, rule.doc or f"Rule expr failed: {rule.expr}",
                               [subjects[i] for i in idx[failed]])
                continue
            if not result.type.equals(col.type):
                if pa.types.is_integer(result.type) and pa.types.is_integer(col.type):
                    result = result.cast(col.type)
                else:
                    raise NotVectorizable("a field transform whose result is not of the field's type")
            new_sub = pc.if_else(pa.array(gmask), result, env["value"])
            values = replace_leaf(values, leaf.path, put_rows(col, idx, new_sub))
        return values

    # -- per record -----------------------------------------------------------------------------------
    def _form(self):
        """The target's records as objects (what reads our encoder's bytes back for the serializer)."""
        if self.form is None:
            self.form = record_form(self.rules.fmt, self.rules.target, self.rules.message)
        return self.form

    def per_record_encode(self, values, encoder, column, subjects, topics, fails) -> EncodeResult:
        from connector.schema.rules._confluent import RecordSerde

        r = self.rules
        if self.serde is None:
            self.serde = RecordSerde(r.registry, r.settings.kms.as_dict(), r.is_key, {})
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
