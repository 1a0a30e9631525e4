"""What each command that reads data does between parsing its arguments and rendering its
result, as one function each: the command line (`dices_cli.cli.commands`) and the Python API
(`dices_cli.api`) both call these, so their results are the same rows.

Arguments come typed and are checked here as on the command line; messages name parameters
as `Option`s, which the command line says as flags and the API by their names. What is said
to the user on the way (a note, the raters seen) goes to the caller's `tell`.
"""
