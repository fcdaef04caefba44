"""Question sets generated from a knowledge base (evaluation without gold answers).

`facts` reads facts off a passage by rule, `candidates` builds single-hop, bridge and comparison
questions from them, `tables` asks a manual's table rows by their key and a column header,
`manual` asks its prose (defaults, limits, commands, definitions), `checks` has the model read each one back, and `generate` runs the whole in a
seeded, cached, resumable loop. The CLI and the studio reach it through `service.questiongen`.
"""
