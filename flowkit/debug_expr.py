"""The condition language of breakpoints: a small, safe expression over working memory.

A condition is text such as ``len(documents) < 2 and "Tessel" in answer`` or
``judgement.score >= 0.5 or visit > 2``. It is read by a hand-written tokenizer and a
recursive-descent parser into a tree of the classes below and evaluated by walking that tree;
nothing is ever handed to Python's ``eval``, ``exec`` or ``compile``, so a condition can only read
memory values, never call or import anything.

Grammar (lowest precedence first)::

    expr    := and ('or' and)*
    and     := not ('and' not)*
    not     := 'not' not | compare
    compare := operand (('=='|'!='|'<'|'<='|'>'|'>='|'in'|'not' 'in') operand)?
    operand := atom ('.' NAME | '[' expr ']')*
    atom    := NUMBER | STRING | true | false | null | NAME | 'len' '(' expr ')'
             | '(' expr ')' | '[' (expr (',' expr)*)? ']'

Names are working-memory keys (question, queries, documents, answer, judgement, ...), the engine's
counters (steps, llm_calls, tokens) and ``visit`` (the visit of the breakpoint's node). A key not yet
in memory reads as null; ``len(null)`` is 0; ``x in null`` is false; ordering null against a value is
false. Errors name the position (1-based column) of the culprit.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import FlowkitError
from .memory import COUNTERS, OPERATOR_KEYS, kind_of

#: Names a condition may read besides working-memory keys.
COUNTER_NAMES: tuple[str, ...] = ("visit", *COUNTERS)
#: Every name a condition may read.
NAMES: tuple[str, ...] = (*OPERATOR_KEYS, *COUNTER_NAMES)
#: The longest condition accepted, in characters.
MAX_LENGTH = 500
#: How deeply a condition may nest (brackets, not, subscripts).
MAX_DEPTH = 32

_LITERALS: dict[str, Any] = {"true": True, "false": False, "null": None,
                             "True": True, "False": False, "None": None}
_KEYWORDS = {"and", "or", "not", "in", "len"}
_COMPARE = ("==", "!=", "<=", ">=", "<", ">")
_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<num>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
  | (?P<str>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>==|!=|<=|>=|<|>|\(|\)|\[|\]|\.|,|-)
""", re.VERBOSE)
_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'"}


class ExprError(FlowkitError):
    """A condition that does not parse, names an unknown key, or cannot be evaluated.

    `position` is the 1-based column of the culprit (0 when the error is about the whole text)."""

    def __init__(self, message: str, position: int = 0, source: str = "") -> None:
        self.detail, self.position, self.source = message, position, source
        where = f" at column {position}" if position else ""
        super().__init__(f"{message}{where}")


@dataclass(frozen=True)
class Tok:
    kind: str      # num | str | name | op | end
    text: str
    pos: int       # 1-based column


@dataclass(frozen=True)
class Lit:
    """A literal: number, string, true/false/null."""

    value: Any
    pos: int


@dataclass(frozen=True)
class Name:
    """A memory key or counter."""

    name: str
    pos: int


@dataclass(frozen=True)
class ListLit:
    """A list of expressions: ``["a", "b"]``."""

    items: tuple[Node, ...]
    pos: int


@dataclass(frozen=True)
class Attr:
    """``value.field``: a field of a dict (judgement.score, scratch.key)."""

    value: Node
    field: str
    pos: int


@dataclass(frozen=True)
class Index:
    """``value[index]``: an item of a list or a field of a dict."""

    value: Node
    index: Node
    pos: int


@dataclass(frozen=True)
class Len:
    """``len(value)``."""

    value: Node
    pos: int


@dataclass(frozen=True)
class Not:
    value: Node
    pos: int


@dataclass(frozen=True)
class BoolOp:
    """``and`` / ``or`` over two or more operands (short-circuit)."""

    op: str
    values: tuple[Node, ...]
    pos: int


@dataclass(frozen=True)
class Compare:
    """A comparison: ==, !=, <, <=, >, >=, in, not in."""

    op: str
    left: Node
    right: Node
    pos: int


Node = Lit | Name | ListLit | Attr | Index | Len | Not | BoolOp | Compare


def tokenize(text: str) -> list[Tok]:
    """The tokens of `text`, or ExprError at the first character that starts none."""
    out: list[Tok] = []
    i = 0
    while i < len(text):
        m = _TOKEN.match(text, i)
        if m is None:
            raise ExprError(f"unexpected character {text[i]!r}", i + 1, text)
        kind = m.lastgroup or ""
        if kind != "ws":
            out.append(Tok(kind, m.group(), i + 1))
        i = m.end()
    out.append(Tok("end", "", len(text) + 1))
    return out


def _unquote(tok: Tok) -> str:
    body = tok.text[1:-1]
    out, i = [], 0
    while i < len(body):
        c = body[i]
        if c == "\\":
            nxt = body[i + 1]
            if nxt not in _ESCAPES:
                raise ExprError(f"unknown escape '\\{nxt}' in a string", tok.pos + i + 1)
            out.append(_ESCAPES[nxt])
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


class _Parser:
    def __init__(self, text: str, names: tuple[str, ...]) -> None:
        self.text = text
        self.toks = tokenize(text)
        self.i = 0
        self.depth = 0
        self.names = names

    @property
    def tok(self) -> Tok:
        return self.toks[self.i]

    def fail(self, message: str, tok: Tok | None = None) -> ExprError:
        t = tok or self.tok
        return ExprError(message, t.pos, self.text)

    def take(self, text: str) -> bool:
        if self.tok.kind in ("op", "name") and self.tok.text == text:
            self.i += 1
            return True
        return False

    def expect(self, text: str, what: str) -> None:
        if not self.take(text):
            got = f"'{self.tok.text}'" if self.tok.kind != "end" else "the end"
            raise self.fail(f"expected {what}, found {got}")

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.fail(f"nested more than {MAX_DEPTH} levels deep")

    def parse(self) -> Node:
        if not self.text.strip():
            raise ExprError("the condition is empty", 0, self.text)
        node = self.expr()
        if self.tok.kind != "end":
            raise self.fail(f"unexpected '{self.tok.text}' after a complete condition")
        return node

    def expr(self) -> Node:
        self.enter()
        pos = self.tok.pos
        values = [self.and_()]
        while self.take("or"):
            values.append(self.and_())
        self.depth -= 1
        return values[0] if len(values) == 1 else BoolOp("or", tuple(values), pos)

    def and_(self) -> Node:
        pos = self.tok.pos
        values = [self.not_()]
        while self.take("and"):
            values.append(self.not_())
        return values[0] if len(values) == 1 else BoolOp("and", tuple(values), pos)

    def not_(self) -> Node:
        pos = self.tok.pos
        if self.take("not"):
            self.enter()
            node = Not(self.not_(), pos)
            self.depth -= 1
            return node
        return self.compare()

    def compare(self) -> Node:
        left = self.operand()
        tok = self.tok
        op = ""
        if tok.kind == "op" and tok.text in _COMPARE:
            op = tok.text
            self.i += 1
        elif self.take("in"):
            op = "in"
        elif tok.kind == "name" and tok.text == "not":
            self.i += 1
            if not self.take("in"):
                raise self.fail("expected 'in' after 'not'")
            op = "not in"
        if not op:
            return left
        right = self.operand()
        nxt = self.tok
        if (nxt.kind == "op" and nxt.text in _COMPARE) or (nxt.kind == "name" and nxt.text == "in"):
            raise self.fail("chained comparisons are not supported; join them with 'and'", nxt)
        return Compare(op, left, right, tok.pos)

    def operand(self) -> Node:
        node = self.atom()
        while True:
            pos = self.tok.pos
            if self.take("."):
                tok = self.tok
                if tok.kind != "name":
                    raise self.fail("expected a field name after '.'")
                self.i += 1
                node = Attr(node, tok.text, pos)
            elif self.take("["):
                self.enter()
                node = Index(node, self.expr(), pos)
                self.expect("]", "']'")
                self.depth -= 1
            else:
                return node

    def atom(self) -> Node:
        tok = self.tok
        if tok.kind == "num":
            self.i += 1
            return Lit(float(tok.text) if any(c in tok.text for c in ".eE") else int(tok.text),
                       tok.pos)
        if tok.kind == "op" and tok.text == "-" and self.toks[self.i + 1].kind == "num":
            self.i += 1
            lit = self.atom()
            assert isinstance(lit, Lit)
            return Lit(-lit.value, tok.pos)
        if tok.kind == "str":
            self.i += 1
            return Lit(_unquote(tok), tok.pos)
        if tok.kind == "name":
            if tok.text in _LITERALS:
                self.i += 1
                return Lit(_LITERALS[tok.text], tok.pos)
            if tok.text == "len":
                self.i += 1
                self.expect("(", "'(' after len")
                self.enter()
                inner = self.expr()
                self.depth -= 1
                self.expect(")", "')' closing len(")
                return Len(inner, tok.pos)
            if tok.text in _KEYWORDS:
                raise self.fail(f"expected a value, found '{tok.text}'")
            if tok.text not in self.names:
                raise self.fail(f"unknown key '{tok.text}'; known: {', '.join(self.names)}")
            self.i += 1
            return Name(tok.text, tok.pos)
        if self.take("("):
            self.enter()
            inner = self.expr()
            self.depth -= 1
            self.expect(")", "')'")
            return inner
        if self.take("["):
            self.enter()
            items: list[Node] = []
            if not self.take("]"):
                items.append(self.expr())
                while self.take(","):
                    items.append(self.expr())
                self.expect("]", "']' or ','")
            self.depth -= 1
            return ListLit(tuple(items), tok.pos)
        got = f"'{tok.text}'" if tok.kind != "end" else "the end of the condition"
        raise self.fail(f"expected a value, found {got}")


def parse(text: str, names: tuple[str, ...] = NAMES) -> Node:
    """The tree of a condition, or ExprError naming what is wrong and where (1-based column)."""
    if not isinstance(text, str):
        raise ExprError(f"a condition is text, not {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise ExprError(f"the condition is {len(text)} characters; at most {MAX_LENGTH}", 0, text)
    return _Parser(text, names).parse()


def names_of(node: Node) -> set[str]:
    """Every memory key or counter the condition reads."""
    if isinstance(node, Name):
        return {node.name}
    if isinstance(node, Lit):
        return set()
    if isinstance(node, ListLit):
        return set().union(*(names_of(i) for i in node.items)) if node.items else set()
    if isinstance(node, Attr | Len | Not):
        return names_of(node.value)
    if isinstance(node, Index):
        return names_of(node.value) | names_of(node.index)
    if isinstance(node, BoolOp):
        return set().union(*(names_of(v) for v in node.values))
    return names_of(node.left) | names_of(node.right)


def truthy(value: object) -> bool:
    """What counts as true: non-empty text and lists, non-zero numbers, true."""
    return bool(value)


def evaluate(node: Node, env: Mapping[str, Any], source: str = "") -> object:
    """The value of a parsed condition over `env` (memory keys and counters); ExprError on a type
    that does not fit (ordering text against a number, len of a number)."""
    if isinstance(node, Lit):
        return node.value
    if isinstance(node, Name):
        return env.get(node.name)
    if isinstance(node, ListLit):
        return [evaluate(i, env, source) for i in node.items]
    if isinstance(node, Attr):
        base = evaluate(node.value, env, source)
        if base is None:
            return None
        if not isinstance(base, Mapping):
            raise ExprError(f"'.{node.field}' needs an object, got {kind_of(base)}", node.pos, source)
        return base.get(node.field)
    if isinstance(node, Index):
        base, key = evaluate(node.value, env, source), evaluate(node.index, env, source)
        if base is None:
            return None
        if isinstance(base, Mapping):
            return base.get(key) if isinstance(key, str) else None
        if isinstance(base, list | str) and isinstance(key, int) and not isinstance(key, bool):
            return base[key] if -len(base) <= key < len(base) else None
        raise ExprError(f"cannot index {kind_of(base)} with {kind_of(key)}", node.pos, source)
    if isinstance(node, Len):
        value = evaluate(node.value, env, source)
        if value is None:
            return 0
        if isinstance(value, str | list | Mapping):
            return len(value)
        raise ExprError(f"len() needs text, a list or an object, got {kind_of(value)}", node.pos, source)
    if isinstance(node, Not):
        return not truthy(evaluate(node.value, env, source))
    if isinstance(node, BoolOp):
        if node.op == "and":
            result: Any = True
            for v in node.values:
                result = evaluate(v, env, source)
                if not truthy(result):
                    return False
            return True
        for v in node.values:
            if truthy(evaluate(v, env, source)):
                return True
        return False
    return _compare(node, evaluate(node.left, env, source), evaluate(node.right, env, source), source)


def _hashable(v: object) -> bool:
    return v is None or isinstance(v, str | int | float | bool)


def _compare(node: Compare, a: Any, b: Any, source: str) -> bool:  # noqa: ANN401 - JSON values
    op = node.op
    if op == "==":
        return bool(a == b)
    if op == "!=":
        return bool(a != b)
    if op in ("in", "not in"):
        if b is None:
            found = False
        elif isinstance(b, str):
            if not isinstance(a, str):
                raise ExprError(f"'in' text needs text on the left, got {kind_of(a)}", node.pos, source)
            found = a in b
        elif isinstance(b, Mapping):
            if not _hashable(a):        # a list or an object is never a key
                raise ExprError(f"'in' an object needs a key (text, a number) on the left, got "
                                f"{kind_of(a)}", node.pos, source)
            found = a in b
        elif isinstance(b, list):
            found = a in b
        else:
            raise ExprError(f"'in' needs text, a list or an object on the right, got {kind_of(b)}",
                            node.pos, source)
        return found if op == "in" else not found
    if a is None or b is None:
        return False
    numbers = (isinstance(a, int | float) and not isinstance(a, bool)
               and isinstance(b, int | float) and not isinstance(b, bool))
    if not numbers and not (isinstance(a, str) and isinstance(b, str)):
        raise ExprError(f"cannot order {kind_of(a)} against {kind_of(b)} with '{op}'", node.pos, source)
    if op == "<":
        return bool(a < b)
    if op == "<=":
        return bool(a <= b)
    if op == ">":
        return bool(a > b)
    return bool(a >= b)


@dataclass(frozen=True)
class Condition:
    """A parsed condition with its text; `holds(env)` evaluates it."""

    text: str
    tree: Node

    @classmethod
    def of(cls, text: str) -> Condition:
        return cls(text, parse(text))

    def holds(self, env: Mapping[str, Any]) -> bool:
        """Whether the condition holds over `env`; ExprError (never another exception) when a
        value does not fit, so a bad condition is reported on its breakpoint, not the run's end."""
        try:
            return truthy(evaluate(self.tree, env, self.text))
        except ExprError:
            raise
        except (TypeError, ValueError, OverflowError, RecursionError) as e:
            raise ExprError(f"cannot be evaluated on these values ({type(e).__name__}: "
                            f"{str(e)[:120]})", 0, self.text) from None
