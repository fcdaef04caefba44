"""Question generation from a knowledge base: the rules that build candidates, each check with a
scripted model, seeds, resuming after a kill, and bad requests (nothing written)."""
from __future__ import annotations

import re

import pytest

from flowkit.errors import FlowkitError
from flowkit.eval.questiongen import candidates as C
from flowkit.eval.questiongen import facts as F
from flowkit.eval.questiongen.checks import Checker, matches, reader_prompt
from flowkit.eval.questiongen.generate import Request, generate
from flowkit.runtime.completion_cache import MemoryCompletionCache
from flowkit.testing import FakeLLM, HashEmbedder, MemoryKB
from flowkit.testing.fakes import FakeResources

# a made-up corpus (written for these tests): people with lifespans, films that name their
# director, institutions with a founding year
CORPUS = [
    {"id": "p1", "title": "Arno Tessaly", "text": "Arno Tessaly (March 3, 1921 – May 9, 1990) was "
     "a Norwegian film director. He directed eleven films in Oslo."},
    {"id": "p2", "title": "Berit Kalm", "text": "Berit Kalm (born 1948) is a Danish painter. She "
     "lives in Aarhus."},
    {"id": "p3", "title": "Cold Harbour Lights", "text": "Cold Harbour Lights is a 1958 drama film "
     "directed by Arno Tessaly. It was shot on the coast of Finnmark."},
    {"id": "p4", "title": "Dunmore Academy", "text": "The Dunmore Academy is a school of music. It "
     "was founded in 1867 by the organist Hal Breck."},
    {"id": "p5", "title": "Espen Library", "text": "The Espen Library is a public library. It was "
     "founded in 1902 in the town of Espen."},
    {"id": "p6", "title": "Gerd Ulvik", "text": "Gerd Ulvik (April 2, 1931 – June 1, 2001) was a "
     "Norwegian novelist. Her first novel appeared in 1955."},
    {"id": "p7", "title": "Frost Over Vinter", "text": "Frost Over Vinter is a 1962 film directed "
     "by Gerd Ulvik. It was filmed in Bergen."},
    {"id": "p8", "title": "Harlow Museum", "text": "The Harlow Museum is a museum of clocks. It "
     "was founded in 1890 by the clockmaker Ida Fenn."},
    {"id": "p9", "title": "Iver Hall", "text": "The Iver Hall is a concert hall. It was founded "
     "in 1911 near the harbour."},
]


def passages() -> list[C.Passage]:
    return [C.Passage(d["id"] + "#0", d["id"], d["title"], d["text"]) for d in CORPUS]


def reader(prompt: str) -> str:
    """A model that reads well: answers from the passages shown, knows nothing closed-book."""
    question = re.search(r"Question: (.*?)\nAnswer:", prompt, re.S).group(1)
    shown = prompt.split("Question:")[0]
    if "[1]" not in shown:
        return "I do not know"
    if "born first" in question:
        years = {name: int(y) for name, y in re.findall(r"\] ([^:\n]+): [^\n]*?(\d{4})", shown)}
        if len(years) < 2:
            return "unknown"
        return min(years, key=years.get)
    if "director of Cold Harbour Lights" in question:
        return "1921" if "Arno Tessaly (" in shown and "Harbour Lights:" in shown else "unknown"
    if "director of Frost Over Vinter" in question:
        return "1931" if "Gerd Ulvik (" in shown and "Vinter:" in shown else "unknown"
    if "founded first" in question:
        years = {name: int(y) for name, y in re.findall(r"\] ([^:\n]+): .*?founded in (\d{4})", shown)}
        return ("the " + min(years, key=years.get)) if len(years) == 2 else "unknown"
    for d in CORPUS:
        if d["title"] in question and d["title"] in shown:
            m = re.search(r"\b(1[89]\d\d)\b", d["text"])
            return m.group(1) if m else d["text"].split()[0]
    return "unknown"


def resources(llm: FakeLLM | None = None, docs: list[dict] | None = None) -> FakeResources:
    return FakeResources(llm or FakeLLM([(r"Answer:\s*$", reader)]),
                         {"kb": MemoryKB("kb", docs if docs is not None else CORPUS)},
                         embedder=HashEmbedder())


# ---- the rules -----------------------------------------------------------------------------
def test_facts_read_off_passages():
    assert F.birth_year("Arno Tessaly", CORPUS[0]["text"]) == "1921"
    assert F.birth_year("Berit Kalm", CORPUS[1]["text"]) == "1948"
    assert F.birth_year("Cold Harbour Lights", CORPUS[2]["text"]) is None      # a film's year
    assert F.founding(CORPUS[3]["text"], "Dunmore Academy") == ("founded", "1867")
    assert F.nationality(CORPUS[0]["text"], "Arno Tessaly") == "Norwegian"
    # a chunk from the middle of a document: its lifespan-like brackets are not a birth
    mid = "the Carolina 500 (1967–1985), and the Goodwrench 500 were held there."
    assert F.birth_year("Subway 400", mid) is None
    assert F.founding("Although Azerbaijan was a state, the ministry was established in 1918.",
                      "List of diplomatic missions of Azerbaijan") is None
    assert F.subject("Dunmore Academy", CORPUS[3]["text"]) == "the Dunmore Academy"
    found = F.single_facts("Arno Tessaly", CORPUS[0]["text"])
    assert found[0].question == "In what year was Arno Tessaly born?" and found[0].answer == "1921"
    # 'He directed eleven films' becomes a question about the title, not about 'he'
    counts = [f for f in found if f.relation.startswith("count")]
    assert counts and counts[0].question.startswith("Arno Tessaly directed how many films")
    assert counts[0].answer == "11"
    assert F.answer_in_question("Who lives in Aarhus?", "Aarhus")
    assert not F.answer_in_question("Where does Berit Kalm live?", "Aarhus")


def test_candidates_of_each_kind():
    ps = C.order(passages(), 0)
    bridges = list(C.bridges(ps, 0))
    assert {c.question for c in bridges} >= {"In what year was the director of Cold Harbour "
                                             "Lights born?"}
    b = next(c for c in bridges if "Cold Harbour" in c.question)
    assert b.answer == "1921" and b.doc_ids == ["p3", "p1"]
    comps = list(C.comparisons(ps, 0))
    born = [c for c in comps if c.relation == "born first"]
    assert born and all(c.answer in c.question for c in comps if c.relation != "same nationality")
    founded = [c for c in comps if c.relation == "founded first"]
    year = {"Dunmore Academy": 1867, "Espen Library": 1902, "Harlow Museum": 1890, "Iver Hall": 1911}
    assert len(founded) == 2 and all(f"the {p.name}" in c.question for c in founded for p in c.passages)
    for c in founded:
        assert c.answer == min((p.name for p in c.passages), key=year.get)
    singles = list(C.singles(ps))
    assert len(singles) >= 5 and all(len(c.passages) == 1 for c in singles)


def test_seeded_order_covers_the_whole_corpus():
    many = [C.Passage(f"d{i:04d}#0", f"d{i:04d}", f"T{i}", "x") for i in range(1000)]
    first = C.order(many, 1)[:50]
    assert max(int(p.doc_id[1:]) for p in first) > 500         # not the head of the corpus
    assert C.order(list(reversed(many)), 1) == C.order(many, 1)  # store order does not matter
    assert C.order(many, 2) != C.order(many, 1)


# ---- each check refuses what it should --------------------------------------------------------
def _cand(kind: str = "single", q: str = "In what year was Berit Kalm born?", a: str = "1948",
          ps: tuple = ()) -> C.Candidate:
    return C.Candidate(q, a, kind, ps or (passages()[1],), "born")


def test_round_trip_drops_what_the_model_cannot_read_back():
    assert Checker(lambda p: "1950").check(_cand()) == "round_trip"
    assert Checker(lambda p: "" ).check(_cand()) == "round_trip"


def test_closed_book_drops_what_the_model_knows_without_passages():
    assert Checker(lambda p: "1948").check(_cand()) == "closed_book"
    ok = Checker(lambda p: "1948" if "[1]" in p else "I do not know")
    assert ok.check(_cand()) is None
    assert ok.last_answers == {"with_passages": "1948", "closed_book": "I do not know"}


def test_one_passage_drops_multi_hop_answered_from_either_alone():
    ps = (passages()[2], passages()[0])
    c = _cand("bridge", "In what year was the director of Cold Harbour Lights born?", "1921", ps)
    # answers with any passage shown, so also with one: not multi-hop
    assert Checker(lambda p: "1921" if "[1]" in p else "no").check(c) == "one_passage"
    # needs both
    assert Checker(lambda p: "1921" if "[2]" in p else "no").check(c) is None


def test_answer_in_question_and_near_duplicates():
    assert Checker(lambda p: "x").check(_cand(q="Is 1948 the year Berit Kalm was born?")) == \
        "answer_in_question"
    model = lambda p: "1948" if "[1]" in p else "no"            # noqa: E731
    checker = Checker(model, HashEmbedder().embed)
    assert checker.check(_cand()) is None
    assert checker.check(_cand(q="In what year was Berit Kalm born ?")) == "near_duplicate"


def test_matching_is_containment_or_f1():
    assert matches("March 3, 1921", "1921") and matches("the Dunmore Academy", "Dunmore Academy")
    assert not matches("1922", "1921") and not matches("", "1921")


def test_reader_prompt_is_the_answer_operators():
    p = reader_prompt("Q?", passages()[:2])
    assert p.startswith("Answer the question using only the passages") and "[2] Berit Kalm:" in p
    assert p.endswith("Question: Q?\nAnswer:")
    assert "passages" not in reader_prompt("Q?", ()).split("\n")[0]


# ---- whole generations ----------------------------------------------------------------------
def test_generation_keeps_checked_questions_with_their_passages():
    res = resources()
    out = generate(res, "kb", Request(n=6, seed=0), cache=MemoryCompletionCache())
    assert out.questions, out.progress.line()
    kinds = {q["type"] for q in out.questions}
    assert "bridge" in kinds and "comparison" in kinds
    for q in out.questions:
        assert q["answers"] and q["supporting_doc_ids"] and q["origin"]["seed"] == 0
        assert q["origin"]["prompt_version"] and q["origin"]["model"] == "fake-llm"
    # each passage supports at most one kept question: any split shares no passage
    used = [d for q in out.questions for d in q["supporting_doc_ids"]]
    assert len(used) == len(set(used))
    p = out.progress
    assert p.kept == len(out.questions) and p.tried == p.kept + sum(p.dropped.values())
    assert p.cost.computed > 0 and p.cost.cached == 0


def test_a_seed_gives_the_same_set_twice_and_from_the_cache():
    cache = MemoryCompletionCache()
    a = generate(resources(), "kb", Request(n=5, seed=3), cache=cache)
    b = generate(resources(), "kb", Request(n=5, seed=3), cache=cache)
    assert a.questions == b.questions
    assert b.progress.cost.computed == 0 and b.progress.cost.cached == a.progress.cost.computed
    fresh = generate(resources(), "kb", Request(n=5, seed=3), cache=MemoryCompletionCache())
    assert fresh.questions == a.questions                      # the cache does not change it


def test_a_killed_generation_resumes_from_the_cache():
    whole = generate(resources(), "kb", Request(n=6, seed=1), cache=MemoryCompletionCache())
    cache = MemoryCompletionCache()
    seen = []
    with pytest.raises(FlowkitError, match="run it again to resume"):
        generate(resources(), "kb", Request(n=6, seed=1), cache=cache,
                 on_progress=seen.append, should_stop=lambda: len(seen) >= 3)
    done_before = seen[-1].cost.computed
    assert 0 < done_before < whole.progress.cost.computed
    again = generate(resources(), "kb", Request(n=6, seed=1), cache=cache)
    assert again.questions == whole.questions
    assert again.progress.cost.cached == done_before
    assert again.progress.cost.computed == whole.progress.cost.computed - done_before


def test_bad_requests_are_refused_naming_the_field():
    with pytest.raises(FlowkitError, match="n: the number of questions must be at least 1"):
        generate(resources(), "kb", Request(n=0), cache=None)
    with pytest.raises(FlowkitError, match="kinds: unknown kind 'trivia'"):
        generate(resources(), "kb", Request(n=2, kinds=("trivia",)), cache=None)
    one = [CORPUS[0]]
    with pytest.raises(FlowkitError, match="need two passages from different documents"):
        generate(resources(docs=one), "kb", Request(n=2, kinds=("bridge",)), cache=None)
    with pytest.raises(FlowkitError, match="has no passages"):
        generate(resources(docs=[]), "kb", Request(n=2, kinds=("single",)), cache=None)
    llm = FakeLLM([(r"Answer:\s*$", reader)])
    generate(resources(llm, docs=one), "kb", Request(n=1, kinds=("single",)), cache=None)
    assert llm.prompts                                          # single-hop works from one


def test_caps_keep_one_kind_from_crowding_out_the_others():
    assert Request(n=10).caps() == {"single": 8, "bridge": 8, "comparison": 8}
    assert Request(n=3, kinds=("single",)).caps() == {"single": 3}
    assert Request(n=100, kinds=("single", "bridge")).caps() == {"single": 100, "bridge": 100}


def test_a_bridge_passage_without_the_answer_is_not_asked_alone():
    ps = (passages()[2], passages()[0])            # the film (no 1921), the director (1921)
    c = _cand("bridge", "In what year was the director of Cold Harbour Lights born?", "1921", ps)
    asked: list[str] = []

    def model(p: str) -> str:
        asked.append(p)
        return "1921" if "[2]" in p else "no"
    assert Checker(model).check(c) is None
    assert len(asked) == 3                         # both passages, closed-book, the director alone


def test_sentences_that_do_not_stand_alone_give_no_question():
    # 'This ...' and 'The film ...' lean on a sentence before; a chunk can start mid-sentence
    text = ("The Marvelous Land of Oz is a novel by Frank Baum. This and the next 34 Oz books "
            "were illustrated by John Neill. The film runs for 55 minutes in Leeds.")
    qs = [f.question for f in F.single_facts("The Marvelous Land of Oz", text)]
    assert not any(q.startswith(("This", "The film")) for q in qs)
    assert F.single_facts("Nisekoi", "inspired a novel series, written by Hajime Tanaka "
                                      "and published by Shueisha.") == []


def test_a_choice_is_known_closed_book_only_in_both_orders():
    ps = (passages()[3], passages()[4])
    c = C.Candidate("Which was founded first, the Dunmore Academy or the Espen Library?",
                    "Dunmore Academy", "comparison", ps, "founded first",
                    {"swapped": "Which was founded first, the Espen Library or the Dunmore Academy?"})

    def first_option(p: str) -> str:
        """Reads well with both passages; without them names the first option it is offered."""
        q = p.rsplit("Question: ", 1)[1]
        if p.count("] ") >= 2 and "[2]" in p:
            return "the Dunmore Academy"
        return q.split(", ", 1)[1].split(" or ")[0]
    # the first order's closed-book guess is right by position only: kept
    assert Checker(first_option).check(c) is None
    # a model that knows the answer in either order: dropped
    knows = lambda p: "Dunmore Academy"           # noqa: E731
    assert Checker(knows).check(c) == "closed_book"


def test_a_choice_read_back_by_position_only_is_dropped():
    ps = (passages()[3], passages()[4])
    c = C.Candidate("Which was founded first, the Dunmore Academy or the Espen Library?",
                    "Dunmore Academy", "comparison", ps, "founded first",
                    {"swapped": "Which was founded first, the Espen Library or the Dunmore Academy?"})
    position = lambda p: p.rsplit("Question: ", 1)[1].split(", ", 1)[1].split(" or ")[0]  # noqa: E731
    assert Checker(position).check(c) == "round_trip"


def test_kept_choices_are_asked_in_a_seeded_order():
    from flowkit.eval.questiongen.generate import _ordered
    cands = [C.Candidate(f"Who was born first, A{i} or B{i}?", f"A{i}", "comparison", (),
                         "born first", {"swapped": f"Who was born first, B{i} or A{i}?"})
             for i in range(200)]
    first = sum(_ordered(c, 0).split(", ")[1].startswith("A") for c in cands)
    assert 70 < first < 130                        # about half keep the answer first
    assert [_ordered(c, 0) for c in cands] == [_ordered(c, 0) for c in cands]
    assert _ordered(C.Candidate("q?", "a", "single", (), "year"), 0) == "q?"


def test_sentences_leaning_on_another_are_refused():
    kd = ("The key demographic is a term in broadcasting. For example, the key demographic for "
          "reality television is women aged 18 to 34 in 2004.")
    assert not any(f.question.startswith("For example")
                   for f in F.single_facts("Key demographic", kd))
    az = ("Although Azerbaijan began relations early, the first diplomatic body was founded in "
          "1918. The first diplomatic body - the Ministry - was established in 1918.")
    assert F.founding(az, "List of diplomatic missions of Azerbaijan") is None
    tv = "Blue Acres is a sitcom. It's about three brothers living together in Leeds."
    assert not any("brothers" in f.question for f in F.single_facts("Blue Acres", tv))
