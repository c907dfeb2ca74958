"""Byte layouts of schema-registry framings, parsed vectorized over Arrow arrays.

Imports only the standard library, numpy and pyarrow.
"""
from wireformat._errors import AsyncApiKafkaError, LimitExceededError, WireFormatError

__all__ = ["AsyncApiKafkaError", "WireFormatError", "LimitExceededError"]
