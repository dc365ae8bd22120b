"""The classifier's evaluation data (issue #28): dev sets, the labelled runs, the held-out sets and
their loaders. It lives outside every product package so that nothing here ships in a runtime
wheel, and product code never imports it (``tests/test_heldout_leaks.py`` checks the other way
round too: no distinctive word of a held-out file appears in product code or data).

Read ``eval/README.md`` before opening a ``*never_tune*.json`` file: whoever changes a rule, a
threshold or a model never opens one."""

from __future__ import annotations

from pathlib import Path

# The folder that holds the data files: this package's parent (the package is installed editable).
DATA_DIR = Path(__file__).resolve().parent.parent
