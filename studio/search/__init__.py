"""The Search page (pages/search.py): define a search space, start a budgeted search in the
background, watch the candidates race, and open any candidate in the Editor or Compare."""
