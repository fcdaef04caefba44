"""The small hierarchy of errors flowkit raises. Every message names what is wrong and where."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


class FlowkitError(Exception):
    """Base class of every error flowkit raises on purpose."""


#: How many characters of a user's value an error message quotes at most.
QUOTE_CHARS = 80


def short(value: object, limit: int = QUOTE_CHARS) -> str:
    """`value` as text for a message, cut to `limit` characters so errors never repeat the input.

    Lone surrogates are escaped, so the message itself can always be printed and stored."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


class SpecError(FlowkitError):
    """A flow file that cannot be read as a FlowSpec (malformed JSON, wrong shape, unknown version).

    `code` is a stable name of what is wrong (a validation code, e.g. 'too_deep'); `field` is the
    path of the culprit in the document ('nodes[3].label', 'schema_version') or None for the file.
    """

    def __init__(self, message: str, code: str = "spec_invalid", field: str | None = None,
                 source: str | None = None) -> None:
        self.detail, self.code, self.field, self.source = message, code, field, source
        where = ", ".join(x for x in (source, f"field '{field}'" if field else None) if x)
        super().__init__(f"[{code}] {where}: {message}" if where else f"[{code}] {message}")

    def at(self, source: str) -> SpecError:
        """The same error, naming the file or upload it came from."""
        return SpecError(self.detail, self.code, self.field, source)


@dataclass(frozen=True)
class Problem:
    """One validation finding: a stable code, the node (if any), the field path and a hint."""

    code: str
    message: str
    node: str | None = None
    field: str | None = None
    hint: str = ""
    severity: str = "error"

    def __str__(self) -> str:
        where = f"node '{self.node}'" if self.node else "flow"
        if self.field:
            where += f", field '{self.field}'"
        text = f"[{self.code}] {where}: {self.message}"
        return f"{text} (hint: {self.hint})" if self.hint else text

    def to_dict(self) -> dict[str, str | None]:
        return {"code": self.code, "message": self.message, "node": self.node,
                "field": self.field, "hint": self.hint, "severity": self.severity}


class ValidationError(FlowkitError):
    """A flow with one or more problems; `problems` lists every one of them."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"the flow has {len(problems)} problem(s):\n{lines}")


class NodeError(FlowkitError):
    """A failure inside one node's run, wrapped with the node's identity."""

    def __init__(self, node: str, operator: str, visit: int, cause: BaseException | str) -> None:
        self.node, self.operator, self.visit = node, operator, visit
        self.cause = cause
        reason = cause if isinstance(cause, str) else f"{type(cause).__name__}: {cause}"
        super().__init__(f"node '{node}' ({operator}, visit {visit}) failed: {reason}")


class OperatorInputError(FlowkitError):
    """An operator got params or memory it cannot work with; `field` names the culprit."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(f"{field}: {message}")


class ResourceError(FlowkitError):
    """A model file, knowledge base, database or server that is missing or unusable."""


class ContextOverflowError(ResourceError):
    """A prompt that does not fit the model's context window."""


class LLMServerError(ResourceError):
    """An LLM server (the model worker or an external one) answered with an error."""


class LLMUnreachable(LLMServerError):
    """The LLM server could not be reached or dropped the connection mid-answer."""


class LLMTimeout(LLMServerError):
    """The LLM server did not answer within the time the call allowed."""


class ModelProcessError(ResourceError):
    """The model worker process died, hung or could not start; it starts again on the next call."""


class StaleSaveError(FlowkitError):
    """A save based on an older version of a flow than the one stored."""

    def __init__(self, name: str, expected: int, actual: int) -> None:
        self.name, self.expected, self.actual = name, expected, actual
        super().__init__(f"flow '{name}' changed elsewhere: you edited version {expected}, "
                         f"the stored version is {actual}; reload or save under another name")


class NotFoundError(FlowkitError):
    """A flow, run, knowledge base or dataset that does not exist."""


class ExportError(FlowkitError):
    """A flow cannot be written as a package: the files it would replace without --force, or
    generated code that does not compile (a flowkit bug: nothing is written)."""


class GenerationStopped(FlowkitError):
    """A generation ended before its end because its caller asked (the client went away, or the
    request's deadline passed); `reason` says which, `tokens` how many had been generated."""

    def __init__(self, reason: str, tokens: int) -> None:
        super().__init__(f"generation stopped after {tokens} tokens: {reason}")
        self.reason, self.tokens = reason, tokens


class DocumentError(ResourceError):
    """A file that cannot be ingested: `path` (as given), `line` (1-based, a .jsonl line; None
    for the whole file) and `reason`, one sentence on what is wrong and what to do."""

    def __init__(self, path: Path, reason: str, line: int | None = None) -> None:
        self.path, self.reason, self.line = path, reason, line
        super().__init__(f"{self.where(str(path))}: {reason}")

    def where(self, name: str) -> str:
        """`name` (the file as the reader should know it), with ':<line>' when there is one."""
        return f"{name}:{self.line}" if self.line is not None else name
