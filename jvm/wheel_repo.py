"""Turn the installed pyspark wheel's jars into the Maven repository jvm/pom.xml compiles against.

Spark 4.3.0 as pyspark ships it is not on Maven Central, and the jar must run against exactly
the jars of the wheel it is installed beside. So every ``provided`` dependency of jvm/pom.xml
(Spark, Arrow, Jackson, SLF4J, ...) is taken from ``pyspark/jars`` of the interpreter that runs
this script: each is written, with a pom that declares no dependencies, into a file-layout
Maven repository (default ``jvm/.wheel-repo``, git-ignored) that the pom lists as the
``pyspark-wheel`` repository. Nothing of them is downloaded or bundled; Maven Central serves
only the build's plugins and JUnit.

This is also the version check: a ``provided`` dependency whose ``<artifactId>-<version>.jar``
is not in the wheel (the pom pins 4.3.0, the wheel ships 4.3.1) stops the build with a message
naming both. Exit codes: 0 written (or checked, with ``--check``), 2 a mismatch.

Usage: python jvm/wheel_repo.py [--check] [--repo DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
POM = os.path.join(HERE, "pom.xml")
DEFAULT_REPO = os.path.join(HERE, ".wheel-repo")
NS = {"m": "http://maven.apache.org/POM/4.0.0"}
PROPERTY = re.compile(r"\$\{([^}]+)\}")


@dataclass(frozen=True)
class Artifact:
    """One ``provided`` dependency of the pom, with its version properties resolved."""

    group_id: str
    artifact_id: str
    version: str

    @property
    def jar_name(self) -> str:
        return f"{self.artifact_id}-{self.version}.jar"


def provided_artifacts(pom_path: str = POM) -> list[Artifact]:
    """The pom's ``provided`` dependencies, in the pom's order."""
    root = ET.parse(pom_path).getroot()
    properties = {child.tag.split("}")[1]: (child.text or "").strip()
                  for child in root.findall("m:properties/*", NS)}

    def resolve(text: str) -> str:
        return PROPERTY.sub(lambda match: properties[match.group(1)], text.strip())

    found = []
    for dependency in root.findall("m:dependencies/m:dependency", NS):
        if (dependency.findtext("m:scope", "", NS) or "").strip() != "provided":
            continue
        found.append(Artifact(resolve(dependency.findtext("m:groupId", "", NS)),
                              resolve(dependency.findtext("m:artifactId", "", NS)),
                              resolve(dependency.findtext("m:version", "", NS))))
    return found


def wheel_jars_dir() -> str:
    """``pyspark/jars`` of the pyspark this interpreter imports."""
    import pyspark  # the wheel whose jars the reader runs against

    return os.path.join(os.path.dirname(os.path.abspath(pyspark.__file__)), "jars")


def mismatches(artifacts: list[Artifact], jars_dir: str) -> list[str]:
    """One line per provided dependency whose exact jar the wheel does not ship."""
    shipped = set(os.listdir(jars_dir))
    lines = []
    for artifact in artifacts:
        if artifact.jar_name in shipped:
            continue
        other = sorted(name for name in shipped
                       if re.fullmatch(re.escape(artifact.artifact_id) + r"-\d[^/]*\.jar", name))
        lines.append(f"jvm/pom.xml pins {artifact.artifact_id} {artifact.version}, but the pyspark "
                     f"wheel ({jars_dir}) ships {', '.join(other) or 'no such jar'}")
    return lines


def _pom_text(artifact: Artifact) -> str:
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<project xmlns="http://maven.apache.org/POM/4.0.0">\n'
            "  <modelVersion>4.0.0</modelVersion>\n"
            f"  <groupId>{artifact.group_id}</groupId>\n"
            f"  <artifactId>{artifact.artifact_id}</artifactId>\n"
            f"  <version>{artifact.version}</version>\n"
            "  <description>copied from the pyspark wheel by jvm/wheel_repo.py; no dependencies "
            "declared: the wheel provides them all</description>\n"
            "</project>\n")


def _write(path: str, data: bytes) -> None:
    """Write ``path`` and its ``.sha1`` (Maven checks it), via ``.tmp`` + rename."""
    for target, body in ((path, data), (path + ".sha1", hashlib.sha1(data).hexdigest().encode())):
        with open(target + ".tmp", "wb") as out:
            out.write(body)
        os.replace(target + ".tmp", target)


def write_repo(artifacts: list[Artifact], jars_dir: str, repo: str) -> None:
    """Write every artifact's jar and pom into the file-layout repository ``repo``."""
    for artifact in artifacts:
        directory = os.path.join(repo, *artifact.group_id.split("."), artifact.artifact_id,
                                 artifact.version)
        os.makedirs(directory, exist_ok=True)
        base = os.path.join(directory, f"{artifact.artifact_id}-{artifact.version}")
        with open(os.path.join(jars_dir, artifact.jar_name), "rb") as jar:
            data = jar.read()
        if not (os.path.exists(base + ".jar.sha1") and _same_sha1(base + ".jar.sha1", data)):
            _write(base + ".jar", data)
        _write(base + ".pom", _pom_text(artifact).encode())


def _same_sha1(sha1_path: str, data: bytes) -> bool:
    with open(sha1_path, encoding="ascii") as handle:
        return handle.read().strip() == hashlib.sha1(data).hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only check the versions")
    parser.add_argument("--repo", default=DEFAULT_REPO, help="the repository to write")
    args = parser.parse_args(argv)
    artifacts = provided_artifacts()
    jars_dir = wheel_jars_dir()
    problems = mismatches(artifacts, jars_dir)
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 2
    if not args.check:
        write_repo(artifacts, jars_dir, args.repo)
    return 0


if __name__ == "__main__":
    sys.exit(main())
