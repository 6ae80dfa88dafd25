"""Fetch the console's browser assets (htmx, its SSE extension, uPlot) from the npm registry.

Reads ``src/kstream/tools/web/assets.lock``: per package the pinned version, the tarball's
integrity (npm's ``dist.integrity``: base64 sha512) and which files to copy. Each tarball
is downloaded from ``https://registry.npmjs.org/NAME/-/BASENAME-VERSION.tgz`` (or
``$KSTREAM_NPM_REGISTRY``), checked against the lock (a mismatch is an error: nothing is
copied), and the listed files land in ``src/kstream/tools/web/static/vendor/`` (git-ignored).
Files already there from the same lock are kept (a stamp file records the lock's hash).

Exit status: 0 done, 2 a checksum mismatch or a broken lock, 3 the registry is
unreachable (one line says so; the console still serves every page, without live
parts, and charts fall back to tables).
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import sys
import tarfile
import tomllib
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOCK = os.path.join(ROOT, "src", "kstream", "tools", "web", "assets.lock")
VENDOR = os.path.join(ROOT, "src", "kstream", "tools", "web", "static", "vendor")
STAMP = os.path.join(VENDOR, ".lock-sha256")
MAX_TARBALL_BYTES = 8 << 20  # the three packages are well under 1 MiB each
TIMEOUT_S = 30


def _tarball_url(registry: str, package: str, version: str) -> str:
    basename = package.rsplit("/", 1)[-1]
    return f"{registry.rstrip('/')}/{package}/-/{basename}-{version}.tgz"


def _fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
        data = response.read(MAX_TARBALL_BYTES + 1)
    if len(data) > MAX_TARBALL_BYTES:
        raise ValueError(f"{url}: larger than {MAX_TARBALL_BYTES} bytes")
    return data


def _check_integrity(data: bytes, integrity: str, what: str) -> None:
    algorithm, _, expected = integrity.partition("-")
    if algorithm != "sha512":
        raise ValueError(f"{what}: integrity {integrity!r} is not sha512-<base64>")
    actual = base64.b64encode(hashlib.sha512(data).digest()).decode()
    if actual != expected:
        raise ValueError(f"{what}: sha512 mismatch (lock {expected}, tarball {actual}); not copied")


def _extract(data: bytes, files: dict[str, str], what: str) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        for member, target in files.items():
            try:
                handle = archive.extractfile(member)
            except KeyError:
                handle = None
            if handle is None:
                raise ValueError(f"{what}: the tarball has no file {member}")
            found[target] = handle.read()
    return found


def _write(target: str, content: bytes) -> None:
    tmp = target + ".tmp"
    with open(tmp, "wb") as f:
        f.write(content)
    os.replace(tmp, target)


def main() -> int:
    with open(LOCK, "rb") as f:
        raw = f.read()
    lock_hash = hashlib.sha256(raw).hexdigest()
    if os.path.exists(STAMP) and open(STAMP).read().strip() == lock_hash:
        return 0
    registry = os.environ.get("KSTREAM_NPM_REGISTRY", "https://registry.npmjs.org")
    os.makedirs(VENDOR, exist_ok=True)
    try:
        for entry in tomllib.loads(raw.decode()).values():
            what = f"{entry['package']}@{entry['version']}"
            data = _fetch(_tarball_url(registry, entry["package"], entry["version"]))
            _check_integrity(data, entry["integrity"], what)
            for target, content in _extract(data, entry["files"], what).items():
                _write(os.path.join(VENDOR, os.path.basename(target)), content)
    except (urllib.error.URLError, TimeoutError, OSError) as err:
        print(f"vendor-web-assets: the npm registry ({registry}) is unreachable ({err}); the console "
              "works without live updates and charts", file=sys.stderr)
        return 3
    except (ValueError, KeyError, tarfile.TarError) as err:
        print(f"vendor-web-assets: {err}", file=sys.stderr)
        return 2
    _write(STAMP, lock_hash.encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
