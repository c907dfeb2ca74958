"""Server protocol + security scheme → non-secret librdkafka settings and the secrets to supply.

=====================  ==================  ===========================================
scheme ``type``        ``sasl.mechanism``  secrets the user must supply
=====================  ==================  ===========================================
(none)                 –                   –
``plain``,             ``PLAIN``           ``sasl.username``, ``sasl.password``
``userPassword``
``scramSha256``/``512``  ``SCRAM-SHA-256``/``512``  ``sasl.username``, ``sasl.password``
``gssapi``             ``GSSAPI``          ``sasl.kerberos.principal``, ``sasl.kerberos.keytab``
``oauth2``,            ``OAUTHBEARER``     ``sasl.oauthbearer.client.id``,
``openIdConnect``      (``oidc`` method)   ``sasl.oauthbearer.client.secret``
``X509``               – (TLS client cert) ``ssl.certificate.location``, ``ssl.key.location``
=====================  ==================  ===========================================

``security.protocol`` is ``PLAINTEXT``/``SASL_PLAINTEXT`` for protocol ``kafka`` and
``SSL``/``SASL_SSL`` for ``kafka-secure`` (``X509`` always means ``SSL``).

``x-<librdkafka property>`` keys on the security scheme, the server and its Kafka binding
(as the Adeo case study writes ``x-security.protocol: SASL_SSL``) override the derived
values, in that order of increasing precedence. Keys that carry secrets (passwords,
JAAS configs, keys, tokens) are never taken from a document, nor are settings that would
disable TLS verification, nor Java-client-only keys; they are reported in
``ignored_settings`` with the reason.
"""
from __future__ import annotations

from connector.errors import AsyncApiDocumentError

from connector.asyncapi._refs import join_path

_SASL = {
    "plain": ("PLAIN", ("sasl.username", "sasl.password")),
    "userpassword": ("PLAIN", ("sasl.username", "sasl.password")),
    "scramsha256": ("SCRAM-SHA-256", ("sasl.username", "sasl.password")),
    "scramsha512": ("SCRAM-SHA-512", ("sasl.username", "sasl.password")),
    "gssapi": ("GSSAPI", ("sasl.kerberos.principal", "sasl.kerberos.keytab")),
    "oauth2": ("OAUTHBEARER", ("sasl.oauthbearer.client.id", "sasl.oauthbearer.client.secret")),
    "openidconnect": ("OAUTHBEARER", ("sasl.oauthbearer.client.id", "sasl.oauthbearer.client.secret")),
}
_X509_SECRETS = ("ssl.certificate.location", "ssl.key.location")
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI", "OAUTHBEARER")

#: librdkafka client properties a document may set (non-secret, connection-shaping).
ALLOWED_EXTENSION_KEYS = frozenset({
    "security.protocol", "sasl.mechanism", "sasl.mechanisms", "ssl.endpoint.identification.algorithm",
    "ssl.ca.location", "sasl.kerberos.service.name", "sasl.oauthbearer.method",
    "sasl.oauthbearer.token.endpoint.url", "sasl.oauthbearer.scope", "sasl.oauthbearer.extensions",
    "client.dns.lookup", "broker.address.family", "client.rack", "isolation.level", "api.version.request",
    "socket.timeout.ms", "socket.keepalive.enable", "session.timeout.ms", "fetch.min.bytes",
    "fetch.max.bytes", "fetch.wait.max.ms", "max.partition.fetch.bytes", "fetch.message.max.bytes",
    "metadata.max.age.ms", "reconnect.backoff.ms", "reconnect.backoff.max.ms", "ssl.cipher.suites",
    "ssl.curves.list", "ssl.sigalgs.list", "ssl.providers",
})
_SECRET_MARKERS = ("password", "secret", "jaas", "keytab", ".pem", "key.location", "keystore", "username",
                   "credentials", "oauthbearer.client.id", "oauthbearer.config")


def _ext_settings(extensions: dict, path: str, settings: dict, ignored: list) -> None:
    for key, value in extensions.items():
        name = key[2:]
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, (int, float)):
            value = str(value)
        if not isinstance(value, str):
            continue  # descriptive extensions (e.g. a schema object), not a setting
        lname = name.lower()
        if any(m in lname for m in _SECRET_MARKERS):
            ignored.append((name, "secret: supply it in the reader options, never in the document"))
        elif lname not in ALLOWED_EXTENSION_KEYS:
            ignored.append((name, "not a librdkafka setting a document may set"))
        elif lname == "ssl.endpoint.identification.algorithm" and value.lower() == "none":
            ignored.append((name, "would disable TLS hostname verification"))
        else:
            if lname == "sasl.mechanisms":
                lname = "sasl.mechanism"
            if lname == "security.protocol":
                value = value.upper()
                if value not in SECURITY_PROTOCOLS:
                    raise AsyncApiDocumentError(f"{key} must be one of {', '.join(SECURITY_PROTOCOLS)}, "
                                                f"got {value!r}", path=join_path(path, key))
            if lname == "sasl.mechanism":
                value = value.upper()
                if value not in SASL_MECHANISMS:
                    raise AsyncApiDocumentError(f"{key} must be one of {', '.join(SASL_MECHANISMS)}, "
                                                f"got {value!r}", path=join_path(path, key))
            settings[lname] = value


def kafka_security(server) -> tuple[dict, tuple[str, ...], tuple[tuple[str, str], ...], str | None]:
    """Settings, required secrets, ignored settings and the scheme name used, for ``server``.

    When the server lists several security alternatives the first is used (pass the
    ``kafka.*`` options to the reader to choose otherwise).
    """
    secure = server.protocol == "kafka-secure"
    settings: dict[str, str] = {}
    secrets: list[str] = []
    ignored: list[tuple[str, str]] = []
    schemes = server.security[0] if server.security else ()
    sasl = tls_client = False
    for scheme in schemes:
        stype = scheme.type.lower()
        if stype in _SASL:
            if sasl:
                raise AsyncApiDocumentError("a server cannot require two SASL schemes at once", path=scheme.path)
            sasl = True
            mechanism, needed = _SASL[stype]
            settings["sasl.mechanism"] = mechanism
            secrets.extend(needed)
            if mechanism == "OAUTHBEARER":
                settings["sasl.oauthbearer.method"] = "oidc"
                flows = scheme.flows.get("clientCredentials") if isinstance(scheme.flows, dict) else None
                if isinstance(flows, dict) and isinstance(flows.get("tokenUrl"), str):
                    settings["sasl.oauthbearer.token.endpoint.url"] = flows["tokenUrl"]
                scopes = flows.get("availableScopes", flows.get("scopes")) if isinstance(flows, dict) else None
                if isinstance(scopes, dict) and scopes:
                    settings["sasl.oauthbearer.scope"] = " ".join(scopes)
        elif stype == "x509":
            tls_client = True
            secrets.extend(_X509_SECRETS)
        else:
            raise AsyncApiDocumentError(f"security scheme type {scheme.type!r} is not usable with Kafka "
                                        "(expected plain, scramSha256, scramSha512, gssapi, oauth2, "
                                        "openIdConnect or X509)", path=join_path(scheme.path, "type"))
    if sasl:
        settings["security.protocol"] = "SASL_SSL" if secure or tls_client else "SASL_PLAINTEXT"
    else:
        settings["security.protocol"] = "SSL" if secure or tls_client else "PLAINTEXT"
    for scheme in schemes:
        _ext_settings(scheme.extensions, scheme.path, settings, ignored)
    _ext_settings(server.extensions, server.path, settings, ignored)
    if server.kafka is not None:
        _ext_settings(server.kafka.extensions, join_path(server.path, "bindings.kafka"), settings, ignored)
    name = ",".join(s.name for s in schemes) or None
    return settings, tuple(dict.fromkeys(secrets)), tuple(ignored), name
