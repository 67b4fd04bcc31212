"""Real servers on this machine for the remote-storage tests: moto's S3 server (PyPI's
``moto[server]``), Azurite, Azure's blob storage emulator (npm's ``azurite``), nginx serving
a folder (Debian's ``nginx-light``), and a proxy of our own in front of a server that fails
or stops on cue. Each fixture skips when its server is missing."""

import base64
import email.utils
import hashlib
import hmac
import http.client
import http.server
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import numpy as np
import pytest

KEYS = {
    "aws_access_key_id": "test",
    "aws_secret_access_key": "test",
    "aws_region": "us-east-1",
    "aws_allow_http": "true",
}


def stats(stderr):
    """The `--stats` line's numbers: requests, bytes fetched, bytes sent."""
    m = re.search(r"requests: (\d+), bytes fetched: (\d+), bytes sent: (\d+)", stderr)
    assert m, stderr
    return tuple(map(int, m.groups()))


def matrix(rows=512, cols=384):
    return np.arange(rows * cols, dtype=np.float64).reshape(rows, cols) / 7.0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(port, proc, what):
    for _ in range(300):
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on port {port}")


class Server:
    """A server process the tests start: a context manager that stops it."""

    proc: subprocess.Popen

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)


class S3(Server):
    """A moto S3 server with a bucket ``data``; or, where ``DBDF_S3S_FS`` names the binary,
    s3s-fs (crates.io's S3 server over a folder, whose range reads cost what they fetch:
    moto's cost the whole object's size, which the benchmarks cannot use)."""

    def __init__(self, tmp):
        boto3 = pytest.importorskip("boto3")
        self.port = free_port()
        s3s_fs = os.environ.get("DBDF_S3S_FS")
        if s3s_fs:
            (tmp / "s3root").mkdir(exist_ok=True)
            command = [s3s_fs, "--host", "127.0.0.1", "--port", str(self.port),
                       "--access-key", KEYS["aws_access_key_id"],
                       "--secret-key", KEYS["aws_secret_access_key"], str(tmp / "s3root")]
        else:
            server = (shutil.which("moto_server")
                      or str(Path(sys.executable).parent / "moto_server"))
            if not Path(server).is_file():
                pytest.skip("moto's S3 server is not installed (pip install 'moto[server]')")
            command = [server, "-p", str(self.port)]
        self.proc = subprocess.Popen(
            command,
            stdout=subprocess.DEVNULL,
            stderr=open(tmp / "s3.log", "w"),
        )
        wait_for(self.port, self.proc, command[0])
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.client = boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id="test",
            aws_secret_access_key="test",
            region_name="us-east-1",
        )
        self.client.create_bucket(Bucket="data")

    def options(self, endpoint=None):
        """Storage options for the Python API (object_store's names)."""
        return {**KEYS, "aws_endpoint_url": endpoint or self.endpoint}

    def env(self, endpoint=None):
        """The environment the CLI reads its settings from."""
        env = dict(os.environ)
        env.update({k.upper(): v for k, v in self.options(endpoint).items()})
        return env

    def keys(self):
        listed = self.client.list_objects_v2(Bucket="data").get("Contents", [])
        return sorted(o["Key"] for o in listed)

    def get(self, key):
        return self.client.get_object(Bucket="data", Key=key)["Body"].read()



class Azurite(Server):
    """Azurite's blob service with a container ``data``, on a port of its own. Its account
    is the emulator's well-known one; the container and the listings the tests check are
    requests signed here (Azure's Shared Key), which keeps the Azure SDK out of the tests."""

    ACCOUNT = "devstoreaccount1"
    KEY = ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/"
           "KBHBeksoGMGw==")

    def __init__(self, tmp):
        binary = os.environ.get("DBDF_AZURITE") or shutil.which("azurite-blob")
        if not binary or not Path(binary).is_file():
            pytest.skip("Azurite is not installed (npm install -g azurite)")
        self.port = free_port()
        (tmp / "azurite").mkdir(exist_ok=True)
        command = [binary, "--blobHost", "127.0.0.1", "--blobPort", str(self.port),
                   "--location", str(tmp / "azurite"), "--silent", "--skipApiVersionCheck",
                   "--disableTelemetry"]
        self.proc = subprocess.Popen(command, stdout=subprocess.DEVNULL,
                                     stderr=open(tmp / "azurite.log", "w"))
        wait_for(self.port, self.proc, "azurite-blob")
        self.endpoint = f"http://127.0.0.1:{self.port}"
        status, _ = self.request("PUT", "/data", {"restype": "container"})
        assert status == 201, status

    def request(self, method, path, query=None, port=None):
        """A request signed with the account's key, as Azure's Shared Key scheme asks:
        ``(status, body)``."""
        query = query or {}
        headers = {"x-ms-date": email.utils.formatdate(usegmt=True),
                   "x-ms-version": "2021-08-06"}
        signed = "\n".join([method] + [""] * 11) + "\n" + "".join(
            f"{k}:{v}\n" for k, v in sorted(headers.items())) + (
            f"/{self.ACCOUNT}/{self.ACCOUNT}{path}"
            + "".join(f"\n{k}:{v}" for k, v in sorted(query.items())))
        digest = hmac.new(base64.b64decode(self.KEY), signed.encode(), hashlib.sha256).digest()
        headers["Authorization"] = f"SharedKey {self.ACCOUNT}:{base64.b64encode(digest).decode()}"
        target = f"/{self.ACCOUNT}{path}" + ("?" + "&".join(f"{k}={v}" for k, v in query.items())
                                              if query else "")
        connection = http.client.HTTPConnection("127.0.0.1", port or self.port, timeout=30)
        try:
            connection.request(method, target, headers=headers)
            reply = connection.getresponse()
            return reply.status, reply.read()
        finally:
            connection.close()

    def options(self, endpoint=None, key=None):
        """Storage options for the Python API (object_store's names)."""
        return {"azure_storage_account_name": self.ACCOUNT,
                "azure_storage_account_key": key or self.KEY,
                "azure_storage_endpoint": f"{endpoint or self.endpoint}/{self.ACCOUNT}",
                "azure_allow_http": "true"}

    def env(self, endpoint=None, key=None):
        """The environment the CLI reads its settings from."""
        env = dict(os.environ)
        env.update({k.upper(): v for k, v in self.options(endpoint, key).items()})
        return env

    def keys(self):
        status, body = self.request("GET", "/data", {"restype": "container", "comp": "list"})
        assert status == 200, status
        return sorted(e.text for e in ElementTree.fromstring(body).iter("Name"))

    def get(self, key):
        status, body = self.request("GET", f"/data/{key}")
        assert status == 200, (key, status)
        return body



class Nginx(Server):
    """nginx serving ``root`` with range requests, its access log counting requests; under
    ``/dav/`` it takes PUT, DELETE, COPY and MOVE too (WebDAV without listing)."""

    def __init__(self, tmp):
        binary = shutil.which("nginx") or "/usr/sbin/nginx"
        if not Path(binary).is_file():
            pytest.skip("nginx is not installed (Debian: nginx-light)")
        self.root = tmp / "www"
        self.root.mkdir()
        self.log = tmp / "access.log"
        self.port = free_port()
        conf = tmp / "nginx.conf"
        conf.write_text(
            f"""daemon off; pid {tmp}/nginx.pid; error_log {tmp}/error.log;
{"user root;" if os.geteuid() == 0 else ""}
events {{}}
http {{
  access_log {self.log};
  server {{
    listen 127.0.0.1:{self.port}; root {self.root};
    # Refused as S3 refuses a caller who may not list the bucket: sidecars and one object.
    location ~ ^/refused/(.*\\.(index|meta)|data\\.dbdf)$ {{ return 403; }}
    location /dav/ {{ dav_methods PUT DELETE COPY MOVE; create_full_put_path on; client_max_body_size 64m; }}
  }}
}}
"""
        )
        self.proc = subprocess.Popen([binary, "-c", str(conf), "-p", str(tmp)])
        wait_for(self.port, self.proc, "nginx")
        self.url = f"http://127.0.0.1:{self.port}"

    def requests(self):
        """Requests logged so far (nginx writes each line when the request ends)."""
        return len(self.log.read_text().splitlines()) if self.log.exists() else 0



class Proxy:
    """An HTTP proxy in front of ``target``: it fails every ``fail_every``-th request with a
    503, drops the request headers named in ``drop`` (as a server that ignores them), calls
    ``on_request(method, path)`` before forwarding, answers the requests ``refuse`` picks
    with the status it gives, and can stop listening."""

    def __init__(self, target_port, fail_every=0, drop=()):
        self.target_port = target_port
        self.fail_every = fail_every
        self.drop = {"connection", *(h.lower() for h in drop)}
        self.count = 0
        self.failed = 0
        self.on_request = None
        # ``refuse(method, path)``: a status to answer instead of forwarding, or None.
        self.refuse = None
        self.stopped = False
        self.lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes: without this, each reply waits for the
            # client's delayed acknowledgement (tens of milliseconds a request).
            disable_nagle_algorithm = True

            def log_message(self, *args):
                pass

            def forward(self):
                if proxy.stopped:
                    # As a server that went away: the connection drops, no response.
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                with proxy.lock:
                    proxy.count += 1
                    fail = proxy.fail_every and proxy.count % proxy.fail_every == 0
                    proxy.failed += bool(fail)
                if proxy.on_request:
                    proxy.on_request(self.command, self.path)
                refused = proxy.refuse and proxy.refuse(self.command, self.path)
                if refused:
                    # An answer no client retries (403: forbidden), as a server that refuses
                    # this one request for good.
                    self.send_response(refused)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if fail:
                    self.send_response(503)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                upstream = http.client.HTTPConnection("127.0.0.1", proxy.target_port, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in proxy.drop}
                upstream.request(self.command, self.path, body=body, headers=headers)
                reply = upstream.getresponse()
                data = reply.read()
                self.send_response(reply.status)
                for k, v in reply.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                upstream.close()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = forward

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        """Stops listening and drops the connections it holds."""
        self.stopped = True
        self.server.shutdown()
        self.server.server_close()


def kill_midway(command, server, is_second_part):
    """Runs ``command`` with its requests through a proxy in front of ``server``, and kills
    it once ``is_second_part(method, path)`` holds for a request: an upload stopped
    halfway."""
    proxy = Proxy(server.port)
    seen = threading.Event()
    proxy.on_request = lambda method, path: is_second_part(method, path) and seen.set()
    proc = subprocess.Popen(command, env=server.env(proxy.endpoint), stderr=subprocess.DEVNULL)
    try:
        assert seen.wait(60), "the upload's second part was never sent"
        proc.kill()
        proc.wait(10)
    finally:
        proxy.stop()


def keys_of(s3, names, folder=None):
    """Each of ``names`` (and every object under ``folder/``) that exists, with its bytes."""
    listed = s3.keys()
    wanted = [k for k in listed if k in names or (folder and k.startswith(folder + "/"))]
    return {k: s3.get(k) for k in wanted}


# Each writer: the output name, its sidecars, extra arguments, and its folder (segments, a
# Zarr group, SystemDS part files).
WRITERS = [
    ("d.dbdf", ["d.dbdf.meta", "d.dbdf.index"], ["--dialect", "daphne"], None),
    ("t.csv", ["t.csv.meta"], [], None),
    ("m.sysds", ["m.sysds.mtd"], ["--to", "systemds"], None),
    ("s.dbdf", ["s.dbdf.meta", "s.dbdf.index"], [], None),
    ("g.hdfs", ["g.hdfs.meta"], ["--segments", "2"], "g.hdfs"),
    ("n.npy", [], [], None),
    ("t.parquet", [], [], None),
    ("t.arrow", [], [], None),
    ("c.mtx", [], ["--data-type", "csr"], None),
    ("m.fut", [], [], None),
    ("n.npz", [], [], None),
    ("h.h5", [], ["--data-type", "csr"], None),
    ("g.zarr", [], ["--data-type", "csr"], "g.zarr"),
    ("p.sysds", ["p.sysds.mtd"], ["--to", "systemds", "--systemds-block-size", "20",
                                  "--parts", "2"], "p.sysds"),
]
