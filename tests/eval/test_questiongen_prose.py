"""Questions read off ordinary prose (`flowkit.eval.questiongen.prose`): what a handbook or a
mid-article chunk gives, and what it must never give. The texts are made up for the tests."""
from __future__ import annotations

from flowkit.eval.questiongen import candidates as C
from flowkit.eval.questiongen import facts as F
from flowkit.eval.questiongen import prose as P


def asked(sentence: str, context: str = "") -> dict[str, str]:
    return {f.question: f.answer for f in P.prose_facts(sentence, context)}


def test_a_named_subject_becomes_who_or_what():
    got = asked("The Velder Protocol is the method the harbour pilots use to bring ships "
                "in at night.")
    assert got == {"What is the method the harbour pilots use to bring ships in at night?":
                   "The Velder Protocol"}
    got = asked("Oda Lenning led the first survey of the northern reefs in the spring.")
    assert got == {"Who led the first survey of the northern reefs in the spring?": "Oda Lenning"}
    # a person by what the sentence says of them
    got = asked("Tomas Arvell was an engineer born in a small village near the western pass.")
    assert list(got) == ["Who was an engineer born in a small village near the western pass?"]


def test_a_definition_asks_for_the_term():
    got = asked("A tide gauge is a device that records the height of the sea at one place "
                "over time.")
    assert got == {"What is a device that records the height of the sea at one place over "
                   "time?": "tide gauge"}
    got = asked("Ballast tanks are the compartments a vessel floods to sit lower in the water.")
    assert got["What are the compartments a vessel floods to sit lower in the water?"] == \
        "Ballast tanks"


def test_centuries():
    got = asked("The guild of net makers met in the old hall in the 14th and 15th centuries "
                "before the move to the quay.")
    assert got["The guild of net makers met in the old hall in what centuries before the move "
               "to the quay?"] == "14th and 15th centuries"
    # 'it' points outside the sentence: nothing is asked of it
    assert asked("The guild met in the old hall in the 14th century before it moved away.") == {}


def test_subjects_that_lean_on_another_sentence_give_nothing():
    for s in ("The film runs for fifty minutes and was shot in the hills near the coast.",
              "This method is the one the pilots use to bring ships in at night.",
              "They were the first to chart the northern reefs in the spring.",
              "Some sailors refused the new charts for many years after the survey.",
              "However, the harbour master was the only one who kept the old logbook.",
              "Having crossed the pass, the party camped beside the frozen lake for a week.",
              "Closely related fields are tidal modelling and the study of coastal erosion.",
              "The objective is to decide whether a ship may enter the harbour at night."):
        assert asked(s) == {}, s


def test_run_on_and_spliced_sentences_give_nothing():
    assert asked("Brenmoor is the largest island, and Little Tarn is the smallest of the "
                 "group.") == {}
    assert asked("Halvin refused, so the captain landed his crew on the beach at dawn.") == {}
    long_rest = "Kestrel Bay was " + " ".join(["very"] * 30) + " quiet."
    assert asked(long_rest) == {}


def test_a_sentence_start_word_is_a_name_only_if_the_passage_capitalizes_it_elsewhere():
    s = "Entry is free on the first Sunday of every month for every visitor."
    assert asked(s, "The museum opened in spring. " + s) == {}
    s2 = "Marrowby is the busiest port on the east coast of the northern island."
    ctx = "Ferries leave from Marrowby daily. " + s2
    assert asked(s2, ctx) == {"What is the busiest port on the east coast of the northern "
                              "island?": "Marrowby"}


def test_the_answer_is_never_written_in_the_question():
    facts = P.passage_facts("Kestrel Bay", "Kestrel Bay is the bay that Kestrel Bay pilots "
                                           "guard from the northern storms each winter.")
    assert all(not F.answer_in_question(f.question, f.answer) for f in facts)


def test_singles_come_in_rounds_so_a_small_base_gives_more_than_one_a_passage():
    text = ("Oda Lenning led the first survey of the northern reefs in the spring. "
            "A tide gauge is a device that records the height of the sea at one place over "
            "time.")
    ps = [C.Passage(f"d{i}#0", f"d{i}", f"Survey {i}", text) for i in range(3)]
    got = list(C.singles(ps))
    assert [c.passages[0].chunk_id for c in got] == ["d0#0", "d1#0", "d2#0"] * 2
    assert len(list(C.singles(ps, per_passage=1))) == 3
