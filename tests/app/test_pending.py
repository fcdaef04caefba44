"""studio/common/pending.py: a click waiting for a fragment's run is told from the fragment's own
timer (the Run page's answer stream ends for the first, never for the second)."""
from __future__ import annotations

from streamlit.proto.WidgetStates_pb2 import WidgetStates
from streamlit.runtime.scriptrunner_utils.script_requests import RerunData

from studio.common.pending import user_waiting, waits_for_user


def _states(clicked: bool) -> WidgetStates:
    states = WidgetStates()
    box = states.widgets.add()
    box.id, box.string_value = "question", "Who lit it?"
    button = states.widgets.add()
    button.id, button.trigger_value = "run_cancel_x", clicked
    return states


def test_the_fragment_timer_alone_waits_for_no_user() -> None:
    assert not waits_for_user(RerunData(fragment_id_queue=["live"], is_auto_rerun=True,
                                        widget_states=_states(False)))


def test_a_click_waits_whether_or_not_a_timer_tick_came_after_it() -> None:
    assert waits_for_user(RerunData(fragment_id_queue=["live"], is_auto_rerun=False,
                                    widget_states=_states(True)))
    assert waits_for_user(RerunData(fragment_id_queue=["live"], is_auto_rerun=True,
                                    widget_states=_states(True)))   # merged into the tick


def test_a_whole_page_rerun_waits_for_the_user() -> None:
    assert waits_for_user(RerunData(widget_states=_states(False)))


def test_outside_a_script_run_it_is_unknown() -> None:
    assert user_waiting() is None
