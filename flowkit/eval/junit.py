"""A gate's outcomes as a JUnit XML report, the file CI systems read (`flowkit eval --junit FILE`).

One <testsuite> per evaluation inside <testsuites>; one <testcase> per condition and flow, with
the flow as its classname and the condition as its name; a failed one holds a <failure> with the
outcome's line as its message, a skipped one a <skipped>. Counts (tests, failures, errors,
skipped) are on both levels. Written with xml.etree, so names and messages are escaped.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

from .gate import Outcome


def junit_tree(outcomes: Sequence[Outcome], suite: str) -> ET.ElementTree:
    """The JUnit document of `outcomes`, its one test suite named `suite`."""
    counts = {"tests": str(len(outcomes)),
              "failures": str(sum(o.status == "failed" for o in outcomes)),
              "errors": "0", "skipped": str(sum(o.status == "skipped" for o in outcomes))}
    root = ET.Element("testsuites", {"name": "flowkit gate", **counts})
    node = ET.SubElement(root, "testsuite", {"name": suite, **counts})
    for o in outcomes:
        case = ET.SubElement(node, "testcase", {"classname": o.flow, "name": o.condition.text})
        if o.status == "failed":
            failure = ET.SubElement(case, "failure", {"message": o.message, "type": "gate"})
            failure.text = o.message
        elif o.status == "skipped":
            ET.SubElement(case, "skipped", {"message": o.message})
        else:
            out = ET.SubElement(case, "system-out")
            out.text = o.message
    return ET.ElementTree(root)


def write_junit(path: Path, outcomes: Sequence[Outcome], suite: str) -> Path:
    """Write `outcomes` to `path` as JUnit XML (UTF-8, with the XML declaration)."""
    tree = junit_tree(outcomes, suite)
    ET.indent(tree)
    tree.write(path, encoding="utf-8", xml_declaration=True)
    return path
