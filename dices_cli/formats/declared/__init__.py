"""Reading, checking and storing a dataset declared as data (`dices_cli.families.declaration`)."""
