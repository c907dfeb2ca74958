"""librdkafka's C API, the very library confluent-kafka loaded, for the hot loops.

confluent-kafka hands every record to Python as a ``Message`` object (about 1.2 µs each with
the accessor calls) and takes one Python call per produced record. The read and write paths
move whole batches between librdkafka and Arrow in compiled loops instead (numba, calling
librdkafka by symbol). This module is the one place that finds and declares that library:

- :func:`library_path`: the librdkafka confluent-kafka's extension module is linked against
  (read from the process's own memory map on Linux, else the wheel's bundled copy, else the
  system's), so both speak to one library of one version;
- :func:`api`: ``ctypes`` declarations for set-up calls made from Python (handles, configuration,
  assignment, queues, events), each declared once;
- :func:`jit_symbols`: makes the library's symbols resolvable by numba's linker, so compiled
  kernels call them as :func:`extern` functions and still cache to disk (ctypes function
  pointers would make numba refuse the cache);
- (addresses become ``void *`` in compiled code through ``connector.formats.core.kernels.voidptr``,
  the one intrinsic every kernel uses);
- :func:`new_handle`: a producer or consumer handle from settings, with configuration errors as
  :class:`~connector.errors.ConfigError` and secret values never echoed.

Layouts this module relies on are librdkafka's public, ABI-stable structs (``rd_kafka.h``):
``rd_kafka_message_t`` (:data:`MSG`) and ``rd_kafka_topic_partition_t`` (:data:`TP`), 64-bit
platforms only.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
import sys
import threading
from collections.abc import Mapping
from types import SimpleNamespace

from connector.errors import ConfigError
from connector.kafka._conf import is_secret_setting

__all__ = ["library_path", "api", "jit_symbols", "extern", "new_handle", "err_name",
           "err_text", "MSG", "TP", "RD_KAFKA_PRODUCER", "RD_KAFKA_CONSUMER"]

RD_KAFKA_PRODUCER = 0
RD_KAFKA_CONSUMER = 1

#: Byte offsets of ``rd_kafka_message_t`` fields (rd_kafka.h; stable since librdkafka 0.9):
#: ``err`` (int32), ``rkt``, ``partition`` (int32), ``payload``, ``len`` (size_t), ``key``,
#: ``key_len``, ``offset`` (int64), ``_private``.
MSG = SimpleNamespace(err=0, rkt=8, partition=16, payload=24, len=32, key=40, key_len=48,
                      offset=56, private=64, size=72)
#: Byte offsets of ``rd_kafka_topic_partition_t``: ``topic`` (char *), ``partition`` (int32),
#: ``offset`` (int64), ``metadata``, ``metadata_size``, ``opaque``, ``err`` (int32), ``_private``.
TP = SimpleNamespace(topic=0, partition=8, offset=16, metadata=24, metadata_size=32, opaque=40,
                     err=48, private=56, size=64)

_lock = threading.Lock()
_api: SimpleNamespace | None = None
_jit_loaded = False


def library_path() -> str:
    """Path of the librdkafka shared library confluent-kafka uses in this process.

    Raises
    ------
    ConfigError
        No librdkafka could be found (a confluent-kafka build this module does not know).
    """
    import confluent_kafka.cimpl  # loads librdkafka into the process

    if sys.platform.startswith("linux"):
        try:
            with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
                for line in f:
                    path = line.rstrip("\n").split(None, 5)[-1]
                    if "librdkafka" in os.path.basename(path) and os.path.exists(path):
                        return path
        except OSError:
            pass
    import confluent_kafka

    pkg = os.path.dirname(confluent_kafka.__file__)
    for pattern in (os.path.join(os.path.dirname(pkg), "confluent_kafka.libs", "librdkafka*"),
                    os.path.join(pkg, ".dylibs", "librdkafka*"),
                    os.path.join(pkg, "librdkafka*")):
        found = sorted(glob.glob(pattern))
        if found:
            return found[0]
    name = ctypes.util.find_library("rdkafka")
    if name:
        return name
    raise ConfigError("could not find the librdkafka library confluent-kafka uses (looked in the "
                      "process's loaded libraries, the confluent_kafka wheel and the system "
                      "paths); reinstall confluent-kafka from its wheel")


def _declare(lib: ctypes.CDLL) -> SimpleNamespace:
    vp, cp, i32 = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int32
    c_int, size, ssize = ctypes.c_int, ctypes.c_size_t, ctypes.c_ssize_t
    table: dict[str, tuple] = {
        # version, errors
        "rd_kafka_version": (c_int,),
        "rd_kafka_err2str": (cp, c_int),
        "rd_kafka_err2name": (cp, c_int),
        # configuration and handles
        "rd_kafka_conf_new": (vp,),
        "rd_kafka_conf_destroy": (None, vp),
        "rd_kafka_conf_set": (c_int, vp, cp, cp, cp, size),
        "rd_kafka_conf_set_events": (None, vp, c_int),
        "rd_kafka_new": (vp, c_int, vp, cp, size),
        "rd_kafka_destroy": (None, vp),
        "rd_kafka_destroy_flags": (None, vp, c_int),
        "rd_kafka_fatal_error": (c_int, vp, cp, size),
        # topic-partition lists
        "rd_kafka_topic_partition_list_new": (vp, c_int),
        "rd_kafka_topic_partition_list_add": (vp, vp, cp, i32),
        "rd_kafka_topic_partition_list_destroy": (None, vp),
        # consumer
        "rd_kafka_poll_set_consumer": (c_int, vp),
        "rd_kafka_assign": (c_int, vp, vp),
        "rd_kafka_incremental_assign": (vp, vp, vp),
        "rd_kafka_incremental_unassign": (vp, vp, vp),
        "rd_kafka_error_code": (c_int, vp),
        "rd_kafka_error_string": (cp, vp),
        "rd_kafka_error_destroy": (None, vp),
        "rd_kafka_consumer_close": (c_int, vp),
        "rd_kafka_query_watermark_offsets": (c_int, vp, cp, i32, vp, vp, c_int),
        "rd_kafka_get_watermark_offsets": (c_int, vp, cp, i32, vp, vp),
        # queues and events
        "rd_kafka_queue_get_consumer": (vp, vp),
        "rd_kafka_queue_get_main": (vp, vp),
        "rd_kafka_queue_get_partition": (vp, vp, cp, i32),
        "rd_kafka_queue_forward": (None, vp, vp),
        "rd_kafka_queue_destroy": (None, vp),
        "rd_kafka_consume_batch_queue": (ssize, vp, c_int, vp, size),
        "rd_kafka_queue_poll": (vp, vp, c_int),
        "rd_kafka_event_type": (c_int, vp),
        "rd_kafka_event_error": (c_int, vp),
        "rd_kafka_event_error_string": (cp, vp),
        "rd_kafka_event_error_is_fatal": (c_int, vp),
        "rd_kafka_event_message_next": (vp, vp),
        "rd_kafka_event_message_count": (size, vp),
        "rd_kafka_event_log": (c_int, vp, ctypes.POINTER(cp), ctypes.POINTER(cp), ctypes.POINTER(c_int)),
        "rd_kafka_event_destroy": (None, vp),
        "rd_kafka_message_destroy": (None, vp),
        "rd_kafka_topic_name": (cp, vp),
        # native consumer (connector.kafka._native): logs, errors, metadata
        "rd_kafka_name": (cp, vp),
        "rd_kafka_queue_new": (vp, vp),
        "rd_kafka_set_log_queue": (c_int, vp, vp),
        "rd_kafka_message_errstr": (cp, vp),
        "rd_kafka_topic_new": (vp, vp, cp, vp),
        "rd_kafka_topic_destroy": (None, vp),
        "rd_kafka_metadata": (c_int, vp, c_int, vp, ctypes.POINTER(vp), c_int),
        "rd_kafka_metadata_destroy": (None, vp),
        # producer
        "rd_kafka_produceva": (vp, vp, vp, size),
        "rd_kafka_event_message_array": (size, vp, vp, size),
        "rd_kafka_message_headers": (c_int, vp, ctypes.POINTER(vp)),
        "rd_kafka_message_timestamp": (ctypes.c_int64, vp, ctypes.POINTER(c_int)),
        "rd_kafka_header_cnt": (size, vp),
        "rd_kafka_header_get_all": (c_int, vp, size, ctypes.POINTER(cp), ctypes.POINTER(vp), ctypes.POINTER(size)),
        # transactions
        "rd_kafka_init_transactions": (vp, vp, c_int),
        "rd_kafka_begin_transaction": (vp, vp),
        "rd_kafka_send_offsets_to_transaction": (vp, vp, vp, vp, c_int),
        "rd_kafka_commit_transaction": (vp, vp, c_int),
        "rd_kafka_abort_transaction": (vp, vp, c_int),
        "rd_kafka_consumer_group_metadata_new": (vp, cp),
        "rd_kafka_consumer_group_metadata_destroy": (None, vp),
        "rd_kafka_error_is_fatal": (c_int, vp),
        "rd_kafka_error_is_retriable": (c_int, vp),
        "rd_kafka_error_txn_requires_abort": (c_int, vp),
        "rd_kafka_committed": (c_int, vp, vp, c_int),
        "rd_kafka_flush": (c_int, vp, c_int),
        "rd_kafka_purge": (c_int, vp, c_int),
        "rd_kafka_outq_len": (c_int, vp),
        "rd_kafka_poll": (c_int, vp, c_int),
    }
    ns = SimpleNamespace(lib=lib)
    for name, (res, *args) in table.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = list(args)
        setattr(ns, name[len("rd_kafka_"):], fn)
    return ns


def api() -> SimpleNamespace:
    """The library's set-up calls, by name without the ``rd_kafka_`` prefix (``api().new``)."""
    global _api
    with _lock:
        if _api is None:
            if ctypes.sizeof(ctypes.c_void_p) != 8:
                raise ConfigError("the native Kafka path needs a 64-bit Python")
            _api = _declare(ctypes.CDLL(library_path()))
        return _api


def jit_symbols() -> None:
    """Make librdkafka's symbols resolvable by numba's linker (once per process)."""
    global _jit_loaded
    with _lock:
        if not _jit_loaded:
            import llvmlite.binding as llvm

            llvm.load_library_permanently(library_path())
            _jit_loaded = True


def extern(name: str, signature):
    """A librdkafka function for compiled code: ``extern("rd_kafka_message_timestamp",
    types.int64(types.voidptr, types.voidptr))``. Call :func:`jit_symbols` before compiling."""
    from numba import types

    jit_symbols()
    return types.ExternalFunction(name, signature)


def err_name(code: int) -> str:
    """librdkafka's name of an error code (``_PARTITION_EOF``, ``NOT_LEADER_OR_FOLLOWER``)."""
    return (api().err2name(code) or b"").decode("utf-8", "replace")


def err_text(code: int) -> str:
    """librdkafka's description of an error code."""
    return (api().err2str(code) or b"").decode("utf-8", "replace")


def new_handle(kind: int, conf: Mapping[str, object], *, events: int = 0) -> int:
    """A producer (:data:`RD_KAFKA_PRODUCER`) or consumer handle from librdkafka settings.

    ``events`` enables the event API for those event types (``rd_kafka_conf_set_events``), so
    delivery reports, errors and logs are read from a queue, never by callbacks into Python
    from librdkafka's threads.

    Raises
    ------
    ConfigError
        A setting librdkafka refuses (unknown name, bad value); a secret value is never quoted.
    """
    lib = api()
    buf = ctypes.create_string_buffer(512)
    c = lib.conf_new()
    try:
        for k, v in conf.items():
            sv = "true" if v is True else "false" if v is False else str(v)
            if lib.conf_set(c, str(k).encode(), sv.encode(), buf, len(buf)) != 0:
                raise ConfigError(f"invalid Kafka setting {k!r}: {_redact(buf.value, conf)}")
        if events:
            lib.conf_set_events(c, events)
        rk = lib.new(kind, c, buf, len(buf))
    except BaseException:
        lib.conf_destroy(c)
        raise
    if not rk:  # on failure the configuration is still ours
        lib.conf_destroy(c)
        raise ConfigError(f"invalid Kafka configuration: {_redact(buf.value, conf)}")
    return int(rk)


def _redact(raw: bytes, conf: Mapping[str, object]) -> str:
    text = raw.decode("utf-8", "replace")
    for k, v in conf.items():  # librdkafka may quote a value back: never a secret one
        if is_secret_setting(str(k)) and v and str(v) in text:
            text = text.replace(str(v), "***")
    return text
