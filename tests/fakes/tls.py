"""A test certificate authority, made with openssl once per process, and a server certificate
from it for Discord's host names and loopback, for the fake Discord to serve TLS with."""

from __future__ import annotations

import atexit
import functools
import shutil
import ssl
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

NAMES = ("discord.com", "gateway.discord.gg", "localhost")
ADDRESSES = ("127.0.0.1",)
# Extensions a strict verifier (Python 3.13's VERIFY_X509_STRICT) asks of each certificate.
_CA_EXTENSIONS = (
    "basicConstraints=critical,CA:TRUE\n"
    "keyUsage=critical,keyCertSign,cRLSign\n"
    "subjectKeyIdentifier=hash\n"
)
_SERVER_EXTENSIONS = (
    "basicConstraints=critical,CA:FALSE\n"
    "keyUsage=critical,digitalSignature\n"
    "extendedKeyUsage=serverAuth\n"
    "subjectKeyIdentifier=hash\n"
    "authorityKeyIdentifier=keyid\n"
    "subjectAltName=" + ",".join([*(f"DNS:{n}" for n in NAMES), *(f"IP:{a}" for a in ADDRESSES)])
)


@dataclass(frozen=True)
class Authority:
    ca_file: Path  # the authority's certificate: what a client that trusts the fakes loads
    cert_file: Path  # the server's certificate and key, issued by the authority
    key_file: Path

    def server_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert_file, self.key_file)
        return context


def _openssl(*args: str) -> None:
    openssl = shutil.which("openssl")
    assert openssl, "openssl is needed for the fake Discord's TLS (apt-get install openssl)"
    subprocess.run([openssl, *args], check=True, capture_output=True, timeout=60)


@functools.cache
def authority() -> Authority:
    """The process's test authority and server certificate, in a folder removed at exit."""
    folder = Path(tempfile.mkdtemp(prefix="corvid-test-tls-"))
    atexit.register(shutil.rmtree, folder, True)
    ca, ca_key = folder / "ca.pem", folder / "ca-key.pem"
    cert, key = folder / "server.pem", folder / "server-key.pem"
    (folder / "ca.ext").write_text(_CA_EXTENSIONS)
    (folder / "server.ext").write_text(_SERVER_EXTENSIONS)
    new_key = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    # Each certificate from a request, so that the extensions are exactly the ones above.
    for subject, request, key_file in (
        ("/CN=Corvid test authority", folder / "ca.csr", ca_key),
        ("/CN=discord.com", folder / "server.csr", key),
    ):
        _openssl("req", "-new", *new_key, "-subj", subject, "-keyout", str(key_file),
                 "-out", str(request))  # fmt: skip
    _openssl(
        "x509", "-req", "-in", str(folder / "ca.csr"), "-signkey", str(ca_key), "-days", "2",
        "-extfile", str(folder / "ca.ext"), "-out", str(ca),
    )  # fmt: skip
    _openssl(
        "x509", "-req", "-in", str(folder / "server.csr"), "-CA", str(ca), "-CAkey", str(ca_key),
        "-CAcreateserial", "-days", "2", "-extfile", str(folder / "server.ext"), "-out", str(cert),
    )  # fmt: skip
    return Authority(ca, cert, key)
