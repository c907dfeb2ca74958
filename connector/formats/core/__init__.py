"""What every payload format shares: options, results and errors, Arrow helpers, row errors,
the per-process cache of compiled schemas, and the contract a format package fulfils.

Nothing here knows a format; ``connector.formats.avro`` / ``protobuf`` / ``json_schema`` build
on it, and the generic ``Decoder``/``Encoder`` in :mod:`connector.formats` drive them.

Examples
--------
>>> from connector.formats.core import Mode, EvolutionMode
>>> Mode.parse("permissive"), EvolutionMode.parse("RESCUE")
(<Mode.PERMISSIVE: 'PERMISSIVE'>, <EvolutionMode.RESCUE: 'rescue'>)
"""
from connector.formats.core._arrow import payload_view, to_arrow_checked
from connector.formats.core._colbuf import (
    ColumnBuffers,
    ColumnTree,
    null_fills,
    struct_array,
    validity_bitmap,
)
from connector.formats.core._coerce import ValueFitError, coerce
from connector.errors import EncodeError, SchemaEvolutionError
from connector.formats.core._encode_options import EncodeOptions, EncodeResult, note_fallback
from connector.formats.core._enum import OptionEnum
from connector.formats.core._evolution import (
    RESCUED_COLUMN,
    EvolutionMode,
    new_fields,
    rescue_json,
)
from connector.formats.core._jit import load_cached, njit
from connector.formats.core._json_text import JSON_ESCAPES, JSON_UNESCAPES
from connector.formats.core._format import (
    EncoderModel,
    PayloadFormat,
    ReaderModel,
    Samples,
    document_json,
    refs_of,
    refs_texts,
)
from connector.formats.core._leaves import BYTES, MAX_WALK_DEPTH, PRIMITIVE, STRING, Leaf
from connector.formats.core._options import DecodeOptions, DecodeResult, EnumRepr, Mode
from connector.formats.core._process import ProcessCache, SchemaBound
from connector.formats.core._records import plain_json, transform_plain
from connector.formats.core._samples import SAMPLE_BASE_TIME, SAMPLE_MAX_DEPTH
from connector.formats.core._rows import (
    RowBook,
    fault_text,
    label_of,
    payloads_of,
    raise_unless_records_fault,
    row_groups,
    scatter,
)
from connector.formats.core._vec import (
    RowErrors,
    binary_from_buffers,
    prepend,
    valid_mask,
    with_validity,
)

__all__ = [
    # options, results, errors
    "Mode", "EnumRepr", "EvolutionMode", "OptionEnum", "DecodeOptions", "DecodeResult", "EncodeOptions",
    "EncodeResult", "EncodeError", "SchemaEvolutionError", "ValueFitError", "RESCUED_COLUMN", "note_fallback",
    # the format contract and the per-process cache
    "PayloadFormat", "ReaderModel", "EncoderModel", "refs_of", "refs_texts", "ProcessCache", "SchemaBound",
    # what documents, data-contract rules and the sandbox ask of a format
    "document_json", "Leaf", "STRING", "BYTES", "PRIMITIVE", "MAX_WALK_DEPTH", "transform_plain", "plain_json", "Samples", "SAMPLE_BASE_TIME", "SAMPLE_MAX_DEPTH",
    # decoding: Arrow helpers, row errors, schema evolution
    "payload_view", "to_arrow_checked", "ColumnBuffers", "ColumnTree", "null_fills", "struct_array", "validity_bitmap", "RowBook", "fault_text", "label_of", "payloads_of",
    "raise_unless_records_fault", "row_groups", "scatter", "new_fields", "rescue_json",
    # encoding: Arrow casting and vectorized byte building
    "coerce", "RowErrors", "binary_from_buffers", "prepend", "valid_mask", "with_validity",
    # compiled kernels: numba's njit, cached on disk where it can be; loaded ahead for forks
    "njit", "load_cached",
    # JSON text in compiled kernels: one escape table each way
    "JSON_ESCAPES", "JSON_UNESCAPES",
]
