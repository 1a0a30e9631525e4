"""DICES's CSV: parsing, cell checks, typed tables, the ingester, and the exports."""
