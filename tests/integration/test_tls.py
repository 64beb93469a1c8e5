"""kops over TLS on real Kafka 4 (KRaft): the lab's mTLS listener (client certificates required) and its SASL_SSL
listener (SCRAM-SHA-512), reached with the client properties users already have: PKCS12 stores, keytool's
output, PEM files, KIP-651 inline PEM; a JKS store refused with the keytool line; and every TLS failure named for
what it is, in one line with no secret in it.

One TLS lab for the whole module (`KafkaLab.up(..., tls=True)`); the files a client needs are the lab's own.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kops.cli.main import main
from kops.cluster.admin.adapter import AdminCluster
from kops.cluster.admin.connection import AdminSettings, read_properties
from kops.lab import tls as lab_tls
from kops.lab.kafka_client import create_topics
from kops.lab.kafka_config import SCRAM_PASSWORD, SCRAM_USER
from kops.lab.tls import STORE_PASSWORD, LabTls
from tests.engines import require_real

pytestmark = pytest.mark.lab
SECRETS = (STORE_PASSWORD, SCRAM_PASSWORD, "wrong-secret-value", "PRIVATE KEY")


class TlsLab:
    def __init__(self, directory: Path, bootstrap: str) -> None:
        self.directory = directory
        self.bootstrap = bootstrap  # PLAINTEXT
        self.ssl = (directory / lab_tls.SSL_BOOTSTRAP).read_text().strip()
        self.sasl_ssl = (directory / lab_tls.SASL_SSL_BOOTSTRAP).read_text().strip()
        self.files = LabTls.at(directory / lab_tls.TLS_DIR)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsLab]:
    require_real("kafka-4")
    from kops.lab.kafka_lab import KafkaLab

    directory = tmp_path_factory.mktemp("tls-lab")
    kafka = KafkaLab(directory, detached=False)
    state = kafka.up("kafka-4", brokers=1, racks=1, tls=True)
    try:
        create_topics(state.bootstrap, [_topic("paid", 3)])
        yield TlsLab(directory, state.bootstrap)
    finally:
        kafka.down()
        assert not kafka.pids_alive()


def _topic(name: str, partitions: int):  # noqa: ANN202 (kafka-python's NewTopic)
    from kafka.admin import NewTopic

    return NewTopic(name, partitions, 1)


def properties(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "client.properties"
    path.write_text("\n".join(lines) + "\n")
    return path


def state_through(bootstrap: str, config: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    """`kops state` as JSON through those servers with that client properties file (exit 0 expected)."""
    capsys.readouterr()
    code = main(["state", "-b", bootstrap, "--command-config", str(config), "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert not any(secret in out + err for secret in SECRETS)
    return json.loads(out)


def refused(bootstrap: str, config: Path, capsys: pytest.CaptureFixture[str], timeout: float = 3.0) -> str:
    """The one line (exit 1) `kops state` gives; it carries no secret."""
    capsys.readouterr()
    code = main(["state", "-b", bootstrap, "--command-config", str(config), "--connect-timeout", str(timeout)])
    out, err = capsys.readouterr()
    assert code == 1 and err.count("\n") == 1 and "Traceback" not in err, err
    assert not any(secret in out + err for secret in SECRETS), err
    return err


def keytool() -> str:
    found = shutil.which("keytool")
    if found is None:
        pytest.skip("keytool (Java) is not installed")
    return found


def test_the_lab_writes_each_listener_and_the_client_properties_that_reach_it(lab, capsys) -> None:
    """PKCS12 stores through mTLS and SCRAM-SHA-512 over SASL_SSL, from the files `kops lab up --tls` writes."""
    for bootstrap, name in ((lab.ssl, lab_tls.SSL_PROPERTIES), (lab.sasl_ssl, lab_tls.SASL_SSL_PROPERTIES)):
        doc = state_through(bootstrap, lab.directory / name, capsys)
        assert sorted(doc["topics"]) == ["paid"] and len(doc["topics"]["paid"]["partitions"]) == 3
    assert f'username="{SCRAM_USER}"' in (lab.directory / lab_tls.SASL_SSL_PROPERTIES).read_text()


def test_pem_files_and_inline_pem_reach_the_mtls_listener(lab, tmp_path, capsys) -> None:
    files = lab.files
    key_and_chain = tmp_path / "client-and-key.pem"
    key_and_chain.write_bytes(files.client_key.read_bytes() + files.client_pem.read_bytes())
    pem_files = properties(tmp_path, "security.protocol=SSL", "ssl.truststore.type=PEM",
                           f"ssl.truststore.location={files.ca_pem}", "ssl.keystore.type=PEM",
                           f"ssl.keystore.location={key_and_chain}")
    assert "paid" in state_through(lab.ssl, pem_files, capsys)["topics"]

    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(files.client_key.read_bytes(), None)
    encrypted = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.BestAvailableEncryption(STORE_PASSWORD.encode())).decode()

    def continued(text: str) -> str:  # KIP-651's form: the PEM over backslash-continued lines
        return " \\\n  ".join(text.strip().splitlines())

    inline = properties(tmp_path, "security.protocol=SSL", "ssl.truststore.type=PEM",
                        f"ssl.truststore.certificates={continued(files.ca_pem.read_text())}", "ssl.keystore.type=PEM",
                        f"ssl.keystore.certificate.chain={continued(files.client_pem.read_text())}",
                        f"ssl.keystore.key={continued(encrypted)}", f"ssl.key.password={STORE_PASSWORD}")
    assert "paid" in state_through(lab.ssl, inline, capsys)["topics"]


def test_keytool_stores_are_read_and_a_jks_store_is_refused_with_the_command_that_converts_it(
        lab, tmp_path, capsys) -> None:
    """Java 17's keytool writes PKCS12 unless told -storetype JKS: such a file, declared JKS or not at all (Kafka's
    default type), is read, and so is an older Java's PKCS12; a true JKS store is one line naming JKS and the
    keytool command."""
    tool = keytool()
    trust = tmp_path / "truststore.jks"  # keytool's default type: PKCS12, whatever the name says
    subprocess.run([tool, "-importcert", "-noprompt", "-alias", "ca", "-file", str(lab.files.ca_pem),
                    "-keystore", str(trust), "-storepass", STORE_PASSWORD], check=True, capture_output=True)
    jks = tmp_path / "client.jks"
    subprocess.run([tool, "-importkeystore", "-noprompt", "-srckeystore", str(lab.files.client_p12),
                    "-srcstoretype", "PKCS12", "-srcstorepass", STORE_PASSWORD, "-destkeystore", str(jks),
                    "-deststoretype", "JKS", "-deststorepass", STORE_PASSWORD], check=True, capture_output=True)
    legacy = tmp_path / "legacy.p12"  # as Java 8 and 11 wrote PKCS12: RC2-40 and 3DES (OpenSSL 3's legacy ciphers)
    subprocess.run([tool, "-J-Dkeystore.pkcs12.legacy", "-importkeystore", "-noprompt", "-srckeystore",
                    str(lab.files.client_p12), "-srcstoretype", "PKCS12", "-srcstorepass", STORE_PASSWORD,
                    "-destkeystore", str(legacy), "-deststoretype", "PKCS12", "-deststorepass", STORE_PASSWORD],
                   check=True, capture_output=True)
    assert trust.read_bytes()[:1] == b"\x30" and jks.read_bytes()[:4] == b"\xfe\xed\xfe\xed"
    readable = properties(tmp_path, "security.protocol=SSL", "ssl.truststore.type=JKS",
                          f"ssl.truststore.location={trust}", f"ssl.truststore.password={STORE_PASSWORD}",
                          f"ssl.keystore.location={legacy}", f"ssl.keystore.password={STORE_PASSWORD}")
    assert "paid" in state_through(lab.ssl, readable, capsys)["topics"]
    line = refused(lab.ssl, properties(tmp_path, "security.protocol=SSL", f"ssl.truststore.location={trust}",
                                       f"ssl.truststore.password={STORE_PASSWORD}", f"ssl.keystore.location={jks}",
                                       f"ssl.keystore.password={STORE_PASSWORD}"), capsys)
    assert f"the keystore {jks} is a JKS store" in line and "keytool -importkeystore" in line, line
    assert "-deststoretype PKCS12" in line and str(tmp_path / "client.properties") in line, line


def test_kops_records_and_lock_travel_through_mtls_too(lab) -> None:
    """The `__kops` producer and consumer take the same TLS set-up as the admin client."""
    port = AdminCluster(AdminSettings(lab.ssl, read_properties(lab.directory / lab_tls.SSL_PROPERTIES)))
    try:
        lock = port.lock({"who": "test_tls"}, 5.0, time.sleep, time.monotonic)
        lock.acquire()
        try:
            assert port.holder() is not None
        finally:
            lock.release()
    finally:
        port.close()


def test_a_broker_certificate_from_another_ca_is_named(lab, tmp_path, capsys) -> None:
    other = tmp_path / "other-ca.pem"
    other.write_bytes(lab_tls.certificate_pem(lab_tls.make_ca("another CA").certificate))
    config = properties(tmp_path, "security.protocol=SSL", "ssl.truststore.type=PEM",
                        f"ssl.truststore.location={other}",
                        f"ssl.keystore.location={lab.files.client_p12}", f"ssl.keystore.password={STORE_PASSWORD}")
    line = refused(lab.ssl, config, capsys)
    assert "certificate verification failed" in line and "ssl.truststore" in line and lab.ssl in line, line


def test_a_hostname_the_broker_certificate_does_not_carry_is_named_and_the_check_can_be_turned_off(
        lab, tmp_path, capsys) -> None:
    """The lab's certificate names 127.0.0.1 only: through `localhost` the hostname check fails, as Kafka's
    default ssl.endpoint.identification.algorithm=https makes it; set empty, the same address is accepted."""
    by_name = lab.ssl.replace("127.0.0.1", "localhost")
    config = lab.directory / lab_tls.SSL_PROPERTIES
    line = refused(by_name, config, capsys)
    assert "hostname mismatch" in line and "localhost" in line and "ssl.endpoint.identification.algorithm" in line
    unchecked = properties(tmp_path, config.read_text().strip(), "ssl.endpoint.identification.algorithm=")
    assert "paid" in state_through(by_name, unchecked, capsys)["topics"]


def test_a_missing_or_unknown_client_certificate_is_named(lab, tmp_path, capsys) -> None:
    without = properties(tmp_path, "security.protocol=SSL", "ssl.truststore.type=PEM",
                         f"ssl.truststore.location={lab.files.ca_pem}")
    line = refused(lab.ssl, without, capsys)
    assert "the broker requires a client certificate and none was given" in line, line
    stranger = lab_tls.issue(lab_tls.make_ca("another CA"), "stranger")
    keystore = tmp_path / "stranger.p12"
    keystore.write_bytes(lab_tls.keystore_p12(stranger, STORE_PASSWORD))
    other = properties(tmp_path, "security.protocol=SSL", "ssl.truststore.type=PEM",
                       f"ssl.truststore.location={lab.files.ca_pem}", "ssl.keystore.type=PKCS12",
                       f"ssl.keystore.location={keystore}", f"ssl.keystore.password={STORE_PASSWORD}")
    assert "the broker refused the client certificate" in refused(lab.ssl, other, capsys)


def test_a_wrong_store_password_and_a_wrong_scram_password_are_one_line_each(lab, tmp_path, capsys) -> None:
    wrong_store = properties(tmp_path, "security.protocol=SSL", "ssl.truststore.type=PKCS12",
                             f"ssl.truststore.location={lab.files.truststore_p12}",
                             "ssl.truststore.password=wrong-secret-value")
    line = refused(lab.ssl, wrong_store, capsys)
    assert "wrong ssl.truststore.password" in line and str(wrong_store) in line, line
    text = (lab.directory / lab_tls.SASL_SSL_PROPERTIES).read_text().replace(SCRAM_PASSWORD, "wrong-secret-value")
    # kafka-python retries a refused login until the timeout: 20 s leaves a loaded machine time for the first TLS
    # handshake and SCRAM exchange (at 10 s a CI run under load saw no answer at all, and said so)
    line = refused(lab.sasl_ssl, properties(tmp_path, text.strip()), capsys, timeout=20)
    assert "authentication failed" in line.lower(), line


def test_tls_to_a_plaintext_listener_says_it_is_not_tls(lab, capsys) -> None:
    line = refused(lab.bootstrap, lab.directory / lab_tls.SSL_PROPERTIES, capsys)
    assert "TLS" in line and "security.protocol" in line, line
