"""TLS for the Admin API: the SSLContext built from a client properties file, and the name of a TLS failure.

kafka-python takes a ready `ssl_context`, so kops builds it from the stores (`kops.cluster.admin.stores`) in memory: the
CA certificates go in as data; the client's key and chain go through a private temporary file (mode 0600, the key
encrypted in it with a one-time password, removed as soon as OpenSSL has read it), since Python's ssl module
loads a certificate chain only from a file.

kafka-python meets a refused TLS handshake by logging it and retrying until its timeout, so a failed connection
reads "no broker answered". After such a failure `tls_problem` probes one bootstrap server with Python's ssl
module and the same context: a handshake, then one ApiVersions request (kafka-python's codec), and names what
went wrong: the broker's certificate not signed by a trusted CA, a hostname mismatch, the broker requiring a
client certificate, or refusing the one given. The probe runs only after a failure: a working connection pays
nothing for it.
"""

from __future__ import annotations

import os
import secrets
import socket
import ssl
import tempfile
from dataclasses import dataclass

from cryptography.hazmat.primitives import serialization

from kops.cluster.admin.stores import Identity, Properties, client_identity, trusted_certificates

TLS_PROTOCOLS = ("SSL", "SASL_SSL")
VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
HOSTNAME_MISMATCH = (62, 64)  # X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH
REFUSED = ("TLSV13_ALERT_CERTIFICATE_REQUIRED", "CERTIFICATE_REQUIRED", "UNKNOWN_CA", "BAD_CERTIFICATE",
           "CERTIFICATE_UNKNOWN", "ACCESS_DENIED", "HANDSHAKE_FAILURE", "DECRYPT_ERROR", "CERTIFICATE_EXPIRED")
NOT_TLS = ("WRONG_VERSION_NUMBER", "RECORD_LAYER", "PACKET_LENGTH", "UNEXPECTED_EOF")
UNSUPPORTED = {
    "ssl.cipher.suites": "Java's suite names do not carry over to OpenSSL; remove it (kops uses OpenSSL's defaults)",
    "ssl.engine.factory.class": "a Java class; remove it and give the stores with ssl.truststore.* and ssl.keystore.*",
}


@dataclass(frozen=True)
class TlsProblem:
    what: str
    hint: str


@dataclass(frozen=True)
class ClientTls:
    context: ssl.SSLContext
    sends_certificate: bool  # a keystore was given: the client presents a certificate when asked


def client_tls(values: dict[str, str], where: str | None) -> ClientTls | None:
    """The client's SSLContext, as Kafka's client would set up TLS from these properties; None without TLS."""
    props = Properties(values, where)
    if (props.get("security.protocol") or "PLAINTEXT").upper() not in TLS_PROTOCOLS:
        return None
    for key, why in UNSUPPORTED.items():
        if props.get(key) is not None:
            raise props.problem(f"{key} is not supported", hint=why)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version, context.maximum_version = _versions(props)
    context.check_hostname = props.values.get("ssl.endpoint.identification.algorithm", "https").strip() != ""
    trusted = trusted_certificates(props)
    if trusted is None:
        context.load_default_certs()
    else:
        context.load_verify_locations(cadata="".join(
            c.public_bytes(serialization.Encoding.PEM).decode() for c in trusted))
    identity = client_identity(props)
    if identity is not None:
        _load_identity(context, identity, props)
    return ClientTls(context, identity is not None)


def _versions(props: Properties) -> tuple[ssl.TLSVersion, ssl.TLSVersion]:
    """`ssl.enabled.protocols` (default TLSv1.2,TLSv1.3, as Kafka's) as the context's lowest and highest version."""
    named = [p.strip() for p in (props.get("ssl.enabled.protocols") or "TLSv1.2,TLSv1.3").split(",") if p.strip()]
    unknown = [p for p in named if p not in VERSIONS]
    if unknown or not named:
        raise props.problem(f"ssl.enabled.protocols={','.join(named)}: kops speaks TLSv1.2 and TLSv1.3",
                            hint="list TLSv1.2 and/or TLSv1.3")
    versions = sorted(VERSIONS[p] for p in named)
    return versions[0], versions[-1]


def _load_identity(context: ssl.SSLContext, identity: Identity, props: Properties) -> None:
    """The key and chain into the context through a private file, the key encrypted in it, removed at once."""
    one_time = secrets.token_hex(16).encode()
    key = identity.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                     serialization.BestAvailableEncryption(one_time))
    chain = b"".join(c.public_bytes(serialization.Encoding.PEM) for c in identity.chain)
    handle, path = tempfile.mkstemp(prefix="kops-client-", suffix=".pem")  # mode 0600
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(key + chain)
        context.load_cert_chain(path, password=one_time)
    except ssl.SSLError as exc:
        raise props.problem(f"the client key does not match its certificate ({exc.reason or exc})",
                            hint="the keystore's key and the first certificate of its chain must be a pair") from None
    finally:
        os.unlink(path)


def tls_problem(tls: ClientTls, servers: list[str], timeout: float = 5.0) -> TlsProblem | None:
    """What goes wrong with TLS at the first bootstrap server that takes a TCP connection; None if nothing
    does (TLS works, or no server could be reached at all)."""
    for server in servers:
        host, _, port = server.rpartition(":")
        try:
            raw = socket.create_connection((host.strip("[]"), int(port)), timeout=timeout)
        except (OSError, ValueError):
            continue
        try:
            return _probe(tls, raw, host.strip("[]"))
        finally:
            raw.close()
    return None


def _probe(tls: ClientTls, raw: socket.socket, host: str) -> TlsProblem | None:
    """A handshake, then one request: TLS 1.3 brokers refuse a client certificate only after the handshake,
    with an alert that arrives on the first read."""
    handshaken = False
    try:
        with tls.context.wrap_socket(raw, server_hostname=host) as wrapped:
            handshaken = True
            wrapped.sendall(_api_versions_request())
            if wrapped.recv(4):
                return None
    except ssl.SSLCertVerificationError as exc:
        return _verification(exc, host)
    except ssl.SSLError as exc:
        if handshaken or not (isinstance(exc, ssl.SSLEOFError) or any(n in str(exc.reason) for n in NOT_TLS)):
            return _refusal(exc, tls.sends_certificate)
        return TlsProblem("the server did not answer the TLS handshake (not a TLS listener?)",
                          "a PLAINTEXT or SASL_PLAINTEXT listener takes no TLS: check security.protocol and the "
                          "bootstrap servers")
    except OSError:
        return None  # a timeout or reset after a good handshake is not a TLS problem kops can name
    return _refusal(ssl.SSLEOFError("the broker closed the connection"), tls.sends_certificate)


def _api_versions_request() -> bytes:
    from kafka.protocol.metadata.api_versions import ApiVersionsRequest
    from kafka.protocol.parser import KafkaProtocol

    protocol = KafkaProtocol(client_id="kops")
    protocol.send_request(ApiVersionsRequest(version=0))
    return bytes(protocol.send_bytes())


def _verification(exc: ssl.SSLCertVerificationError, host: str) -> TlsProblem:
    if exc.verify_code in HOSTNAME_MISMATCH:
        return TlsProblem(f"hostname mismatch: the broker's certificate is not for {host}",
                          "connect by a name or address its certificate carries, or set "
                          "ssl.endpoint.identification.algorithm= (empty) to skip the check")
    return TlsProblem(f"certificate verification failed: {exc.verify_message}",
                      "the truststore (ssl.truststore.*) must hold the CA that signed the brokers' certificates")


def _refusal(exc: ssl.SSLError, sends_certificate: bool) -> TlsProblem:
    """The broker ended a handshake that got as far as the client's certificate (or the lack of one)."""
    reason = str(exc.reason or exc)
    if not sends_certificate:
        return TlsProblem(f"the broker requires a client certificate and none was given ({reason.lower()})",
                          "set ssl.keystore.location (PKCS12 or PEM), or ssl.keystore.certificate.chain and "
                          "ssl.keystore.key with ssl.keystore.type=PEM")
    if isinstance(exc, ssl.SSLEOFError) or any(name in reason for name in REFUSED):
        return TlsProblem(f"the broker refused the client certificate ({reason.lower()})",
                          "the brokers' truststore must hold the CA that signed the keystore's certificate")
    return TlsProblem(f"TLS handshake failed ({reason.lower()})", "check ssl.* in --command-config")
