"""`dpcalc completions SHELL`: the shell completion scripts, generated from the commands
(script.py) and printed from the package (command.py)."""
