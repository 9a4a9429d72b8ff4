"""The captures and golden files under tests/fixtures/, and loading one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent.parent / "fixtures"


def load_fixture(name: str) -> Any:
    path = FIXTURES / name
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return json.loads(path.read_text())
