"""What several pages share: the workspace, the job queue (and its jobs' common helpers), session
state, the shell and sidebar, safe text (inert), the access gate, diffs and the graph layout."""
