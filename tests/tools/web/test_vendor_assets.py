"""scripts/vendor_web_assets.py: the lock is complete, a tarball is checked before anything
is copied, and an unreachable registry is one line and exit 3 (no network: a local URL)."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import io
import os
import tarfile
import tomllib

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


@pytest.fixture
def script():
    spec = importlib.util.spec_from_file_location("vendor_web_assets",
                                                  os.path.join(ROOT, "scripts", "vendor_web_assets.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tarball(files):
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        for name, content in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
    return out.getvalue()


def test_the_lock_pins_every_asset_the_pages_load(script):
    with open(script.LOCK, "rb") as f:
        lock = tomllib.load(f)
    targets = {t for entry in lock.values() for t in entry["files"].values()}
    assert targets == {"htmx.min.js", "sse.js", "uPlot.iife.min.js", "uPlot.min.css"}
    for entry in lock.values():
        assert entry["integrity"].startswith("sha512-") and entry["version"][0].isdigit()
    base = open(os.path.join(ROOT, "src", "kstream", "tools", "web", "templates", "base.html")).read()
    for target in targets:
        assert f"/static/vendor/{target}" in base


def test_integrity_is_checked(script):
    data = tarball({"package/dist/a.js": b"x"})
    good = "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()
    script._check_integrity(data, good, "pkg@1")
    with pytest.raises(ValueError, match="sha512 mismatch"):
        script._check_integrity(data + b"!", good, "pkg@1")
    with pytest.raises(ValueError, match="not sha512"):
        script._check_integrity(data, "sha1-abc", "pkg@1")
    assert script._extract(data, {"package/dist/a.js": "a.js"}, "pkg@1") == {"a.js": b"x"}
    with pytest.raises(ValueError, match="no file package/missing.js"):
        script._extract(data, {"package/missing.js": "m.js"}, "pkg@1")


def test_an_unreachable_registry_is_one_line_and_exit_3(script, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(script, "VENDOR", str(tmp_path / "vendor"))
    monkeypatch.setattr(script, "STAMP", str(tmp_path / "vendor" / ".lock-sha256"))
    monkeypatch.setenv("KSTREAM_NPM_REGISTRY", "http://127.0.0.1:9")  # discard port: refused at once
    assert script.main() == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unreachable" in err
    assert os.listdir(tmp_path / "vendor") == []
