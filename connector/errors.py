"""Every error type the connector raises, in one importable place.

The hierarchy has one root, :class:`AsyncApiKafkaError` (defined in :mod:`wireformat`, the lowest
layer); subclasses are split by cause so callers can catch exactly what they can handle. The
registry's and the wire format's own errors are defined in those packages and re-exported here.
"""
from __future__ import annotations

from registry import errors as _registry_errors
from registry.errors import *  # noqa: F403 - the registry's errors, as registry.errors lists them
from wireformat import AsyncApiKafkaError, LimitExceededError, WireFormatError

__all__ = [
    "AsyncApiKafkaError",
    "WireFormatError",
    "LimitExceededError",
    "ConfigError",
    "AsyncApiDocumentError",
    "DecodeError",
    "SchemaMappingError",
    "SchemaCompileError",
    "PatternBudgetError",
    "SchemaEvolutionError",
    "EncodeError",
    "KafkaReadError",
    "DataLossError",
    "KafkaWriteError",
    "DeliveryError",
    "TransactionError",
    "MessageTooLargeError",
    "HeaderNameError",
    "TopicCreationError",
]
__all__ += _registry_errors.__all__


class ConfigError(AsyncApiKafkaError, ValueError):
    """An option or setting is invalid. Raised on the driver, before any task starts."""


class AsyncApiDocumentError(AsyncApiKafkaError, ValueError):
    """An AsyncAPI document is malformed or unsupported.

    Attributes
    ----------
    path : str or None
        Dotted document path of the offending node, e.g.
        ``channels.userSignedUp.bindings.kafka.partitions``.
    """

    def __init__(self, message: str, *, path: str | None = None):
        from registry import redact_text

        # Messages quote $ref URLs and server addresses as written: never their userinfo.
        full = redact_text(f"{message} (at {path})" if path else message)
        super().__init__(full)
        self.path = path


class SchemaMappingError(AsyncApiKafkaError, ValueError):
    """A schema cannot be mapped to Spark/Arrow types (e.g. unbounded recursion)."""


class SchemaCompileError(SchemaMappingError):
    """A schema the connector cannot compile or validate with: a ``pattern`` that is not a
    regular expression, a ``$ref`` that resolves nowhere, a reader schema that no longer maps.

    Misconfiguration: it fails the job in every mode (PERMISSIVE included), on the driver when the
    schema is loaded or in the task that meets it, and is never turned into row errors.
    """


class PatternBudgetError(AsyncApiKafkaError):
    """The check of one string against a schema ``pattern`` ran out of its budget (the pattern
    needs a backtracking engine and the string makes it backtrack). A row error: the record is
    neither passed nor failed silently.

    Attributes
    ----------
    pattern : str
        The pattern, as the schema writes it.
    value : str
        The string that was checked.
    keyword : str
        The keyword whose check it was (``pattern``, ``patternProperties``, ...).
    """

    def __init__(self, pattern: str, value: str = "", keyword: str = "pattern"):
        self.pattern, self.value, self.keyword = pattern, value, keyword
        shown = value if len(value) <= 40 else value[:37] + "..."
        super().__init__(f"the pattern check ran out of budget: {shown!r} against {pattern!r} (a pattern that "
                         "backtracks on this string; patterns without lookaround or backreferences run in linear time)")


class DecodeError(AsyncApiKafkaError):
    """A record's payload could not be decoded (FAILFAST mode).

    Attributes
    ----------
    topic, partition, offset : optional
        Coordinates of the record, when known.
    schema_id : optional
        The writer schema id the record carried.
    """

    def __init__(self, message: str, *, topic: str | None = None, partition: int | None = None,
                 offset: int | None = None, schema_id: object = None):
        where = []
        if topic is not None:
            where.append(f"topic={topic}")
        if partition is not None:
            where.append(f"partition={partition}")
        if offset is not None:
            where.append(f"offset={offset}")
        if schema_id is not None:
            where.append(f"schemaId={schema_id}")
        super().__init__(f"{message} [{', '.join(where)}]" if where else message)
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.schema_id = schema_id


class KafkaReadError(AsyncApiKafkaError):
    """Kafka could not be read: broker unreachable, topic missing, fatal client error.

    The environment's fault: fails the job in every mode. Messages never carry userinfo.
    """

    fault = "environment"

    def __init__(self, message: str, *args):
        from registry import redact_text

        super().__init__(redact_text(message), *args)


class DataLossError(AsyncApiKafkaError):
    """Records that should have been read are gone, and ``failOnDataLoss`` is true.

    Attributes
    ----------
    condition : str
        Spark-style error condition, e.g. ``KAFKA_DATA_LOSS.START_OFFSET_RESET``.
    """

    def __init__(self, condition: str, message: str):
        super().__init__(f"[{condition}] {message} Some data may have been lost because they are "
                         "not available in Kafka any more; either the data was aged out by Kafka "
                         "or the topic may have been deleted before all the data in the topic was "
                         "processed. If you want your query to continue in such cases, set the "
                         "source option 'failOnDataLoss' to 'false'.")
        self.condition = condition


class KafkaWriteError(AsyncApiKafkaError):
    """Kafka could not be written: a record not delivered, a topic not created."""


class DeliveryError(KafkaWriteError):
    """One or more records were not delivered (broker gone, topic unknown, too large...).

    Attributes
    ----------
    failures : tuple of (topic, partition, error text)
        The first failed records (a sample; the message says how many failed).
    """

    def __init__(self, message: str, *, failures: tuple = ()):
        super().__init__(message)
        self.failures = failures


class TransactionError(KafkaWriteError):
    """An exactly-once write's Kafka transaction failed; nothing of it is visible to readers of
    committed data (it was aborted, or will be by the next attempt or the transaction timeout).

    Attributes
    ----------
    fenced : bool
        A newer attempt of the same task took over its transactional id (this attempt is a
        zombie: Spark's retry or a speculative copy writes instead).
    code : str
        librdkafka's error name (``PRODUCER_FENCED``, ``_FENCED``, ``OUT_OF_ORDER_SEQUENCE_NUMBER`` ...).
    """

    def __init__(self, message: str, *, code: str = "", fenced: bool = False):
        super().__init__(message)
        self.code = code
        self.fenced = fenced


class MessageTooLargeError(DeliveryError, ValueError):
    """A record is larger than the producer's ``message.max.bytes``; nothing of its batch was sent."""


class HeaderNameError(KafkaWriteError, ValueError):
    """A record header's name holds a NUL character, which librdkafka's produce API cannot carry
    (it takes header names NUL-terminated, so the name would be cut); nothing of its batch was sent."""


class TopicCreationError(KafkaWriteError):
    """``createTopics=true`` and CreateTopics failed for a missing topic (the broker's error named)."""


class EncodeError(AsyncApiKafkaError, ValueError):
    """The input cannot be encoded with the schema as a whole (a misconfiguration).

    Raised for structural mismatches found before any row is written: a field the schema
    needs is missing from the DataFrame, the DataFrame has fields the schema lacks, or a
    column's type cannot be cast to the schema's. Bad *values* in otherwise fitting columns
    are per-row errors in :class:`EncodeResult` instead.
    """


class SchemaEvolutionError(AsyncApiKafkaError):
    """A writer schema carries fields the reader lacks (``schemaEvolutionMode=failOnNewFields``).

    Attributes
    ----------
    schema_id : str
        The writer schema id.
    fields : tuple of str
        Dotted paths of the new fields.
    """

    def __init__(self, schema_id: str, fields: tuple[str, ...]):
        self.schema_id, self.fields = schema_id, tuple(fields)
        super().__init__(
            f"[SCHEMA_EVOLUTION.NEW_FIELDS] writer schema id {schema_id} has fields the reader schema "
            f"lacks: {', '.join(self.fields)}. Restart the query with a reader schema that has them "
            "(or use schemaEvolutionMode=rescue to keep them in _rescued_data)")
