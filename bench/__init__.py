"""Benchmarks of the engine: the solver's cost per hand and self-play games per second.

Run with ``make bench`` (``.venv/bin/python -m bench``); ``--help`` lists the knobs. Figures
are printed as a table and merged into ``bench/results.json`` under the ``engine`` key.
"""

from __future__ import annotations
