"""`dpcalc pipelines`: the data pipelines by name and the model each one is (command.py),
and what a pipeline costs against Poisson and balls-in-bins (price.py)."""
