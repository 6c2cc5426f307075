"""The numeric engine: discrete privacy loss distributions and their certified
composition. One step's pair discretised on a loss grid (discretise.py: connect-the-dots
upper, rounded lower), T-fold composition by FFT over a Chernoff window (fft_compose.py)
with its float-error bound (fft_error.py), tilted and body-and-jumps compositions for far
tails (tilt.py, jumps.py), read-outs of ε(δ) and ε curves (pld.py, tail_readout.py,
spectral_readout.py, curve_compose.py).

It sees a pair only through its interface (log_bucket_masses / log_tails, loss_range,
loss_moments), never a model. May import: numerics, params, errors.
"""
