"""GPU name matching: reduce what NVML, nvidia-smi or a user types to one comparable key.

"NVIDIA A100-SXM4-80GB", "A100 80GB PCIe" and "nvidia a100" all become "a100";
"NVIDIA GeForce RTX 4090 Laptop GPU" becomes "rtx 4090 laptop"; "Tesla V100-SXM2-16GB" "v100".
"""

from __future__ import annotations

import re

# Brand words that some drivers print and others do not.
_BRANDS = {"nvidia", "geforce", "tesla"}
# Tokens that name a memory size, package or board variant, not a different chip.
_SUFFIX = re.compile(
    r"^(\d+\s?gb|pcie|pci|sxm\d*|hbm\d*e?|nvl|oam|mig|dgx|hgx|smx\d*|mxm|gddr\d*x?|nvlink)$"
)


MAX_NAME = 256  # no GPU name is longer; longer text is not matched (matching cost grows with it)


def normalize(name: str) -> str:
    """The matching key of a GPU name; empty (matches nothing) for text longer than MAX_NAME."""
    if len(name) > MAX_NAME:
        return ""
    text = name.lower().replace("(tm)", " ").replace("®", " ")
    text = re.sub(r"with max-?q design", " laptop ", text)
    text = re.sub(r"\bmax-?q\b", " laptop ", text)
    text = text.replace("laptop gpu", "laptop").replace("mobile", "laptop")
    text = re.sub(r"[-_/(),]+", " ", text)
    # "80gb" or "80 gb" → one token so the suffix rule can drop it
    text = re.sub(r"\b(\d+)\s+gb\b", r"\1gb", text)
    tokens = [t for t in text.split() if t not in _BRANDS and not _SUFFIX.match(t)]
    # "laptop" once, at the end
    laptop = "laptop" in tokens
    tokens = [t for t in tokens if t != "laptop"]
    if laptop:
        tokens.append("laptop")
    return " ".join(tokens)


def without_laptop(key: str) -> str | None:
    """The desktop key for a laptop key ("rtx 4090 laptop" → "rtx 4090"), else None."""
    if key.endswith(" laptop"):
        return key[: -len(" laptop")]
    return None
