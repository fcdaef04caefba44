"""Typed SQLAlchemy 2.0 models: flows and their versions, runs and their steps, datasets, evaluations."""
from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, DateTime, Float, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


class FlowRow(Base):
    """A named flow; `version` is the optimistic-lock counter (a save names the version it edited)."""

    __tablename__ = "flows"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True, index=True)
    description: Mapped[str] = mapped_column(Text, default="")
    version: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class FlowVersionRow(Base):
    """One saved version of a flow: the whole spec as JSON."""

    __tablename__ = "flow_versions"
    __table_args__ = (UniqueConstraint("flow_id", "version"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    flow_id: Mapped[int] = mapped_column(ForeignKey("flows.id", ondelete="CASCADE"), index=True)
    version: Mapped[int] = mapped_column(Integer)
    spec: Mapped[dict[str, Any]] = mapped_column(JSON)
    message: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class RunRow(Base):
    """One run: what ran (resolved spec, model hash, settings) and how it ended, with totals."""

    __tablename__ = "runs"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    flow_name: Mapped[str] = mapped_column(String(200), index=True)
    flow_version: Mapped[int | None] = mapped_column(Integer, nullable=True)
    spec: Mapped[dict[str, Any]] = mapped_column(JSON)
    operator_versions: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    question: Mapped[str] = mapped_column(Text)
    kb: Mapped[str] = mapped_column(String(100), default="")
    model_id: Mapped[str] = mapped_column(String(300), default="")
    model_hash: Mapped[str] = mapped_column(String(128), default="")
    settings: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    status: Mapped[str] = mapped_column(String(32), default="running", index=True)
    answer: Mapped[str] = mapped_column(Text, default="")
    citations: Mapped[list[Any]] = mapped_column(JSON, default=list)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    halt_reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    steps: Mapped[int] = mapped_column(Integer, default=0)
    llm_calls: Mapped[int] = mapped_column(Integer, default=0)
    tokens: Mapped[int] = mapped_column(Integer, default=0)
    ms: Mapped[float] = mapped_column(Float, default=0.0)
    #: the wall time the run took (ms is its cost, cached calls counted at their original cost)
    wall_ms: Mapped[float | None] = mapped_column(Float, nullable=True)
    #: model calls served from the completion cache
    cached_calls: Mapped[int | None] = mapped_column(Integer, nullable=True, default=0)
    memory: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    pid: Mapped[int] = mapped_column(Integer, default=0)
    host: Mapped[str] = mapped_column(String(200), default="")
    #: who runs it for certain: host|boot_id|pid|process start ticks (flowkit.process)
    owner: Mapped[str | None] = mapped_column(String(300), nullable=True, default="")
    #: renewed while the run goes on; a running run whose lease passed was left behind
    lease_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    parent_run_id: Mapped[str | None] = mapped_column(String(32), nullable=True, index=True)
    parent_step: Mapped[int | None] = mapped_column(Integer, nullable=True)
    eval_id: Mapped[str | None] = mapped_column(String(32), nullable=True, index=True)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    ended_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class StepRow(Base):
    """One node visit of a run (see flowkit.trace.StepEvent)."""

    __tablename__ = "steps"
    __table_args__ = (UniqueConstraint("run_id", "idx"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    idx: Mapped[int] = mapped_column(Integer)
    node_id: Mapped[str] = mapped_column(String(64))
    operator: Mapped[str] = mapped_column(String(100))
    visit: Mapped[int] = mapped_column(Integer)
    branch: Mapped[str | None] = mapped_column(String(200), nullable=True)
    memory_before: Mapped[dict[str, Any]] = mapped_column(JSON)
    memory_after: Mapped[dict[str, Any]] = mapped_column(JSON)
    llm_calls: Mapped[list[Any]] = mapped_column(JSON, default=list)
    retrievals: Mapped[list[Any]] = mapped_column(JSON, default=list)
    tokens: Mapped[int] = mapped_column(Integer, default=0)
    ms: Mapped[float] = mapped_column(Float, default=0.0)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    started_at: Mapped[float] = mapped_column(Float, default=0.0)


class DatasetRow(Base):
    """A question set: questions with gold answers (and gold passage ids when known)."""

    __tablename__ = "datasets"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    source: Mapped[str] = mapped_column(Text, default="")
    kb: Mapped[str] = mapped_column(String(100), default="")
    questions: Mapped[list[Any]] = mapped_column(JSON, default=list)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class EvalRow(Base):
    """An evaluation: flows x dataset questions; its per-question results are runs with eval_id."""

    __tablename__ = "evals"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(String(200), default="")
    dataset: Mapped[str] = mapped_column(String(200))
    kb: Mapped[str] = mapped_column(String(100))
    flows: Mapped[list[Any]] = mapped_column(JSON, default=list)
    question_ids: Mapped[list[Any]] = mapped_column(JSON, default=list)
    status: Mapped[str] = mapped_column(String(32), default="running")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    #: how its runs went, one record a session that ran it differently from the one before:
    #: {"concurrency": N, "server_parallel": P, ...} (flowkit.eval.concurrent.Execution.record)
    execution: Mapped[list[Any] | None] = mapped_column(JSON, nullable=True, default=None)


class CompletionCacheRow(Base):
    """One cached deterministic model call (flowkit.runtime.completion_cache): the key is a sha256
    over everything its output depends on; `entry` holds the result and its original cost."""

    __tablename__ = "completion_cache"
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    entry: Mapped[dict[str, Any]] = mapped_column(JSON)
    size: Mapped[int] = mapped_column(Integer, default=0)
    hits: Mapped[int] = mapped_column(Integer, default=0)
    origin_run: Mapped[str] = mapped_column(String(32), default="")
    created_at: Mapped[float] = mapped_column(Float, default=0.0)
    last_used: Mapped[float] = mapped_column(Float, default=0.0, index=True)


class RunDebugRow(Base):
    """A debugged run's breakpoints, the trace side of its current pause (set while the run's
    status is `paused`: the step count and the memory edits not yet sent; the paused state is in
    LangGraph's checkpointer, see storage.debug) and the edits a user made to its memory."""

    __tablename__ = "run_debug"
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    breakpoints: Mapped[list[Any]] = mapped_column(JSON, default=list)
    pause: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    pauses: Mapped[int] = mapped_column(Integer, default=0)
    edits: Mapped[list[Any]] = mapped_column(JSON, default=list)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class GradeRow(Base):
    """A grader's verdict on one answer of an evaluation (flowkit.eval.graders): score, the model's
    words, the grader's model, and what grading cost (never part of the flow's cost)."""

    __tablename__ = "grades"
    __table_args__ = (UniqueConstraint("eval_id", "flow", "question_id", "grader", "model"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    eval_id: Mapped[str] = mapped_column(String(32), index=True)
    flow: Mapped[str] = mapped_column(String(300))
    question_id: Mapped[str] = mapped_column(String(200))
    grader: Mapped[str] = mapped_column(String(64))
    model: Mapped[str] = mapped_column(String(300))
    version: Mapped[str] = mapped_column(String(64), default="")
    score: Mapped[float | None] = mapped_column(Float, nullable=True)
    parsed: Mapped[int] = mapped_column(Integer, default=1)
    reason: Mapped[str] = mapped_column(Text, default="")
    detail: Mapped[list[Any]] = mapped_column(JSON, default=list)
    calls: Mapped[int] = mapped_column(Integer, default=0)
    cached_calls: Mapped[int] = mapped_column(Integer, default=0)
    tokens: Mapped[int] = mapped_column(Integer, default=0)
    ms: Mapped[float] = mapped_column(Float, default=0.0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class LabelRow(Base):
    """A person's label on one answer of an evaluation: `metric` (correctness, groundedness, ...)
    and `value` (1 right / supported, 0 wrong); the truth PPI corrects a grader with."""

    __tablename__ = "labels"
    __table_args__ = (UniqueConstraint("eval_id", "flow", "question_id", "metric"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    eval_id: Mapped[str] = mapped_column(String(32), index=True)
    flow: Mapped[str] = mapped_column(String(300))
    question_id: Mapped[str] = mapped_column(String(200))
    metric: Mapped[str] = mapped_column(String(64))
    value: Mapped[float] = mapped_column(Float)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
