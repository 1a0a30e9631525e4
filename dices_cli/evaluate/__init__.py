"""Scoring a model's predictions (a classifier, an LLM judge) against DICES.

`predictions` reads and validates a predictions file.
"""
