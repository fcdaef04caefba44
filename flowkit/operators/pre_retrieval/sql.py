"""Query construction: text-to-SQL over a SQLite database attached to the knowledge base.

The model writes one SELECT; `flowkit.runtime.kbsql` runs it read-only (URI mode=ro, an authorizer that allows
only reading, exactly one statement, a row limit and a time limit), so whatever the model writes,
the database file is never changed. `attached_db_path` and `attach_database` are re-exported here
for the studio and the CLI.
"""
from __future__ import annotations

import re
import sqlite3
from typing import Any, Literal

from pydantic import Field

from ...context import RunContext
from ...contract import Operator, OperatorParams, operator
from ...errors import OperatorInputError, ResourceError
from ...memory import Doc, MemoryView
from ...runtime.kbsql import (
    ATTACHED_FILE,
    Allowlist,
    QueryFailed,
    attach_database,
    attached_db_path,
    check_select,
    detach_database,
    load_allowlist,
    open_readonly,
    resolve_allowlist,
    run_select,
    schema_text,
)
from .._text import fill

__all__ = ["Allowlist", "TextToSQL", "attach_database", "attached_db_path", "detach_database",
           "extract_sql", "load_allowlist", "resolve_allowlist"]

SQL_PROMPT = ("{schema}\n\nWrite one SQLite query that answers the question.\n"
              "Question: {question}\nSQL: SELECT")
RETRY_PROMPT = ("{schema}\n\nThis query failed: {sql}\nError: {error}\n"
                "Write a corrected SQLite query that answers the question.\n"
                "Question: {question}\nSQL: SELECT")
_FENCE = re.compile(r"```[ \t]*(?:sqlite|sql)?[ \t]*\n?(.*?)(?:```|$)", re.S | re.I)
_LABEL = re.compile(r"^\s*(?:sqlite\s+query|sql\s+query|sqlite|sql|query)\s*:\s*", re.I)
_STATEMENT = re.compile(r"^(?:select|with|values|insert|update|delete|replace\s+into|create|drop|"
                        r"alter|attach|detach|pragma|vacuum|reindex|analyze|begin|commit|end|"
                        r"rollback|savepoint|release|explain)\b", re.I)


def extract_sql(reply: str, primer: str = "") -> str:
    """The SQL in a reply: a fenced block's body or the text, a 'SQL:' label removed; a bare
    continuation of a prompt that ends in `primer` (SELECT) gets the primer back."""
    text = reply.strip()
    fenced = _FENCE.search(text)
    if fenced:
        text = fenced.group(1).strip()
    text = _LABEL.sub("", text).strip()
    if primer and not _STATEMENT.match(text):
        text = f"{primer} {text}"
    return text.strip()


def _cell(value: object, limit: int) -> object:
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    return value[:limit] if isinstance(value, str) else value


def rows_to_docs(columns: list[str], rows: list[list[Any]], sql: str,
                 layout: str) -> list[Doc]:
    lines = ["; ".join(f"{c}: {'NULL' if v is None else v}" for c, v in zip(columns, r))
             for r in rows]
    meta = {"source": ATTACHED_FILE, "sql": sql}
    if layout == "table":
        return [Doc(id="sql:result", title="SQL result", text="\n".join(lines), score=1.0,
                    meta={**meta, "rows": len(rows)})] if rows else []
    return [Doc(id=f"sql:{i}", title=f"SQL row {i}", text=line, score=1.0, meta={**meta, "row": i})
            for i, line in enumerate(lines, 1)]


@operator("pre_retrieval.text_to_sql")
class TextToSQL(Operator["TextToSQL.Params"]):
    """Write one SQLite SELECT for the question, run it on the knowledge base's attached database
    and put the rows in memory (query construction, text-to-SQL).

    The prompt shows the tables and columns the database's allowlist allows (chosen when it was
    attached; by default every table). The query runs read-only: URI mode=ro, an authorizer that
    allows only reading allowlisted tables (no ATTACH, PRAGMA, writes or load_extension), exactly
    one statement without comments, at most `max_rows` rows and `timeout_s` seconds. Rows become documents
    (one per row, or one table) and `scratch` gets the sql, columns and rows. A query that fails to
    run is shown to the model with its error for `retries` more attempts; a refused (unsafe) query
    always ends the node with an error.
    """

    class Params(OperatorParams):
        prompt: str = Field(SQL_PROMPT, min_length=10, description="Template with {schema} and "
                            "{question} slots; ending it with SELECT primes the model's reply")
        max_tokens: int = Field(96, ge=16, le=512, description="Longest query in tokens")
        max_rows: int = Field(50, ge=1, le=1000, description="Rows kept from the result")
        timeout_s: float = Field(2.0, ge=0.05, le=30.0, description="Time limit of one query")
        retries: int = Field(1, ge=0, le=3, description="Extra attempts when a safe query fails to "
                             "run (its error is shown to the model)")
        on_error: Literal["raise", "empty"] = Field(
            "raise", description="When every attempt fails: end with an error, or write no rows "
            "and the error to scratch (unsafe queries always raise)")
        layout: Literal["per_row", "table"] = Field("per_row", description="One document per row, "
                                                    "or one document holding the whole table")
        append: bool = Field(False, description="Add the rows after the documents in memory "
                             "instead of replacing them")
        schema_chars: int = Field(2000, ge=100, le=20000, description="Longest schema shown")
        cell_chars: int = Field(200, ge=10, le=5000, description="Characters kept per text value")

    reads = ("question",)
    optional_reads = ("documents", "scratch")
    writes = ("documents", "scratch")

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        p, question = self.params, memory["question"]
        if not ctx.kb_name:
            raise OperatorInputError("kb.attached_database", "the run has no knowledge base; "
                                     "pass --kb NAME")
        path = attached_db_path(ctx.data_dir, ctx.kb_name)
        if not path.is_file():
            raise OperatorInputError("kb.attached_database", f"knowledge base '{ctx.kb_name}' has "
                                     f"no attached SQLite database (expected {path}); attach one "
                                     "first")
        primer = "SELECT" if p.prompt.rstrip().upper().endswith("SELECT") else ""
        try:
            conn = open_readonly(path)
        except sqlite3.Error as err:
            raise ResourceError(f"cannot open the attached database {path}: {err}") from None
        try:
            try:
                allow = load_allowlist(ctx.data_dir, ctx.kb_name) or \
                    resolve_allowlist(conn)
                schema = schema_text(conn, p.schema_chars, allow)
            except sqlite3.Error as err:
                raise ResourceError(f"cannot read the attached database {path}: {err}") from None
            prompt = fill(p.prompt, "params.prompt", question=question, schema=schema)
            attempt = 0
            while True:
                reply = ctx.llm.complete(prompt, max_tokens=p.max_tokens, stop=[";", "\n\n"]).text
                sql = check_select(extract_sql(reply, primer))   # unsafe: raises, never retried
                try:
                    columns, rows, truncated = run_select(conn, sql, p.max_rows, p.timeout_s, allow)
                except QueryFailed as failed:
                    if failed.retry and attempt < p.retries:
                        attempt += 1
                        prompt = fill(RETRY_PROMPT if primer else p.prompt, "params.prompt",
                                      question=question, schema=schema, sql=sql,
                                      error=str(failed))
                        continue
                    if p.on_error == "raise":
                        raise OperatorInputError("sql", f"{failed} (query: {sql})") from None
                    return self._write(memory, ctx, sql, [], [], False, str(failed))
                cells = [[_cell(v, p.cell_chars) for v in r] for r in rows]
                return self._write(memory, ctx, sql, columns, cells, truncated, "")
        finally:
            conn.close()

    def _write(self, memory: MemoryView, ctx: RunContext, sql: str, columns: list[str],
               rows: list[list[Any]], truncated: bool, error: str) -> dict[str, Any]:
        docs = rows_to_docs(columns, rows, sql, self.params.layout)
        ctx.record_retrieval(sql, "sql", docs)
        if self.params.append:
            kept = [d for d in memory.get("documents") or []
                    if not str(d.get("id")).startswith("sql:")]
            docs = kept + docs
        result: dict[str, Any] = {"sql": sql, "columns": columns, "rows": rows,
                                  "truncated": truncated}
        if error:
            result["error"] = error
        return {"documents": docs, "scratch": {**(memory.get("scratch") or {}), **result}}
