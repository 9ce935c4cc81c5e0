; Python's docstring is the first statement of its body: nothing to move.
