"""The user's data pipeline: the loaders people use mapped to the model their run is
(names.py: `--pipeline`, `dpcalc pipelines`), and batch samplers that draw exactly a model's
batches and report its Schedule (batch_samplers.py: a drop-in PyTorch batch_sampler), and
runs described by a file (schedule_file.py: `--schedule FILE`, PrivacyAccountant.history).

May import: models, params, errors (NumPy only, never torch).
"""
