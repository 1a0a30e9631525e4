from dices_cli.cli.launch import run

run()
