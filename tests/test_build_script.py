#!/usr/bin/env python3
"""Tests scripts/build.sh's download path against a local HTTP server
serving release assets: a good checksum installs the library; a bad one or
none is refused and leaves the destination untouched; an untagged checkout
takes the nearest release only when its native sources are that release's;
the Neovim running the build picks the asset's Neovim version; musl gets
its own asset."""
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
BIN_ASSET = f"chimera-{OS}-{ARCH}"
TAG = "v9.9.9"


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a):
        pass


class Served(unittest.TestCase):
    """A local server of release assets and a destination holding an old library."""

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
        self.bin_dest = os.path.join(tempfile.mkdtemp(), "bin", "chimera")

    def tearDown(self):
        self.server.shutdown()

    def publish(self, data, checksum, asset=ASSET):
        with open(os.path.join(self.serve, TAG, asset), "wb") as f:
            f.write(data)
        if checksum is not None:
            with open(os.path.join(self.serve, TAG, asset + ".sha256"), "w") as f:
                f.write(f"{checksum}  {asset}\n")

    def run_build(self):
        env = dict(
            os.environ,
            CHIMERA_RELEASE_URL=self.url,
            CHIMERA_TAG=TAG,
            CHIMERA_NVIM_MINOR="0.11",
            CHIMERA_NO_SOURCE_BUILD="1",
            CHIMERA_LIB_DEST=self.dest,
            CHIMERA_BIN_DEST=self.bin_dest,
        )
        return subprocess.run(
            [os.path.join(REPO, "scripts/build.sh")], env=env, capture_output=True, text=True, timeout=60
        )

    def installed(self):
        with open(self.dest, "rb") as f:
            return f.read()


class DownloadTest(Served):
    def test_good_checksum_installs_the_asset(self):
        data = b"\x7fELF pretend library"
        self.publish(data, hashlib.sha256(data).hexdigest())
        out = self.run_build()
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(self.installed(), data)
        self.assertIn("installed prebuilt", out.stderr)
        leftovers = [n for n in os.listdir(os.path.dirname(self.dest)) if n.startswith(".chimera_native")]
        self.assertEqual(leftovers, [], "no temp file left behind")

    def test_the_chimera_command_comes_with_the_library(self):
        lib, cli = b"\x7fELF pretend library", b"\x7fELF pretend chimera"
        self.publish(lib, hashlib.sha256(lib).hexdigest())
        self.publish(cli, hashlib.sha256(cli).hexdigest(), BIN_ASSET)
        out = self.run_build()
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(self.installed(), lib)
        with open(self.bin_dest, "rb") as f:
            self.assertEqual(f.read(), cli)
        self.assertTrue(os.access(self.bin_dest, os.X_OK), "the command is executable")
        self.assertIn("installed the chimera command", out.stderr)

    def test_a_release_without_the_command_still_gives_the_library_and_says_so(self):
        lib = b"\x7fELF pretend library"
        self.publish(lib, hashlib.sha256(lib).hexdigest())
        out = self.run_build()
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(self.installed(), lib)
        self.assertIn("no prebuilt chimera command", out.stderr)
        self.assertFalse(os.path.exists(self.bin_dest))

    def test_a_tampered_command_refuses_the_release(self):
        lib = b"\x7fELF pretend library"
        self.publish(lib, hashlib.sha256(lib).hexdigest())
        self.publish(b"tampered", "0" * 64, BIN_ASSET)
        out = self.run_build()
        self.assertNotEqual(out.returncode, 0)
        self.assertIn(f"checksum mismatch for {BIN_ASSET}", out.stderr)
        self.assertEqual(self.installed(), b"old library", "nothing of that release is installed")
        self.assertFalse(os.path.exists(self.bin_dest))
        leftovers = [n for n in os.listdir(os.path.dirname(self.bin_dest)) if n.startswith(".chimera")]
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


def git(repo, *args):
    subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True,
                   env=dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t",
                            GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t"))


class ReleaseChoiceTest(Served):
    """Which release's asset a checkout takes: untagged checkouts use the
    nearest release when no native source changed since; the Neovim that
    runs the build decides the asset's Neovim version; musl gets its own."""

    def setUp(self):
        super().setUp()
        # A checkout of its own: build.sh works from its script's repo.
        self.repo = tempfile.mkdtemp()
        os.makedirs(os.path.join(self.repo, "scripts"))
        os.makedirs(os.path.join(self.repo, "src"))
        os.makedirs(os.path.join(self.repo, "lua"))
        for name in ("build.sh", "native-sources"):
            with open(os.path.join(REPO, "scripts", name), "rb") as f, \
                    open(os.path.join(self.repo, "scripts", name), "wb") as g:
                g.write(f.read())
        os.chmod(os.path.join(self.repo, "scripts/build.sh"), 0o755)
        self.write("src/lib.rs", "fn main() {}\n")
        self.write("lua/init.lua", "return 1\n")
        git(self.repo, "init", "-q")
        git(self.repo, "add", "-A")
        git(self.repo, "commit", "-qm", "release")
        git(self.repo, "tag", TAG)
        self.data = b"\x7fELF release library"
        self.publish(self.data, hashlib.sha256(self.data).hexdigest())

    def write(self, rel, text):
        with open(os.path.join(self.repo, rel), "w") as f:
            f.write(text)

    def build(self, env=None, argv=None):
        env = dict(os.environ, CHIMERA_RELEASE_URL=self.url, CHIMERA_NO_SOURCE_BUILD="1",
                   CHIMERA_LIB_DEST=self.dest, CHIMERA_BIN_DEST=self.bin_dest, **(env or {}))
        env.pop("CHIMERA_TAG", None)
        env.setdefault("CHIMERA_NVIM_MINOR", "0.11")
        argv = argv or [os.path.join(self.repo, "scripts/build.sh")]
        return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)

    def test_at_the_tag_its_asset_is_installed(self):
        out = self.build()
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(self.installed(), self.data)

    def test_untagged_with_the_same_native_sources_takes_the_nearest_release(self):
        self.write("lua/init.lua", "return 2\n")
        git(self.repo, "commit", "-qam", "lua only")
        out = self.build()
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn(f"{TAG}'s library fits", out.stderr)
        self.assertEqual(self.installed(), self.data)

    def test_changed_native_sources_are_built_not_downloaded(self):
        self.write("src/lib.rs", "fn main() { changed() }\n")
        git(self.repo, "commit", "-qam", "native change")
        out = self.build()
        self.assertNotEqual(out.returncode, 0)
        self.assertIn(f"the native sources changed since {TAG}", out.stderr)
        self.assertIn("source build disabled", out.stderr, "it went to build instead")
        self.assertEqual(self.installed(), b"old library")

    def test_an_uncommitted_native_change_counts_too(self):
        self.write("src/lib.rs", "fn main() { local() }\n")
        out = self.build()
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("the native sources changed", out.stderr)
        self.assertEqual(self.installed(), b"old library")

    def test_the_neovim_running_the_build_decides_not_the_one_on_path(self):
        nvim = subprocess.run([os.path.join(REPO, "scripts/install-nvim.sh")], capture_output=True,
                              text=True, check=True).stdout.strip()
        # An old Neovim first on PATH, as Debian's 0.7 would be.
        fake = tempfile.mkdtemp()
        with open(os.path.join(fake, "nvim"), "w") as f:
            f.write("#!/bin/sh\necho 'NVIM v0.7.2'\n")
        os.chmod(os.path.join(fake, "nvim"), 0o755)
        env = {"PATH": fake + os.pathsep + os.environ["PATH"], "CHIMERA_NVIM_MINOR": ""}
        out = self.build(env)
        self.assertNotEqual(out.returncode, 0, "run from a shell, the 0.7 on PATH is asked")
        self.assertIn("nvim0.7", out.stderr)
        script = os.path.join(fake, "build.lua")
        with open(script, "w") as f:
            f.write("local r = vim.system({ %r }):wait()\nio.stderr:write(r.stderr)\nos.exit(r.code)\n"
                    % os.path.join(self.repo, "scripts/build.sh"))
        out = self.build(env, [nvim, "--headless", "--clean", "-l", script])
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("Neovim 0.11 (" + nvim, out.stderr)
        self.assertEqual(self.installed(), self.data)

    def test_musl_takes_the_musl_asset(self):
        if OS != "linux":
            self.skipTest("musl is Linux's")
        musl = f"chimera_native-linux-musl-{ARCH}-nvim0.11.so"
        data = b"\x7fELF musl library"
        with open(os.path.join(self.serve, TAG, musl), "wb") as f:
            f.write(data)
        with open(os.path.join(self.serve, TAG, musl + ".sha256"), "w") as f:
            f.write(hashlib.sha256(data).hexdigest() + "  " + musl + "\n")
        out = self.build({"CHIMERA_LIBC": "musl"})
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(self.installed(), data)


class VersionTest(unittest.TestCase):
    def test_lua_version_matches_cargo(self):
        with open(os.path.join(REPO, "Cargo.toml")) as f:
            cargo = next(l for l in f if l.startswith("version")).split('"')[1]
        with open(os.path.join(REPO, "lua/chimera/version.lua")) as f:
            lua = next(l for l in f if l.startswith("return")).split('"')[1]
        self.assertEqual(cargo, lua, "bump lua/chimera/version.lua with Cargo.toml")


if __name__ == "__main__":
    unittest.main(verbosity=2)
