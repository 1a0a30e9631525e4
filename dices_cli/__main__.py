from dices_cli.main import run

run()
