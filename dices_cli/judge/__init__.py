"""Running an LLM judge or a safety classifier over a dataset (`dices judge`).

`prompts` reads the declared prompt files and their answers, `client` talks to
OpenAI-compatible endpoints, the cache (`dices_cli.store.judge_cache`) keeps every request in the
data directory, and `run` plans a run and turns its answers into the predictions `dices
evaluate` reads.
"""
