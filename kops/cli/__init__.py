"""The `kops` command: typer commands, one module per verb, rich rendering. The only package that prints."""
