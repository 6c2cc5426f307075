"""`dpcalc compare`: accountants, samplers and sweeps side by side (command.py), the sweep
grammar (sweep.py) and its tables and plots (output.py)."""
