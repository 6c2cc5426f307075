"""The command-line layer: the only code that imports typer or rich. app.py builds the Typer
app and maps errors to exit codes; options.py and schedule_options.py hold the options the
commands share; one module per command (epsilon, delta, sigma, risk, report) or one
sub-package where a command has grown several (compare, group, simulate, completions);
output/ renders every result.

May import any dpcalc package; nothing imports it but __main__.
"""
