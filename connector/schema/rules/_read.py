"""Rules on the read path, in the order confluent-kafka's deserializer applies them.

Per writer schema of a batch (the rows that carry one schema id):

1. ENCODING rules of the writer schema, reversed: ``ENCRYPT_PAYLOAD`` decrypts the payloads
   (vectorized).
2. MIGRATION rules, when the reader is a registry schema of the subject and the versions between
   the writer's and the reader's carry UPGRADE/DOWNGRADE rules (per record: JSONata).
3. Decoding to Arrow (the format's vectorized decoder), writer resolved to reader.
4. DOMAIN rules of the reader schema (a registry reader) or else of the writer schema, reversed:
   ``ENCRYPT`` decrypts tagged fields column by column, ``CEL`` conditions and ``CEL_FIELD``
   rules inside the Arrow subset run on whole columns.

A writer schema with a rule outside the vectorized subset (a migration, JSONata, a CEL
expression or a batch the subset cannot evaluate) sends its rows through confluent-kafka's own
deserializer, record by record (:mod:`._confluent`); the objects it returns are re-encoded with
the schema they now have and decoded like the others.
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

from registry import Schema, client_for
from wireformat import ErrorCode, Framing, encode_frame, encode_protobuf_indexes

from connector.errors import ConfigError
from connector.formats import DecodeResult
from connector.formats.core import ProcessCache
from connector.schema.rules._cel import NotVectorizable
from connector.schema.rules._common import (
    per_record_reason,
    put_rows,
    RowFailures,
    active_rules,
    failure_action,
    record_form,
    replayed,
    send_to_dlq,
    RuleScope,
)
from connector.schema.rules._crypto import decrypt_column
from connector.schema.rules._domain import cel_condition, cel_field
from connector.schema.rules._fields import encrypt_rule_columns, get_leaf, replace_leaf
from connector.schema.rules._keys import EncryptParams

__all__ = ["ReadRules"]

log = logging.getLogger("asyncapi_kafka")


@dataclasses.dataclass(frozen=True, kw_only=True)
class ReadRules(RuleScope):
    """The rules a read applies (picklable; executors build their state per process).

    Attributes
    ----------
    registry : registry.RegistryConfig
        The Confluent-compatible registry (schemas and DEKs).
    settings : ContractSettings
    fmt : str
        The payload format.
    is_key : bool
    subject : str or None
        The subject of every record (a pinned or given subject); else from ``strategy`` and the
        record's topic.
    strategy : str
        The subject name strategy.
    reader : registry.Schema or None
        The reader when it is a registry schema chosen like confluent-kafka's
        ``use.latest.version`` / ``use.latest.with.metadata`` / ``use.schema.id``: its domain rules
        apply and migrations lead to it. None: each writer's own rules apply.
    reader_conf : tuple
        The same choice as confluent-kafka deserializer settings (the per-record path).
    message : str or None
        Protobuf: the reader's message.
    """

    reader: Schema | None = None
    reader_conf: tuple[tuple[str, Any], ...] = ()

    no_topic_hint = "pass subject= or topic= (from_registry)"

    # -- per process --------------------------------------------------------------------------------
    def _state(self) -> _State:
        return _STATES.get(self, lambda: _State(self))

    # -- the batch ----------------------------------------------------------------------------------
    def decode(self, parsed, decoder, lookup, *, raw: pa.Array, topics=None, keys=None,
               headers=None) -> DecodeResult:
        """Decode ``parsed`` with ``decoder`` applying every rule; rule failures are row errors."""
        n = len(parsed)
        st = self._state()
        if st.known_ruleless(parsed):  # the common batch: one writer schema, known to have no rules
            return decoder.decode(parsed, lookup, headers=headers)
        fails = RowFailures(n, "READ", self.settings)
        groups = []
        for key, rows in parsed.group_by_schema():
            if key[1] is None:
                continue
            try:
                writer = lookup(key)
            except Exception:  # noqa: BLE001 - the decoder reports a schema that cannot be had
                continue
            if writer is None:
                continue
            found = st.groups(writer, key, rows, topics, _prefix(decoder, writer, parsed, rows))
            if not found and len(rows) == n:
                st.remember_ruleless(parsed, key)
            groups.extend(found)
        if not groups:
            return decoder.decode(parsed, lookup, headers=headers)

        topic_list = _as_list(topics, n)
        payload = parsed.payload
        skip = np.zeros(n, bool)
        per_record: list[tuple[Any, np.ndarray, str]] = []
        patches: list[tuple[np.ndarray, pa.Array]] = []
        for g in groups:
            if g.plan.no_subject:
                fails.error(g.rows, g.plan.no_subject)
                skip[g.rows] = True
                continue
            if g.plan.per_record:
                per_record.append((g, g.rows, g.plan.per_record))
                skip[g.rows] = True
                continue
            if g.plan.encoding:
                new, bad = st.encoding(g, payload.take(pa.array(g.rows)), fails, headers)
                patches.append((g.rows, new))
                skip[g.rows[bad]] = True
        dparsed = _patched(parsed, patches, skip)
        res = decoder.decode(dparsed, lookup, headers=headers)
        values, derr = res.values, res.errors.to_numpy(zero_copy_only=False).copy()
        parts: list[tuple[np.ndarray, pa.Array]] = []
        for g in groups:
            if g.plan.no_subject or g.plan.per_record or not g.plan.domain:
                continue
            ok = g.rows[~skip[g.rows] & _none(derr[g.rows])]
            if not len(ok):
                continue
            try:
                new = st.domain(g, values.take(pa.array(ok)), ok, fails, headers)
            except NotVectorizable as e:
                per_record.append((g, ok, f"{e}: outside the vectorized subset"))
                continue
            parts.append((ok, new))
        if per_record:
            for rows, new, err in st.per_record(per_record, parsed, raw, topic_list, headers, decoder, lookup, fails):
                parts.append((rows, new))
                derr[rows] = err
        values = _scatter(values, parts)
        if fails.dlq:
            send_to_dlq(fails, values=raw.to_pylist(), keys=_as_bytes_list(keys, n), topics=topics,
                        headers=_header_lists(headers), mode="READ")
        bad = fails.mask()
        errors = np.where(bad, fails.errors, derr)
        failed = bad | ~_none(errors)
        if failed.any():
            values = pc.if_else(pa.array(failed), pa.nulls(n, values.type), values)
        return DecodeResult(values, pa.array(errors, pa.string()), parsed, res.rescued)


# -- per-process state --------------------------------------------------------------------------------
@dataclasses.dataclass
class _Plan:
    encoding: list = dataclasses.field(default_factory=list)   # rules (ENCRYPT_PAYLOAD)
    domain: list = dataclasses.field(default_factory=list)     # rules, in run order
    target: Schema | None = None                                 # whose domain rules and tags
    per_record: str | None = None                                # why the rows go per record
    no_subject: str | None = None                                # why the rows cannot be read


@dataclasses.dataclass
class _Group:
    writer: Schema
    key: Any
    rows: np.ndarray
    subject: str
    plan: _Plan
    prefix: tuple[str, ...] = ()   # several documented messages: the output field of this writer's


class _State:
    def __init__(self, rules: ReadRules):
        self.rules = rules
        self.lock = threading.Lock()
        self.plans: dict[tuple, _Plan | None] = {}
        self.serde: Any = None
        self.forms: dict[Any, Any] = {}

    # A batch whose rows all carry one integer schema id of one framing, already seen without rules
    # for every subject it came with, skips the grouping (a min/max over the ids, no sort).
    _ruleless: set

    def known_ruleless(self, parsed) -> bool:
        keys = getattr(self, "_ruleless", None)
        if not keys or not len(parsed) or parsed.error.any() or parsed.int_id.null_count:
            return False
        f = parsed.framing
        if f.min() != f.max():
            return False
        mm = pc.min_max(parsed.int_id).as_py()
        return mm["min"] == mm["max"] and (int(f[0]), mm["min"]) in keys

    def remember_ruleless(self, parsed, key) -> None:
        if self.rules.subject is None or isinstance(key[1], (bytes, bytearray)) or len(parsed) == 0:
            return  # subjects vary with topics: the plan is per subject
        with self.lock:
            if not hasattr(self, "_ruleless"):
                self._ruleless = set()
            if len(self._ruleless) < 4096:
                self._ruleless.add((int(parsed.framing[0]), int(key[1])))

    def groups(self, writer: Schema, key, rows: np.ndarray, topics, prefix: tuple = ()) -> list[_Group]:
        """The writer group split by subject (topics differ), each with its plan."""
        r = self.rules
        if r.subject or topics is None or isinstance(topics, str):
            topic = topics if isinstance(topics, str) else None
            subject = self._subject_or_none(topic, writer)
            plan = self.plan(writer, subject)
            return [_Group(writer, key, rows, subject or "", plan, prefix)] if plan is not None else []
        arr = topics.take(pa.array(rows)) if len(rows) != len(topics) else topics
        enc = pc.dictionary_encode(arr).combine_chunks() if isinstance(arr, pa.ChunkedArray) else \
            pc.dictionary_encode(arr)
        idx = enc.indices.to_numpy(zero_copy_only=False)
        out = []
        for j, topic in enumerate(enc.dictionary.to_pylist()):
            sub = rows[idx == j]
            subject = self._subject_or_none(topic, writer)
            plan = self.plan(writer, subject)
            if plan is not None:
                out.append(_Group(writer, key, sub, subject or "", plan, prefix))
        return out

    def _subject_or_none(self, topic, writer) -> str | None:
        try:
            return self.rules.subject_of(topic, writer)
        except ConfigError:
            return None

    def plan(self, writer: Schema, subject: str | None) -> _Plan | None:
        key = (writer.id, writer.guid, writer.text if writer.id is None else None, subject)
        if key in self.plans:
            return self.plans[key]
        plan = self._plan(writer, subject)
        with self.lock:
            self.plans[key] = plan
        return plan

    def _plan(self, writer: Schema, subject: str | None) -> _Plan | None:
        r = self.rules
        target = r.reader if r.reader is not None else writer
        plan = _Plan(active_rules(writer, "ENCODING", "READ"), active_rules(target, "DOMAIN", "READ"), target)
        if r.reader is not None and subject and self._migrates(writer, r.reader, subject):
            plan.per_record = "migration rules between the writer's and the reader's versions"
        plan.per_record = plan.per_record or per_record_reason(plan.encoding, plan.domain)
        if not subject and (plan.per_record or plan.encoding or any(x.type == "ENCRYPT" for x in plan.domain)):
            # keys and migrations belong to a subject: without one these rules cannot run
            plan.no_subject = (f"schema id {writer.id or writer.guid} has data-contract rules whose keys or "
                               "versions belong to a subject, and the record's subject is unknown (from_registry: "
                               "pass subject= or topic=)")
        if not (plan.encoding or plan.domain or plan.per_record):
            return None
        if plan.per_record:
            log.info("data contracts: records of schema id %s (subject %s) run per record through "
                     "confluent-kafka: %s", writer.id or writer.guid, subject, plan.per_record)
        return plan

    def _migrates(self, writer: Schema, reader: Schema, subject: str) -> bool:
        if (writer.id is not None and writer.id == reader.id) or reader.version is None:
            return False
        client = client_for(self.rules.registry)
        try:
            wv = client.version_of(subject, writer)
        except Exception:  # noqa: BLE001 - a writer not registered under the subject: no migration path
            return False
        rv = int(reader.version)
        if wv == rv:
            return False
        mode = "UPGRADE" if wv < rv else "DOWNGRADE"
        lo, hi = sorted((wv, rv))
        for v in range(lo + 1, hi + 1):
            schema = reader if v == rv else writer if v == wv else client.get_version(subject, v)
            if active_rules(schema, "MIGRATION", mode):
                return True
        return False

    # -- vectorized steps ------------------------------------------------------------------------------
    def encoding(self, g: _Group, payloads: pa.Array, fails: RowFailures, headers) -> tuple[pa.Array, np.ndarray]:
        """Decrypt a group's payloads (ENCRYPT_PAYLOAD); returns (payloads, rows that failed)."""
        bad = np.zeros(len(g.rows), bool)
        for rule in g.plan.encoding:
            params = EncryptParams.of(rule, g.writer)
            skip = _replay_rows(headers, rule, g.rows)
            todo = ~skip & ~bad
            if not todo.any():
                continue
            payloads, failed, errs = self._decrypt(payloads, todo, params, g.subject, text=False)
            if len(failed):
                fails.fail(g.rows[failed], rule, list(errs), g.subject)
                if failure_action(rule, "READ") != "NONE":
                    bad[failed] = True
        return payloads, bad

    def domain(self, g: _Group, values: pa.Array, rows: np.ndarray, fails: RowFailures, headers) -> pa.Array:
        """Apply a group's domain rules to its decoded values (rows of the batch: ``rows``)."""
        if g.prefix:
            got = get_leaf(values, g.prefix)
            if got is None:
                raise NotVectorizable(f"no output field {'.'.join(g.prefix)}")
            inner = self.domain(dataclasses.replace(g, prefix=()), got[0], rows, fails, headers)
            return replace_leaf(values, g.prefix, inner)
        fmt, message = self.rules.fmt, self.rules.message
        target = g.plan.target
        for rule in g.plan.domain:
            skip = _replay_rows(headers, rule, rows)
            live = ~skip & _none(fails.errors[rows])
            if not live.any():
                continue
            if rule.type == "ENCRYPT":
                values = self._decrypt_fields(rule, values, rows, live, fails, target, g.subject)
                continue
            fail = functools.partial(_fail_rows, fails, rule, rows, g.subject)
            try:
                if rule.type == "CEL":
                    cel_condition(rule, values, live, target, fmt, message, fail)
                else:
                    values = cel_field(rule, values, live, target, fmt, message, fail)
            except NotVectorizable as e:
                raise NotVectorizable(f"{rule.type} rule {rule.name!r}: {e}") from e
        return values

    def _decrypt_fields(self, rule, values, rows, live, fails, target, subject) -> pa.Array:
        """Decrypt the string/bytes fields an ENCRYPT rule selects; others are left alone, as
        confluent-kafka's field decryption leaves them."""
        params = EncryptParams.of(rule, target)
        for f in encrypt_rule_columns(values, target, self.rules.fmt, self.rules.message, rule.tags, live):
            if not f.encryptable or not f.present.any():
                continue
            col, failed, errs = self._decrypt(f.col, f.present, params, subject, text=f.text)
            if len(failed):
                fails.fail(np.unique(rows[f.owner[failed]]), rule, f"field {f.leaf.full_name}: {errs[0]}", subject)
            values = replace_leaf(values, f.leaf.path, col)
        return values

    def _decrypt(self, col: pa.Array, use: np.ndarray, params, subject: str, *,
                 text: bool) -> tuple[pa.Array, np.ndarray, np.ndarray]:
        """``col`` with its items at ``use`` decrypted (those that fail keep their ciphertext: what
        onFailure NONE reads), the positions that failed and their errors."""
        sub = col.filter(pa.array(use))
        out, errs = decrypt_column(sub, functools.partial(self.rules.ring.reader, params, subject),
                                   rotated=params.rotated, text=text)
        idx = np.flatnonzero(use)
        failed = ~_none(errs)
        if failed.any():
            out = pc.if_else(pa.array(failed), sub, out)
        return put_rows(col, idx, out), idx[failed], errs[failed]

    # -- the per-record path -----------------------------------------------------------------------------
    def _serde(self):
        if self.serde is None:
            conf = {k: dict(v) if k == "use.latest.with.metadata" else v for k, v in self.rules.reader_conf}
            self.serde = self.rules.record_serde(conf)
        return self.serde

    def _form(self, schema: Schema):
        """``schema``'s records as objects (what re-encodes what the deserializer gives)."""
        key = (schema.id, schema.guid, schema.text)
        form = self.forms.get(key)
        if form is None:
            form = self.forms[key] = record_form(self.rules.fmt, schema, self.rules.message)
        return form

    def per_record(self, work, parsed, raw, topics, headers, decoder, lookup, fails):
        """Run groups through confluent-kafka's deserializer; yields (rows, values, decode errors)."""
        serde = self._serde()
        hdrs = _header_lists(headers)
        payload = parsed.payload
        for g, rows, why in work:
            out_schema = self.rules.reader if self.rules.reader is not None else g.writer
            form = self._form(out_schema)
            new: list[bytes | None] = []
            for row in rows.tolist():
                data = _confluent_frame(parsed, row, g.writer, payload)
                obj, err, dlq_rule = serde.deserialize(data, topics[row] or "", g.subject,
                                                       hdrs[row] if hdrs is not None else None, form)
                if err is not None:
                    if dlq_rule is not None:
                        fails.fail(np.array([row]), _rule_of(dlq_rule), err, g.subject)
                    else:
                        fails.error(np.array([row]), f"data contract failed per record ({why}): {err}")
                    new.append(None)
                    continue
                try:
                    new.append(form.to_bytes(obj))
                except Exception as e:  # noqa: BLE001 - an object the schema cannot hold: the row's error
                    fails.error(np.array([row]), f"data contract ({why}): re-encoding the result failed: {e}")
                    new.append(None)
            sub = _frames_of(parsed, rows, pa.array(new, pa.binary()), out_schema)
            res = decoder.decode(sub, lookup)
            yield rows, res.values, res.errors.to_numpy(zero_copy_only=False)


_STATES = ProcessCache()


# -- helpers -----------------------------------------------------------------------------------------
def _prefix(decoder, writer: Schema, parsed, rows: np.ndarray) -> tuple[str, ...]:
    """The output field a writer's records fill when the read decodes several documented messages."""
    if not hasattr(decoder, "field_for"):
        return ()
    path: tuple = ()
    if parsed.message_indexes is not None and len(rows):
        path = tuple(parsed.message_indexes[int(rows[0])].as_py() or [0])
    try:
        field = decoder.field_for(writer, path)
    except Exception:  # noqa: BLE001 - a writer the decoder cannot name fails its rows there
        return ()
    return (field,) if field else ()


def _rule_of(crule):
    """Our :class:`registry.Rule` for a confluent-kafka rule (the one whose DLQ action ran)."""
    from registry import Rule

    return Rule.from_json(crule.to_dict())


def _none(arr: np.ndarray) -> np.ndarray:
    return np.equal(arr, np.array(None, object)).astype(bool)


def _fail_rows(fails: RowFailures, rule, rows: np.ndarray, subject: str, idx: np.ndarray, text: str) -> None:
    """A domain step's failed values (positions ``idx`` among the group's ``rows``) as row failures."""
    fails.fail(rows[idx], rule, text, subject)


def _scatter(values: pa.Array, parts: list[tuple[np.ndarray, pa.Array]]) -> pa.Array:
    for rows, new in parts:
        values = put_rows(values, rows, new)
    return values


def _patched(parsed, patches, skip: np.ndarray):
    """The frames the decoder sees: decrypted payloads, and rows it must not decode marked as errors."""
    if not patches and not skip.any():
        return parsed
    payload = parsed.payload
    for rows, new in patches:
        payload = put_rows(payload, rows, new)
    error = parsed.error
    if skip.any():
        error = error.copy()
        error[skip] = ErrorCode.NULL_VALUE  # decoded elsewhere, or already failed
    return dataclasses.replace(parsed, payload=payload, error=error)


def _frames_of(parsed, rows: np.ndarray, payloads: pa.Array, schema: Schema):
    """Frames of ``rows`` holding ``payloads`` written with ``schema`` (its id replaces the writer's)."""
    take = pa.array(rows)
    n = len(rows)
    framing = parsed.framing[rows]
    nulls = np.asarray(payloads.is_null().to_numpy(zero_copy_only=False), bool)
    error = np.where(nulls, np.uint8(ErrorCode.NULL_VALUE), np.uint8(0)).astype(parsed.error.dtype)
    int_id = pa.array(np.full(n, schema.id if schema.id is not None else 0, np.int64),
                      mask=np.full(n, schema.id is None))
    if schema.guid:
        import uuid as _uuid

        guid = pa.array([_uuid.UUID(schema.guid).bytes] * n, pa.binary(16))
    else:
        guid = pa.nulls(n, pa.binary(16))
    mi = parsed.message_indexes.take(take) if parsed.message_indexes is not None else None
    return dataclasses.replace(parsed, payload=payloads, error=error, framing=framing, int_id=int_id, guid=guid,
                               message_indexes=mi)


def _confluent_frame(parsed, row: int, writer: Schema, payload: pa.Array) -> bytes:
    """The record as confluent-kafka's deserializer reads it: Confluent framing of the writer's id
    (GUID when it has no integer id), Protobuf message indexes, the payload."""
    body = payload[row].as_py() or b""
    if parsed.message_indexes is not None:
        idx = parsed.message_indexes[row].as_py() or [0]
        body = encode_protobuf_indexes(idx) + body
    if writer.id is not None:
        return encode_frame(Framing.CONFLUENT, int(writer.id), body)
    return encode_frame(Framing.CONFLUENT_GUID, str(writer.guid), body)


def _replay_rows(headers, rule, rows: np.ndarray) -> np.ndarray:
    mask = replayed(headers, 0 if headers is None else len(headers), getattr(rule, "name", ""))
    return mask[rows] if mask is not None else np.zeros(len(rows), bool)


def _as_list(topics, n: int) -> list:
    if topics is None or isinstance(topics, str):
        return [topics] * n
    return (topics.combine_chunks() if isinstance(topics, pa.ChunkedArray) else topics).to_pylist()


def _as_bytes_list(keys, n: int) -> list | None:
    if keys is None:
        return None
    keys = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
    if not pa.types.is_binary(keys.type):
        keys = keys.cast(pa.binary())
    return keys.to_pylist()


def _header_lists(headers) -> list | None:
    if headers is None:
        return None
    headers = headers.combine_chunks() if isinstance(headers, pa.ChunkedArray) else headers
    return [[(h["key"], h["value"]) for h in r] if r else [] for r in headers.to_pylist()]
