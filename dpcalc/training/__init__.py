"""What a training loop uses: PrivacyAccountant, a stateful accountant fed step by step
(accountant.py), OpacusAccountant, its adapter for Opacus's PrivacyEngine (opacus.py), and
the federated helpers (federated.py).

May import: calibration, accountants, pb, models, params, errors. Never imports torch or
opacus.
"""
