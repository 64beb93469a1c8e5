"""The TLS material of a Kafka client properties file, read as Kafka's Java clients read it: a truststore and a
keystore, each PKCS12, JKS or PEM (`ssl.*.type`), from a file (`ssl.*.location`) or, for PEM, inline in the
properties (KIP-651: `ssl.truststore.certificates`, `ssl.keystore.certificate.chain` + `ssl.keystore.key`).

Java's default store type is JKS, but keytool has written PKCS12 since Java 9 unless told `-storetype JKS`, and
Java reads a store by its content whatever type is declared; so does kops: a PKCS12 file declared JKS is read,
and so is a PEM file given without a type.
A true JKS (or JCEKS) file is refused in one line that gives the keytool command converting it: the one Python
reader of JKS (pyjks) has had no release since 2020 and would bring four more dependencies, one of them compiled.

Every problem is a UsageError naming the property and the file; no message carries a password or a key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes
from cryptography.hazmat.primitives.serialization import pkcs12

from kops.errors import UsageError

JKS, PKCS12, PEM = "JKS", "PKCS12", "PEM"
STORE_TYPES = (JKS, PKCS12, PEM)
JAVA_MAGIC = {b"\xfe\xed\xfe\xed": "JKS", b"\xce\xce\xce\xce": "JCEKS"}
PEM_BLOCK = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END \1-----", re.S)


@dataclass(frozen=True)
class Identity:
    """The client's certificate chain (leaf first) and its private key: what a broker with ssl.client.auth checks."""

    chain: tuple[x509.Certificate, ...]
    key: PrivateKeyTypes


@dataclass(frozen=True)
class Properties:
    """The properties and where they came from (for the one line of an error)."""

    values: dict[str, str]
    where: str | None

    def get(self, key: str) -> str | None:
        value = self.values.get(key)
        return value if value not in (None, "") else None

    def problem(self, what: str, hint: str | None = None) -> UsageError:
        return UsageError(what, where=self.where, hint=hint)


def store_type(props: Properties, store: str) -> str:
    """`ssl.<store>.type`, JKS when absent (Kafka's default); an unknown type is refused."""
    declared = (props.get(f"ssl.{store}.type") or JKS).upper()
    if declared not in STORE_TYPES:
        raise props.problem(f"ssl.{store}.type={declared} is not a store type kops reads",
                            hint="kops reads PKCS12, PEM and keytool's PKCS12 output; convert with keytool "
                                 "-importkeystore ... -deststoretype PKCS12")
    return declared


def trusted_certificates(props: Properties) -> list[x509.Certificate] | None:
    """The CA certificates of the truststore; None when none is configured (the system's CAs are trusted)."""
    kind, location, inline = store_type(props, "truststore"), props.get("ssl.truststore.location"), \
        props.get("ssl.truststore.certificates")
    if inline is not None:
        _require_pem(props, "truststore", kind, "ssl.truststore.certificates", location)
        return _certificates(props, pem_text(inline), "ssl.truststore.certificates")
    if location is None:
        return None
    data = _read(props, location, "ssl.truststore.location")
    if kind == PEM or _looks_pem(data):
        return _certificates(props, data.decode("ascii", "replace"), location)
    _, leaf, others = _pkcs12(props, data, location, "truststore")
    found = ([leaf] if leaf is not None else []) + list(others)
    if not found:
        raise props.problem(f"the truststore {location} holds no certificate",
                            hint="import the CA that signed the brokers' certificates into it")
    return found


def client_identity(props: Properties) -> Identity | None:
    """The keystore's certificate chain and key; None when none is configured (no client certificate is sent)."""
    kind, location = store_type(props, "keystore"), props.get("ssl.keystore.location")
    chain_text, key_text = props.get("ssl.keystore.certificate.chain"), props.get("ssl.keystore.key")
    if chain_text is not None or key_text is not None:
        _require_pem(props, "keystore", kind, "ssl.keystore.certificate.chain", location)
        if chain_text is None or key_text is None:
            raise props.problem("ssl.keystore.certificate.chain and ssl.keystore.key go together",
                                hint="give both (PEM), or neither")
        chain = _certificates(props, pem_text(chain_text), "ssl.keystore.certificate.chain")
        return Identity(tuple(chain), _private_key(props, pem_text(key_text), "ssl.keystore.key"))
    if location is None:
        return None
    data = _read(props, location, "ssl.keystore.location")
    # Kafka's PEM keystore file: the private key and the certificate chain in one file
    if kind == PEM or _looks_pem(data):
        text = data.decode("ascii", "replace")
        return Identity(tuple(_certificates(props, text, location)), _private_key(props, text, location))
    key, leaf, others = _pkcs12(props, data, location, "keystore")
    if key is None or leaf is None:
        raise props.problem(f"the keystore {location} holds no private key with its certificate",
                            hint="a client keystore needs the client's key entry (keytool -importkeystore)")
    return Identity((leaf, *others), key)


def _require_pem(props: Properties, store: str, kind: str, inline: str, location: str | None) -> None:
    if kind != PEM:
        raise props.problem(f"{inline} needs ssl.{store}.type=PEM", hint=f"set ssl.{store}.type=PEM (KIP-651)")
    if location is not None:
        raise props.problem(f"ssl.{store}.location and {inline} are both set",
                            hint="keep one: the file or the inline PEM")


def _read(props: Properties, location: str, key: str) -> bytes:
    try:
        return Path(location).read_bytes()
    except OSError as exc:
        raise props.problem(f"cannot read {key} {location}: {exc.strerror}") from None


def _looks_pem(data: bytes) -> bool:
    """A PEM file whatever type was declared (kops read PEM files before it read stores, without ssl.*.type)."""
    return data.lstrip()[:10] == b"-----BEGIN"


def _pkcs12(props: Properties, data: bytes, location: str, store: str) -> tuple[
        PrivateKeyTypes | None, x509.Certificate | None, list[x509.Certificate]]:
    """A PKCS12 file's key, certificate and other certificates; a JKS/JCEKS file refused with the keytool line."""
    java = JAVA_MAGIC.get(data[:4])
    if java is not None:
        raise props.problem(
            f"the {store} {location} is a {java} store, which kops does not read",
            hint=f"convert it to PKCS12: keytool -importkeystore -srckeystore {location} -srcstoretype {java} "
                 f"-destkeystore {Path(location).with_suffix('.p12')} -deststoretype PKCS12, then set "
                 f"ssl.{store}.location to the .p12 file and ssl.{store}.type=PKCS12")
    if data[:1] != b"\x30":  # every PKCS12 file is a DER SEQUENCE
        raise props.problem(f"the {store} {location} is not a PKCS12 store",
                            hint=f"ssl.{store}.type says how to read it: PKCS12, or PEM for a PEM file")
    password = props.get(f"ssl.{store}.password")
    try:
        key, leaf, others = pkcs12.load_key_and_certificates(data, password.encode() if password else None)
    except ValueError:
        said = "wrong" if password else "no"
        raise props.problem(f"cannot open the {store} {location}: {said} ssl.{store}.password (or a damaged store)",
                            hint=f"ssl.{store}.password must be the password the store was written with") from None
    return key, leaf, list(others)


def pem_text(value: str) -> str:
    """PEM blocks of an inline property as PEM text: a properties value has lost its line breaks (backslash
    continuations join lines; `\\n` may stand for them), so each block's base64 is laid out again."""
    value = value.replace("\\n", "\n")
    blocks = []
    for label, body in PEM_BLOCK.findall(value):
        base64 = "".join(body.split())
        lines = [base64[i:i + 64] for i in range(0, len(base64), 64)]
        blocks.append("\n".join([f"-----BEGIN {label}-----", *lines, f"-----END {label}-----", ""]))
    return "".join(blocks)


def _certificates(props: Properties, text: str, source: str) -> list[x509.Certificate]:
    try:
        found = x509.load_pem_x509_certificates(text.encode())
    except ValueError:
        found = []
    if not found:
        raise props.problem(f"{source} holds no PEM certificate",
                            hint="PEM blocks: -----BEGIN CERTIFICATE----- ... -----END CERTIFICATE-----")
    return found


def _private_key(props: Properties, text: str, source: str) -> PrivateKeyTypes:
    """The PEM private key (PKCS#8, encrypted with ssl.key.password or not) in `text`."""
    blocks = [b for b in PEM_BLOCK.finditer(text) if b.group(1).endswith("PRIVATE KEY")]
    if not blocks:
        raise props.problem(f"{source} holds no PEM private key",
                            hint="PEM: -----BEGIN PRIVATE KEY----- or -----BEGIN ENCRYPTED PRIVATE KEY-----")
    password = props.get("ssl.key.password")
    encrypted = "ENCRYPTED" in blocks[0].group(1) or "Proc-Type: 4,ENCRYPTED" in blocks[0].group(2)
    if encrypted and password is None:
        raise props.problem(f"the private key in {source} is encrypted", hint="set ssl.key.password")
    try:
        return serialization.load_pem_private_key(blocks[0].group(0).encode(),
                                                  password.encode() if encrypted and password else None)
    except (ValueError, TypeError):
        raise props.problem(f"cannot read the private key in {source}: "
                            + ("wrong ssl.key.password" if encrypted else "not a PEM private key kops can read"),
                            hint="the key's password is ssl.key.password" if encrypted else
                            "PKCS#8 PEM, as Kafka's PEM keystores take") from None
