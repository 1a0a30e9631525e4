"""ProsocialDialog: reading and validating its JSON Lines files (`read`), the label rule
(`labels`), and the stored tables and their way back to JSON Lines (`tables`). The facts
(fields, enums, files) are declared in `dices_cli.families.prosocial`."""
