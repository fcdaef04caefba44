"""Knowledge-graph index: (subject, relation, object) triples per chunk, searched by entity."""
from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import networkx as nx
from pydantic import Field

from ...context import ModelLLM, Resources, RunContext
from ...contract import operator
from ...errors import ResourceError
from ...memory import Doc, MemoryView
from ...text import ENTITY_STOPWORDS
from .._text import fill
from .chunking import FixedChunker
from .triples import norm, parse_triples, pattern_triples

if TYPE_CHECKING:
    from ...runtime.kb import KnowledgeBase

TRIPLE_PROMPT = ("List the facts in the text, one per line, as: subject | relation | object\n\n"
                 "Text: Anna Berg founded the Lund Bakery in 1902.\nFacts:\n"
                 "Anna Berg | founded | Lund Bakery\nLund Bakery | founded in | 1902\n\n"
                 "Text: {text}\nFacts:\n")
GRAPH_FILE = "graph.json"

def _edge_weight(data: Mapping[str, Any]) -> float:
    """Model triples count most, pattern relations less, bare co-mentions least."""
    if data.get("via") == "llm":
        return 1.0
    return 0.4 if data.get("relation") in ("mentions", "mentioned with") else 0.7


def load_graph(kb_dir: Path | str) -> nx.MultiDiGraph | None:
    """The knowledge base's graph (nodes: entities with a `label`; edges: `relation`, `chunk_id`,
    `doc_id`, `via`), or None when it has none. For the studio to draw."""
    path = Path(kb_dir) / GRAPH_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return nx.node_link_graph(data, directed=True, multigraph=True, edges="links")
    except (json.JSONDecodeError, KeyError, TypeError) as err:
        raise ResourceError(f"{path}: not a node-link graph ({err}); ingest again") from None


def save_graph(graph: nx.MultiDiGraph, kb_dir: Path | str) -> Path:
    path = Path(kb_dir) / GRAPH_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(nx.node_link_data(graph, edges="links")), encoding="utf-8")
    tmp.replace(path)
    return path


@operator("indexing.knowledge_graph")
class KnowledgeGraph(FixedChunker):
    """Knowledge-graph index: extract (subject, relation, object) triples from every chunk, then
    answer by walking from the question's entities to the chunks that state their relations.

    Graph indexing from the Modular RAG survey (Gao et al., 2024), in the style of GraphRAG
    (Edge et al., 2024) and KG-augmented retrieval. At ingest, after the chunks (cut like
    `indexing.chunk_fixed`) are stored, the LLM lists "A | relation | B" facts per chunk (kept
    only when both entities occur in the chunk) and/or a pattern extractor links consecutive
    named entities; the graph is saved as node-link JSON (graph.json) with the chunk id on every
    edge. In a flow it finds graph entities named in the question, takes their neighbourhood
    (`hops` 1 or 2), writes the chunks behind those edges as documents (ranked by how many and how
    close their edges are) and the triples as evidence.
    """

    class Params(FixedChunker.Params):
        size: int = Field(150, ge=10, le=4000, description="Words per chunk")
        overlap: int = Field(0, ge=0, le=2000, description="Words shared with the previous chunk")
        extraction: Literal["llm", "pattern", "both"] = Field(
            "both", description="Triples from the LLM, from named-entity patterns (no model), or both")
        prompt: str = Field(TRIPLE_PROMPT, min_length=10, description="Extraction template with a "
                            "{text} slot (plain replacement)")
        triple_tokens: int = Field(40, ge=8, le=512, description="Longest extraction reply in tokens")
        chunk_chars: int = Field(600, ge=100, le=8000, description="Characters of a chunk shown "
                                 "to the extractor")
        hops: int = Field(1, ge=1, le=2, description="Neighbourhood radius around the question's "
                          "entities")
        max_entities: int = Field(4, ge=1, le=20, description="Question entities used as seeds")
        top_k: int = Field(4, ge=1, le=50, description="Linked chunks written as documents")
        max_triples: int = Field(12, ge=0, le=200, description="Triples written as evidence")
        fallback: Literal["dense", "none"] = Field(
            "dense", description="When no entity of the question is in the graph: dense search, "
                                 "or no documents")

    params: KnowledgeGraph.Params   # the fixed-size params plus this chunker's own

    reads = ("question",)
    optional_reads = ("evidence",)
    writes = ("documents", "evidence")

    def extract(self, llm: ModelLLM | None, text: str,
                title: str) -> list[tuple[str, str, str, str]]:
        """(subject, relation, object, via) triples of one chunk."""
        p = self.params
        out: list[tuple[str, str, str, str]] = []
        if p.extraction in ("llm", "both") and llm is not None:
            reply = llm.complete(fill(p.prompt, "params.prompt", text=text[: p.chunk_chars]),
                                 max_tokens=p.triple_tokens, stop=["\n\n", "Text:"])
            out += [(*t, "llm") for t in parse_triples(reply.text, source=text)]
        if p.extraction in ("pattern", "both"):
            seen = {(norm(s), norm(o)) for s, _, o, _ in out}
            out += [(*t, "pattern") for t in pattern_triples(text, title)
                    if (norm(t[0]), norm(t[2])) not in seen]
        return out

    def after_ingest(self, kb: KnowledgeBase, resources: Resources,
                     documents: list[dict[str, Any]]) -> None:
        """Extract triples from every chunk and save the graph as kb.dir/graph.json."""
        graph = load_graph(kb.dir) or nx.MultiDiGraph()
        llm = resources.llm if self.params.extraction != "pattern" else None
        for c in self.chunk(documents):
            for s, r, o, via in self.extract(llm, c.text, str(c.meta.get("title") or "")):
                for name in (s, o):
                    key = norm(name)
                    if key not in graph:
                        graph.add_node(key, label=name)
                graph.add_edge(norm(s), norm(o), key=f"{r}@{c.id}", relation=r, chunk_id=c.id,
                               doc_id=str(c.meta.get("doc_id", "")), via=via)
        save_graph(graph, kb.dir)

    def seeds(self, graph: nx.MultiDiGraph, question: str) -> list[str]:
        """Graph nodes named in the question (whole-word match), else those sharing its words."""
        q = f" {norm(question)} "
        hits = [n for n in graph.nodes if len(n) >= 3 and f" {n} " in q]
        hits = [n for n in hits if not any(n != m and f" {n} " in f" {m} " for m in hits)]
        if not hits:
            words = {w for w in q.split() if len(w) > 3 and w not in ENTITY_STOPWORDS}
            scored = [(len(words & set(n.split())) / len(n.split()), graph.degree(n), n)
                      for n in graph.nodes if words & set(n.split())]
            hits = [n for _, _, n in sorted(scored, key=lambda t: (-t[0], -t[1], t[2]))]
        return sorted(hits, key=lambda n: (-len(n), n))[: self.params.max_entities]

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        p = self.params
        question = str(memory["question"])
        kb_dir = ctx.kb.dir
        graph = load_graph(kb_dir) if kb_dir is not None else None
        if graph is None:
            raise ResourceError(f"knowledge base '{ctx.kb_name}' has no graph; ingest it with the "
                                "indexing.knowledge_graph chunker")
        evidence = list(memory.get("evidence") or [])
        seeds = self.seeds(graph, question)
        if not seeds:
            docs = ctx.kb.dense(question, p.top_k) if p.fallback == "dense" else []
            ctx.record_retrieval(question, "graph:fallback-dense", docs)
            return {"documents": docs, "evidence": evidence}
        undirected = graph.to_undirected(as_view=True)
        dist: dict[str, int] = {}
        for s in seeds:
            for node, d in nx.single_source_shortest_path_length(undirected, s, cutoff=p.hops).items():
                dist[node] = min(d, dist.get(node, d))
        edges: list[tuple[float, str, str, dict[str, Any]]] = []
        for u, v, data in graph.edges(data=True):
            d = min(dist.get(u, p.hops), dist.get(v, p.hops))
            if d < p.hops:
                weight = _edge_weight(data) / (1 + d)
                edges.append((weight, u, v, data))
        edges.sort(key=lambda e: -e[0])
        chunk_score: dict[str, float] = {}
        for weight, _, _, data in edges:
            cid = str(data.get("chunk_id") or "")
            if cid:
                chunk_score[cid] = chunk_score.get(cid, 0.0) + weight
        ids = sorted(chunk_score, key=lambda c: -chunk_score[c])[: p.top_k]
        found = {d["id"]: d for d in ctx.kb.by_ids(ids)}
        docs = [Doc(**{**found[c], "score": round(chunk_score[c], 4)}) for c in ids if c in found]
        ctx.record_retrieval(question, "graph", docs)
        label = nx.get_node_attributes(graph, "label")
        triples = [f"{label.get(u, u)} | {data.get('relation', '')} | {label.get(v, v)}"
                   for _, u, v, data in edges]
        return {"documents": docs, "evidence": [*evidence, *list(dict.fromkeys(triples))[: p.max_triples]]}
