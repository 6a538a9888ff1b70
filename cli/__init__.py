"""streamtool's command-line interface (typer commands, rendering, error handling)."""
