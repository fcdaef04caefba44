"""The run service: a Workspace that compiles, runs and forks flows and stores what happened, and
the `flowkit` command line built on it. It sits above `flowkit` (the library) and `storage` (which
only stores); neither of those imports it."""
