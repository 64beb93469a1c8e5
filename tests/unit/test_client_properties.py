"""Client properties (`--command-config`) as kops reads them: the TLS stores in every form Kafka's clients take,
each problem one line naming the property and the file, never a password or a key. No cluster: the TLS
handshakes themselves are tried on real Kafka in tests/integration/test_tls.py."""

from __future__ import annotations

import ssl
import tempfile
from pathlib import Path

import pytest

from kops.cluster.admin.connection import AdminSettings, read_properties
from kops.cluster.admin.stores import pem_text
from kops.cluster.admin.tls import client_tls
from kops.errors import KopsError, UsageError
from kops.lab import tls as lab_tls

SECRET = "s3cret-store-pw"


@pytest.fixture(scope="module")
def material(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("tls")
    ca = lab_tls.make_ca()
    client = lab_tls.issue(ca, "client")
    files = {
        "ca.pem": lab_tls.certificate_pem(ca.certificate),
        "trust.p12": lab_tls.truststore_p12(ca.certificate, SECRET),
        "client.p12": lab_tls.keystore_p12(client, SECRET),
        "client-and-key.pem": lab_tls.key_pem(client) + lab_tls.certificate_pem(client.certificate),
        "client-encrypted.pem": lab_tls.key_pem(client, SECRET) + lab_tls.certificate_pem(client.certificate),
        "client.jks": b"\xfe\xed\xfe\xed\x00\x00\x00\x02" + bytes(64),  # a JKS store's magic and version
        "client.pem": lab_tls.certificate_pem(client.certificate),
        "client.key": lab_tls.key_pem(client),
        "client-enc.key": lab_tls.key_pem(client, SECRET),
    }
    paths = {name: folder / name for name in files}
    for name, data in files.items():
        paths[name].write_bytes(data)
    return paths


def written(tmp_path: Path, text: str) -> dict[str, str]:
    path = tmp_path / "client.properties"
    path.write_text(text)
    return read_properties(path)


def refusal(tmp_path: Path, text: str) -> str:
    """The one line a refused properties file gives; it names the file and carries no secret."""
    props = written(tmp_path, text)
    with pytest.raises(UsageError) as caught:
        AdminSettings("127.0.0.1:9093", props).client_arguments()
    line = caught.value.one_line()
    assert str(tmp_path / "client.properties") in line and SECRET not in line and "\n" not in line, line
    return line


def test_pkcs12_stores_give_a_context_with_the_ca_and_the_client_certificate(tmp_path, material) -> None:
    props = written(tmp_path, f"""security.protocol=SSL
ssl.truststore.type=PKCS12
ssl.truststore.location={material['trust.p12']}
ssl.truststore.password={SECRET}
ssl.keystore.type=PKCS12
ssl.keystore.location={material['client.p12']}
ssl.keystore.password={SECRET}
""")
    arguments = AdminSettings("127.0.0.1:9093", props).client_arguments()
    context = arguments["ssl_context"]
    assert isinstance(context, ssl.SSLContext) and arguments["security_protocol"] == "SSL"
    assert [c["subject"] for c in context.get_ca_certs()] == [((("commonName", "kops lab CA"),),)]
    assert context.check_hostname and context.minimum_version == ssl.TLSVersion.TLSv1_2
    assert not any(p.name.startswith("kops-client-") for p in Path(tempfile.gettempdir()).iterdir()), \
        "the private file that carried the key is removed"


def test_a_pkcs12_store_declared_jks_is_read_by_its_content_and_a_pem_file_without_a_type(tmp_path, material) -> None:
    """Java 9+ keytool writes PKCS12 unless told otherwise; Kafka's default type is JKS: such files must work."""
    tls = client_tls({"security.protocol": "SSL", "ssl.truststore.location": str(material["trust.p12"]),
                      "ssl.truststore.password": SECRET, "ssl.keystore.location": str(material["client-and-key.pem"])},
                     None)
    assert tls is not None and tls.sends_certificate and len(tls.context.get_ca_certs()) == 1


def test_pem_files_and_kip_651_inline_pem_with_an_encrypted_key(tmp_path, material) -> None:
    def continued(path: Path) -> str:  # a PEM block written as a properties value over several lines
        return " \\\n    ".join(path.read_text().strip().splitlines())

    inline = written(tmp_path, f"""security.protocol=SASL_SSL
ssl.truststore.type=PEM
ssl.truststore.certificates={continued(material['ca.pem'])}
ssl.keystore.type=PEM
ssl.keystore.certificate.chain={continued(material['client.pem'])}
ssl.keystore.key={continued(material['client-enc.key'])}
ssl.key.password={SECRET}
""")
    tls = AdminSettings("b:1", inline).tls
    assert tls is not None and tls.sends_certificate and len(tls.context.get_ca_certs()) == 1
    files = client_tls({"security.protocol": "SSL", "ssl.truststore.type": "PEM",
                        "ssl.truststore.location": str(material["ca.pem"]), "ssl.keystore.type": "PEM",
                        "ssl.keystore.location": str(material["client-encrypted.pem"]), "ssl.key.password": SECRET},
                       None)
    assert files is not None and files.sends_certificate


def test_pem_text_lays_out_blocks_joined_into_one_line_or_with_escaped_newlines(material) -> None:
    original = material["ca.pem"].read_text()
    assert pem_text(" ".join(original.split("\n"))) == original
    assert pem_text(original.replace("\n", "\\n")) == original


def test_without_tls_there_is_no_context_and_without_a_truststore_the_system_cas_are_trusted() -> None:
    assert client_tls({"security.protocol": "SASL_PLAINTEXT", "ssl.truststore.location": "/nowhere"}, None) is None
    tls = client_tls({"security.protocol": "SSL"}, None)
    assert tls is not None and not tls.sends_certificate
    off = client_tls({"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": ""}, None)
    assert off is not None and not off.context.check_hostname


@pytest.mark.parametrize(("body", "expected"), [
    ("ssl.truststore.type=PKCS12\nssl.truststore.location={trust.p12}\nssl.truststore.password=wrong-" + SECRET,
     "wrong ssl.truststore.password"),
    ("ssl.truststore.type=PKCS12\nssl.truststore.location={trust.p12}", "no ssl.truststore.password"),
    ("ssl.keystore.type=PKCS12\nssl.keystore.location={client.p12}\nssl.keystore.password=" + SECRET + "x",
     "wrong ssl.keystore.password"),
    ("ssl.keystore.location={client.jks}\nssl.keystore.password=" + SECRET,
     "is a JKS store, which kops does not read (convert it to PKCS12: keytool -importkeystore"),
    ("ssl.truststore.type=JCEKS\nssl.truststore.location={trust.p12}", "ssl.truststore.type=JCEKS is not"),
    ("ssl.keystore.type=PEM\nssl.keystore.location={client-encrypted.pem}", "is encrypted (set ssl.key.password)"),
    ("ssl.keystore.type=PEM\nssl.keystore.location={client-encrypted.pem}\nssl.key.password=" + SECRET + "x",
     "wrong ssl.key.password"),
    ("ssl.truststore.certificates={ca.pem}", "ssl.truststore.certificates needs ssl.truststore.type=PEM"),
    ("ssl.keystore.type=PEM\nssl.keystore.key=-----BEGIN PRIVATE KEY----- x -----END PRIVATE KEY-----",
     "ssl.keystore.certificate.chain and ssl.keystore.key go together"),
    ("ssl.truststore.location={missing}", "cannot read ssl.truststore.location"),
    ("ssl.truststore.type=PEM\nssl.truststore.location={client.key}", "holds no PEM certificate"),
    ("ssl.cipher.suites=TLS_AES_256_GCM_SHA384", "ssl.cipher.suites is not supported"),
    ("ssl.enabled.protocols=TLSv1.1", "kops speaks TLSv1.2 and TLSv1.3"),
])
def test_each_store_problem_is_one_line_naming_the_file_without_secrets(tmp_path, material, body, expected) -> None:
    paths = {name: str(path) for name, path in material.items()} | {"missing": str(tmp_path / "nope.p12")}
    for name, path in paths.items():
        body = body.replace("{" + name + "}", path)
    assert expected in refusal(tmp_path, "security.protocol=SSL\n" + body + "\n")


def test_an_unknown_security_protocol_is_refused(tmp_path) -> None:
    assert "security.protocol=TLS is not one of" in refusal(tmp_path, "security.protocol=TLS\n")


def test_a_line_that_is_not_key_value_names_its_line(tmp_path) -> None:
    (tmp_path / "bad.properties").write_text("security.protocol=SSL\njust words\n")
    with pytest.raises(KopsError) as caught:
        read_properties(tmp_path / "bad.properties")
    assert caught.value.where == f"{tmp_path / 'bad.properties'}:2"


def test_a_connection_closed_in_the_sasl_exchange_reads_as_refused_credentials() -> None:
    """Kafka closes a connection after refusing its credentials; kafka-python sometimes logs only the close. A loss
    after ApiVersions on a SASL connection is then the reason; a loss before it (nothing listening) is not."""
    import logging

    from kops.cluster.admin.connection import _AuthenticationRefusals

    class Connection:  # the two attributes kafka-python's KafkaConnection carries that the reader looks at
        def __init__(self, version: object, sasl: bool) -> None:
            self.broker_version_data, self.sasl_enabled = version, sasl

        def __repr__(self) -> str:
            return f"<KafkaConnection node_id=bootstrap-0 broker_version={self.broker_version_data}>"

    def lost(connection: Connection) -> logging.LogRecord:
        return logging.LogRecord("kafka.net.connection", logging.ERROR, __file__, 1, "%s: Connection lost: %s",
                                 (connection, "KafkaConnectionError: socket disconnected"), None)

    refusals = _AuthenticationRefusals()
    refusals.emit(lost(Connection(None, True)))
    refusals.emit(lost(Connection((3, 9), False)))
    assert refusals.reason is None
    refusals.emit(lost(Connection((3, 9), True)))
    assert refusals.reason is not None and "during SASL authentication" in refusals.reason
    refusals.emit(logging.LogRecord("kafka", logging.ERROR, __file__, 1, "Connection failed: %s",
                                    ("SaslAuthenticationFailedError: Authentication failed: bad password",), None))
    assert refusals.reason == "SaslAuthenticationFailedError: Authentication failed: bad password"
