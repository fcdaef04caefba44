"""The sample knowledge base that ships with flowkit: a fictional archipelago written for this
project (articles.jsonl), and questions on it with their answers (questions.jsonl)."""
from __future__ import annotations

from pathlib import Path

DIR = Path(__file__).resolve().parent
ARTICLES = DIR / "articles.jsonl"
QUESTIONS = DIR / "questions.jsonl"
