"""Shared fixtures of the reliability suite: hostile peers, closed ports, planted secrets.

The scenarios mirror Spark's Kafka source suites (``KafkaMicroBatchSourceSuite``,
``KafkaRelationSuite``, ``KafkaDontFailOnDataLossSuite``), confluent-kafka-python's schema
registry client tests and librdkafka's broker-failure tests; each test names the one it mirrors.
"""
from __future__ import annotations

import socket

import pytest

from registry import RegistryConfig
from registry._cache import clear_clients

#: Values planted in options; no log line, message, repr, plan or pickle may contain them.
REGISTRY_PASSWORD = "reg-pw-Zq81XvT3"
SASL_PASSWORD = "sasl-pw-Lm27QwE9"
AWS_SECRET = "aws-secret-Hb64RtY0"
PLANTED = (REGISTRY_PASSWORD, SASL_PASSWORD, AWS_SECRET)


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released: connect gets RST)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def plain_doc(bootstrap: str, topic: str) -> dict:
    """A document without registry or payload schema: values stay binary, framing none."""
    return {"asyncapi": "3.0.0", "info": {"title": "t", "version": "1"},
            "servers": {"k": {"host": bootstrap, "protocol": "kafka"}},
            "channels": {"c": {"address": topic, "messages": {"m": {"name": "M"}}}}}


def plain_setup(bootstrap: str, topic: str, **extra):
    """The driver's ``ReadSetup`` for :func:`plain_doc` with these options (channel ``c``)."""
    import json

    from connector.options._parse import parse_options
    from connector.spark._setup import build_setup

    opts = {"asyncapi": json.dumps(plain_doc(bootstrap, topic)), "channel": "c"}
    opts.update(extra)
    return build_setup(parse_options(opts))


def fast_registry_config(*urls: str, **kw) -> RegistryConfig:
    """A RegistryConfig with millisecond backoffs so retry scenarios stay fast."""
    kw.setdefault("retry_backoff_s", 0.001)
    kw.setdefault("retry_backoff_max_s", 0.005)
    kw.setdefault("connect_timeout_s", 1.0)
    kw.setdefault("request_timeout_s", 2.0)
    return RegistryConfig(urls=tuple(urls), **kw)


@pytest.fixture(autouse=True)
def _fresh_registry_clients():
    # client_for caches clients process-wide; a fault test must not reuse a healthy one.
    clear_clients()
    yield
    clear_clients()


def assert_no_secret(where: str, text: object, secrets=PLANTED) -> None:
    """Fail naming the place and the secret when ``text`` contains a planted value."""
    s = text if isinstance(text, str) else (text.decode("latin-1") if isinstance(text, bytes) else str(text))
    for secret in secrets:
        assert secret not in s, f"planted secret {secret!r} leaked into {where}"


class KillableProxy:
    """A loopback TCP forwarder whose :meth:`kill` drops the listener and every open
    connection at once: a peer host going away. (``RegistryServer.stop()`` closes only its
    listener; handler threads keep serving pooled keep-alive connections.)"""

    def __init__(self, upstream_port: int):
        import threading

        self._upstream = upstream_port
        self._lock = threading.Lock()
        self._socks: list[socket.socket] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._alive = True
        threading.Thread(target=self._accept, daemon=True, name="KillableProxy").start()

    def _track(self, s: socket.socket) -> None:
        with self._lock:
            self._socks.append(s)

    def _accept(self) -> None:
        import threading

        while self._alive:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self._upstream))
            except OSError:
                client.close()
                continue
            self._track(client)
            self._track(upstream)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def kill(self) -> None:
        self._alive = False
        try:
            # close() alone leaves a listener blocked in accept() accepting (Linux).
            self._listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._listener.close()
        with self._lock:
            socks, self._socks = self._socks, []
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
