from dices_cli.cli.main import run

run()
