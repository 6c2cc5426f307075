"""`dpcalc group`: group privacy for k records (command.py) and its figures (plots.py)."""
