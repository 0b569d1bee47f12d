"""scripts/bench as a Python package: see main.py; scripts/bench --help."""
