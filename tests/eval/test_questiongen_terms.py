"""Questions that ask for a term a manual's sentence introduces (`questiongen.called`) and for the
release it dates a feature by (`questiongen.versions`). The sentences are made up for these tests
(a small key-value store's guide)."""
from __future__ import annotations

from flowkit.eval.questiongen import manual as M
from flowkit.eval.questiongen.called import called_fact
from flowkit.eval.questiongen.versions import version_fact


def qa(f) -> tuple[str, str] | None:
    return (f.question, f.answer) if f else None


def test_a_term_introduced_by_called_or_known_as_is_asked_in_its_place():
    assert qa(called_fact("A log segment without any live record is called a dead segment")) == (
        "A log segment without any live record is called what?", "dead segment")
    assert qa(called_fact('Old segments are merged in a background step called the "compaction" '
                          "when the store is idle")) == (
        "Old segments are merged in a background step called what when the store is idle?",
        "compaction")
    assert qa(called_fact('Every store keeps the settings in a hidden table named "kv_meta"')) == (
        "Every store keeps the settings in a hidden table named what?", "kv_meta")


def test_called_refusals():
    # leaning openers and pronouns
    assert called_fact("This is called a dead segment by most of the tools") is None
    assert called_fact("Such a segment is known as a dead segment in the log") is None
    # 'named' needs a quoted or code-like term
    assert called_fact("It is best to avoid mixing named and numbered keys in one call") is None
    assert called_fact("Each key is stored in a slot named after its first letter") is None
    # a term with another name beside it; a placeholder
    assert called_fact('The store supports a mode called "append-only" or "AO" for logs') is None
    assert called_fact("The export step writes the file called table-name to the folder") is None
    # too long to be a term
    assert called_fact("A segment is called a very old and mostly empty dead segment") is None


def test_one_version_is_asked_in_its_place():
    assert qa(version_fact("The compact_keys pragma first appeared in KVStore version 2.4.0")) == (
        "The compact_keys pragma first appeared in which version of KVStore?", "2.4.0")
    assert qa(version_fact("Beginning with version 1.9, snapshots can be read while a write "
                           "is open")) == (
        "Beginning with which version, snapshots can be read while a write is open?", "1.9")


def test_a_product_and_a_three_part_number_is_a_version_too():
    assert qa(version_fact("Since KVStore 2.4.1, snapshots can be read while a write is open")) == (
        "Since which version of KVStore, snapshots can be read while a write is open?", "2.4.1")
    # a two-part number after a name is not read as a version (a figure, a section)
    assert version_fact("The log format is shown in Figure 2.4 of the design notes here") is None


def test_version_refusals():
    assert version_fact("Keys moved from version 1.2 to version 2.0 of the on-disk format") is None
    assert version_fact("In other words, the log changed in KVStore version 2.4.0 entirely") is None
    assert version_fact("This pragma was added in KVStore version 2.4.0 for compatibility") is None
    assert version_fact("Added in version 2.4") is None


def test_both_rules_run_in_manual_facts_and_a_labelled_sentence_is_refused():
    text = ("Old segments are merged in a background step called the \"compaction\" when the store "
            "is idle. The compact_keys pragma first appeared in KVStore version 2.4.0.")
    got = {(f.relation, f.answer) for f in M.manual_facts(text)}
    assert got == {("term", "compaction"), ("version", "2.4.0")}
    assert M._run_together("Compatibility note: which version changed the log?")


def test_a_vague_default_and_a_numbered_label_are_not_asked():
    assert M.default_fact("The default settings for limits are normally quite large") is None
    assert M.definition_fact("Format 3 is the number of seconds since the store was created") is None
    assert M.definition_fact("A segment file is a file that holds one run of the log") is not None
