"""The LICENSE file is the license setup.cfg declares (issue 20, item 9)."""

from __future__ import annotations

import configparser
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TITLES = {"Apache-2.0": ("Apache License", "Version 2.0, January 2004")}


def test_the_license_file_is_the_declared_license():
    config = configparser.ConfigParser()
    config.read(os.path.join(ROOT, "setup.cfg"))
    declared = config["metadata"]["license"]
    assert declared in TITLES, f"no expected title for {declared!r}"
    with open(os.path.join(ROOT, "LICENSE")) as f:
        head = [line.strip() for line in f.read().splitlines()[:3]]
    assert head[:2] == list(TITLES[declared])
    with open(os.path.join(ROOT, "LICENSE")) as f:
        assert "END OF TERMS AND CONDITIONS" in f.read()  # the whole text, not a pointer to it
