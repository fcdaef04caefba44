"""Flow search: a budgeted search over structure, parameters and models (issue 26).

`space` reads and validates the search-space file, `candidates` turns its points into flow specs,
`study` asks Optuna for them in waves, each told the results of the waves before, `racing` races them on growing batches of questions and drops those a
paired interval shows worse, `front` keeps the quality / cost front, and `state` keeps a search's
progress beside the space so it resumes. `service.search` runs it all through the evaluation
runner; `flowkit search SPACE ...` is its command.
"""
