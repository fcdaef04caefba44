"""The Compare page: an evaluation set up and submitted, its report, charts, the questions the
flows disagree on, traces side by side, and variant columns."""
