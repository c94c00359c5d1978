"""The adapters' tests import their shared tools (search_kit) from this folder."""

from __future__ import annotations

import sys
from pathlib import Path

# --import-mode=importlib puts no test folder on sys.path: this one is added for search_kit.
sys.path.insert(0, str(Path(__file__).parent))
