"""Certificates for a TLS lab, made in Python (`cryptography`): a lab CA, the brokers' certificate, and a client's,
in the forms Kafka clients are given (PEM files, PKCS12 stores). For a lab on loopback and for tests only: keys
are small-lived, passwords are the lab's constants.

The brokers' certificate names only the address 127.0.0.1 (no DNS name), so a client that checks hostnames and
connects to `localhost` sees a real hostname mismatch.

`<dir>/tls/` after `write_lab_tls`:
- ca.pem: the lab CA (the brokers' truststore, and the client's in PEM form);
- broker.pem: the brokers' key and certificate (their PEM keystore);
- client.pem, client.key: the client's certificate and key (PEM); client.p12: both in a PKCS12 keystore;
- truststore.p12: the CA in a PKCS12 truststore.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kops.lab.kafka_config import SCRAM_PASSWORD, SCRAM_USER

STORE_PASSWORD = "kops-lab-store"  # the lab's PKCS12 stores: a lab on loopback, not a secret
VALID_FOR = datetime.timedelta(days=30)


@dataclass(frozen=True)
class Issued:
    """A key and its certificate, and the certificate that signed it (itself for a CA)."""

    key: ec.EllipticCurvePrivateKey
    certificate: x509.Certificate
    issuer: x509.Certificate


@dataclass(frozen=True)
class LabTls:
    """The files of `<dir>/tls/`."""

    ca_pem: Path
    broker_pem: Path
    client_pem: Path
    client_key: Path
    client_p12: Path
    truststore_p12: Path

    @classmethod
    def at(cls, folder: Path) -> LabTls:
        return cls(*(folder / name for name in ("ca.pem", "broker.pem", "client.pem", "client.key", "client.p12",
                                                "truststore.p12")))


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def make_ca(common: str = "kops lab CA") -> Issued:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(_name(common)).issuer_name(_name(common))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + VALID_FOR)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .sign(key, hashes.SHA256()))
    return Issued(key, cert, cert)


def issue(ca: Issued, common: str, addresses: tuple[str, ...] = (), names: tuple[str, ...] = (),
          server: bool = False) -> Issued:
    """A certificate signed by `ca`: a server's (for `addresses`/`names`) or a client's."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
    builder = (x509.CertificateBuilder().subject_name(_name(common)).issuer_name(ca.certificate.subject)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + VALID_FOR)
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.ExtendedKeyUsage([usage]), critical=False))
    alternative: list[x509.GeneralName] = [x509.IPAddress(ipaddress.ip_address(a)) for a in addresses]
    alternative += [x509.DNSName(n) for n in names]
    if alternative:
        builder = builder.add_extension(x509.SubjectAlternativeName(alternative), critical=False)
    return Issued(key, builder.sign(ca.key, hashes.SHA256()), ca.certificate)


def certificate_pem(*certificates: x509.Certificate) -> bytes:
    return b"".join(c.public_bytes(serialization.Encoding.PEM) for c in certificates)


def key_pem(issued: Issued, password: str | None = None) -> bytes:
    """The key as PKCS#8 PEM, encrypted with `password` when given (Kafka's ssl.key.password)."""
    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(password.encode()) if password else serialization.NoEncryption())
    return issued.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)


def keystore_p12(issued: Issued, password: str = STORE_PASSWORD) -> bytes:
    return pkcs12.serialize_key_and_certificates(b"client", issued.key, issued.certificate, [issued.issuer],
                                                 serialization.BestAvailableEncryption(password.encode()))


def truststore_p12(ca: x509.Certificate, password: str = STORE_PASSWORD) -> bytes:
    return pkcs12.serialize_key_and_certificates(b"ca", None, None, [ca],
                                                 serialization.BestAvailableEncryption(password.encode()))


def write_private(path: Path, data: bytes) -> Path:
    """A file only its owner reads (keys, stores)."""
    path.touch(mode=0o600, exist_ok=True)
    path.chmod(0o600)
    path.write_bytes(data)
    return path


def write_lab_tls(folder: Path) -> LabTls:
    """A new CA, broker and client certificates under `folder` (see the module's list)."""
    folder.mkdir(parents=True, exist_ok=True)
    files = LabTls.at(folder)
    ca = make_ca()
    broker = issue(ca, "kops-lab-broker", addresses=("127.0.0.1",), server=True)
    client = issue(ca, "kops-lab-client")
    files.ca_pem.write_bytes(certificate_pem(ca.certificate))
    write_private(files.broker_pem, key_pem(broker) + certificate_pem(broker.certificate))
    files.client_pem.write_bytes(certificate_pem(client.certificate))
    write_private(files.client_key, key_pem(client))
    write_private(files.client_p12, keystore_p12(client))
    write_private(files.truststore_p12, truststore_p12(ca.certificate))
    return files


TLS_DIR = "tls"
SSL_BOOTSTRAP, SASL_SSL_BOOTSTRAP = "bootstrap-ssl", "bootstrap-sasl-ssl"
SSL_PROPERTIES, SASL_SSL_PROPERTIES = "client-ssl.properties", "client-sasl-ssl.properties"
CLIENT_FILES = (SSL_BOOTSTRAP, SASL_SSL_BOOTSTRAP, SSL_PROPERTIES, SASL_SSL_PROPERTIES)


def client_files(directory: Path, scram_user: str, scram_password: str) -> dict[str, str]:
    """What a client of a TLS lab in `directory` is given: client properties for the SSL listener (PKCS12 stores)
    and for the SASL_SSL listener (SCRAM-SHA-512, the CA as PEM), as Kafka's own tools take them."""
    files = LabTls.at(directory / TLS_DIR)
    mtls = ["security.protocol=SSL", "ssl.truststore.type=PKCS12", f"ssl.truststore.location={files.truststore_p12}",
            f"ssl.truststore.password={STORE_PASSWORD}", "ssl.keystore.type=PKCS12",
            f"ssl.keystore.location={files.client_p12}", f"ssl.keystore.password={STORE_PASSWORD}"]
    jaas = (f'org.apache.kafka.common.security.scram.ScramLoginModule required username="{scram_user}" '
            f'password="{scram_password}";')
    scram = ["security.protocol=SASL_SSL", "sasl.mechanism=SCRAM-SHA-512", f"sasl.jaas.config={jaas}",
             "ssl.truststore.type=PEM", f"ssl.truststore.location={files.ca_pem}"]
    return {SSL_PROPERTIES: "\n".join(mtls) + "\n", SASL_SSL_PROPERTIES: "\n".join(scram) + "\n"}


def write_client_files(directory: Path, ssl_bootstrap: str, sasl_ssl_bootstrap: str) -> None:
    """`<dir>/bootstrap-ssl`, `<dir>/bootstrap-sasl-ssl` and the client properties of each listener."""
    (directory / SSL_BOOTSTRAP).write_text(ssl_bootstrap + "\n")
    (directory / SASL_SSL_BOOTSTRAP).write_text(sasl_ssl_bootstrap + "\n")
    for name, text in client_files(directory, SCRAM_USER, SCRAM_PASSWORD).items():
        write_private(directory / name, text.encode())
