"""The Flows page (pages/flows.py): the flow library's screens: new flow and import
(create_panel), the saved flows with their actions (list_panel), a flow's versions (versions_panel)."""
