"""How a command's result reaches the user: numbers rounded on the safe side
(numbers.py), Rich tables, JSON and plain text (render.py, table_layout.py, records.py),
the budget gate (budget.py), the privacy statement (statement.py) and plots (plots.py).
Never computes."""
