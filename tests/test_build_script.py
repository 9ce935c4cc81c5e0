#!/usr/bin/env python3
"""Tests scripts/build.sh's download path against a local HTTP server
serving release assets: a good checksum installs the library; a bad one or
none is refused and leaves the destination untouched."""
import hashlib
import http.server
import os
import platform
import subprocess
import sys
import tempfile
import threading
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OS = {"Linux": "linux", "Darwin": "macos"}.get(platform.system(), "unknown")
ARCH = {"arm64": "aarch64"}.get(platform.machine(), platform.machine())
ASSET = f"chimera_native-{OS}-{ARCH}-nvim0.11.so"
TAG = "v9.9.9"


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a):
        pass


class DownloadTest(unittest.TestCase):
    def setUp(self):
        self.serve = tempfile.mkdtemp()
        os.makedirs(os.path.join(self.serve, TAG))
        handler = lambda *a, **k: Quiet(*a, directory=self.serve, **k)
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.dest = os.path.join(tempfile.mkdtemp(), "chimera_native.so")
        with open(self.dest, "wb") as f:
            f.write(b"old library")

    def tearDown(self):
        self.server.shutdown()

    def publish(self, data, checksum):
        with open(os.path.join(self.serve, TAG, ASSET), "wb") as f:
            f.write(data)
        if checksum is not None:
            with open(os.path.join(self.serve, TAG, ASSET + ".sha256"), "w") as f:
                f.write(f"{checksum}  {ASSET}\n")

    def run_build(self):
        env = dict(
            os.environ,
            CHIMERA_RELEASE_URL=self.url,
            CHIMERA_TAG=TAG,
            CHIMERA_NVIM_MINOR="0.11",
            CHIMERA_NO_SOURCE_BUILD="1",
            CHIMERA_LIB_DEST=self.dest,
        )
        return subprocess.run(
            [os.path.join(REPO, "scripts/build.sh")], env=env, capture_output=True, text=True, timeout=60
        )

    def installed(self):
        with open(self.dest, "rb") as f:
            return f.read()

    def test_good_checksum_installs_the_asset(self):
        data = b"\x7fELF pretend library"
        self.publish(data, hashlib.sha256(data).hexdigest())
        out = self.run_build()
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(self.installed(), data)
        self.assertIn("installed prebuilt", out.stderr)
        leftovers = [n for n in os.listdir(os.path.dirname(self.dest)) if n.startswith(".chimera_native")]
        self.assertEqual(leftovers, [], "no temp file left behind")

    def test_bad_checksum_is_refused(self):
        self.publish(b"tampered", "0" * 64)
        out = self.run_build()
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("checksum mismatch", out.stderr)
        self.assertEqual(self.installed(), b"old library")

    def test_missing_checksum_is_refused(self):
        self.publish(b"unverified", None)
        out = self.run_build()
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("no checksum", out.stderr)
        self.assertEqual(self.installed(), b"old library")

    def test_missing_asset_falls_back_to_a_source_build(self):
        out = self.run_build()
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("no prebuilt library", out.stderr)
        self.assertIn("source build disabled", out.stderr, "the fallback was attempted")
        self.assertEqual(self.installed(), b"old library")


class VersionTest(unittest.TestCase):
    def test_lua_version_matches_cargo(self):
        with open(os.path.join(REPO, "Cargo.toml")) as f:
            cargo = next(l for l in f if l.startswith("version")).split('"')[1]
        with open(os.path.join(REPO, "lua/chimera/version.lua")) as f:
            lua = next(l for l in f if l.startswith("return")).split('"')[1]
        self.assertEqual(cargo, lua, "bump lua/chimera/version.lua with Cargo.toml")


if __name__ == "__main__":
    unittest.main(verbosity=2)
