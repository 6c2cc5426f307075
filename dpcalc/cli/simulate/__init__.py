"""`dpcalc simulate`: a NumPy DP-SGD run with live accounting (command.py); its options and
data (setup.py), the accounting beside training (accounting.py), the audit (audit.py), what
it found (model.py) and how it is shown (output.py)."""
