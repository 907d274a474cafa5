#!/usr/bin/env python3
"""Puts real models' HuggingFace chat templates into a directory for router-tokenizer's conformance tests.

    fetch_chat_templates.py DIR

The templates are llama.cpp's `models/templates/*.jinja` (each one a model's `chat_template` as its Hugging Face
repository publishes it, fetched by llama.cpp's scripts/get_chat_template.py), as the pinned llama-cpp-python sdist
on PyPI vendors them (`vendor/llama.cpp/models/templates/`). The sdist is downloaded with pip (no build, no
install), checked against its pinned SHA-256, and only the templates are extracted. Nothing of it is committed.
Does nothing when DIR already holds this version's templates.
"""

import hashlib
import pathlib
import shutil
import subprocess
import sys
import tarfile
import tempfile

PACKAGE = "llama-cpp-python"
VERSION = "0.3.36"
SDIST = "llama_cpp_python-0.3.36.tar.gz"
SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
TEMPLATES = "/vendor/llama.cpp/models/templates/"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    target = pathlib.Path(sys.argv[1])
    stamp = target / "SOURCE"
    source = f"{PACKAGE}=={VERSION} sdist ({SDIST}, sha256 {SHA256}), {TEMPLATES.strip('/')}\n"
    if stamp.exists() and stamp.read_text() == source:
        return
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
                        "--no-binary", ":all:", f"{PACKAGE}=={VERSION}", "-d", tmp], check=True,
                       stdout=sys.stderr)
        archive = pathlib.Path(tmp) / SDIST
        digest = hashlib.sha256(archive.read_bytes()).hexdigest()
        if digest != SHA256:
            sys.exit(f"{archive.name}: sha256 {digest}, expected {SHA256}")
        staging = pathlib.Path(tmp) / "templates"
        staging.mkdir()
        count = 0
        with tarfile.open(archive) as tar:
            for member in tar.getmembers():
                name = member.name
                if member.isfile() and TEMPLATES in name and name.endswith(".jinja") and "/" not in name.split(
                        TEMPLATES, 1)[1]:
                    data = tar.extractfile(member).read()
                    (staging / name.rsplit("/", 1)[1]).write_bytes(data)
                    count += 1
        if count == 0:
            sys.exit(f"{archive.name} holds no {TEMPLATES}*.jinja")
        (staging / "SOURCE").write_text(source)
        if target.exists():
            shutil.rmtree(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(staging, target)
    print(f"{target}: {count} chat templates from {PACKAGE} {VERSION}", file=sys.stderr)


if __name__ == "__main__":
    main()
