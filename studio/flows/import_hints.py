"""A refused flow file's problems as the Flows page's Import box shows them: hints that say what
to do in the studio. The reader shared with the CLI (flowkit.validate.validate_bytes) ends some
hints with a command to type in a shell ("compare with a template: flowkit templates"); here
that command is replaced by the studio's own way to get a template's file."""
from __future__ import annotations

from dataclasses import replace

from flowkit.errors import Problem

#: (what a shared hint says, what the studio says instead), the longest first.
STUDIO_WAYS = (
    ("compare with a template: flowkit templates",
     "compare with a template's file: make a New flow from the template (beside this box), "
     "then Export it from its row below"),
    ("flowkit templates", "a New flow from a template (beside this box)"),
)
#: What marks a hint as naming the CLI (a test keeps the shown hints free of it).
CLI_MARK = "flowkit "


def for_the_studio(problem: Problem) -> Problem:
    """`problem` with a hint that names the studio's way instead of a shell command."""
    hint = problem.hint
    for cli, studio in STUDIO_WAYS:
        hint = hint.replace(cli, studio)
    return problem if hint == problem.hint else replace(problem, hint=hint)
