"""What a rank runs and what a user submits: config, launchers, the rank job and the CLI."""
